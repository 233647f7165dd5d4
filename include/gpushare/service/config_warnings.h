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

#include "gpushare/kube/node_info.h"

namespace gpushare::service {

struct ConfigWarning {
  // The `kind` label of gpushare_config_warnings.
  static constexpr std::string_view kUnknownKey = "unknown_key";  // a key the object may not have
  static constexpr std::string_view kBadValue = "bad_value";      // a value that is not usable
  // A DRA object the model cannot use (sync/dra_sync.h); in /inspect, not in the gauge.
  static constexpr std::string_view kDraObject = "dra_object";

  std::string object;  // namespace/name
  std::string kind;
  std::string key;
  std::string value;
  std::string message;  // a sentence naming the object, key and value, and what was done
  std::string node;     // the node the object is about ("" if none): /inspect/{node} shows it

  friend bool operator==(const ConfigWarning&, const ConfigWarning&) = default;
};

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
