#pragma once
// Mistakes found in the objects the extender reads (unhealthy-gpu-<node> ConfigMaps here; DRA
// objects come from sync/dra_sync.h),
// kept while they stand, so that /inspect, the web view and /metrics can show them and not
// only a log line that scrolls away. Thread-safe.

#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "gpushare/inspect/document.h"
#include "gpushare/kube/node_info.h"

namespace gpushare::service {

// A mistake in an object, as /inspect's configWarnings lists it (inspect/document.h).
using ConfigWarning = inspect::ConfigWarning;

// What is wrong with a parsed unhealthy-gpu ConfigMap: keys other than data.gpus, and entries
// of data.gpus that are not GPU indices. Empty when it is fine.
std::vector<ConfigWarning> unhealthy_configmap_warnings(const kube::UnhealthyGpus& parsed);

class ConfigWarnings {
 public:
  // Replaces what is known about `object` (none: the object is fine). Returns true when that
  // changed, so callers log a warning once rather than on every relist.
  bool set(const std::string& object, std::vector<ConfigWarning> warnings);
  // Forgets every object not in `objects` (after a full list); returns how many were dropped.
  std::size_t retain_only(const std::vector<std::string>& objects);

  std::vector<ConfigWarning> all() const;  // by object, then in the order found
  // How many warnings of each kind stand; unknown_key and bad_value always present, 0 included.
  std::map<std::string, std::size_t> count_by_kind() const;

 private:
  mutable std::mutex mutex_;
  std::map<std::string, std::vector<ConfigWarning>, std::less<>> by_object_;
};

}  // namespace gpushare::service
