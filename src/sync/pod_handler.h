#pragma once
// ClusterSync's handler of the pods reflector (private to src/sync): pods into the model through
// the reservation ledger, and into the pod directory bind looks pods up in. Called on the
// reflector's thread only.

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "gpushare/apiclient/reflector.h"
#include "gpushare/kube/pod_info.h"
#include "gpushare/sync/cluster_sync.h"

namespace gpushare::sync {

class ClusterSync::PodHandler final : public apiclient::ReflectorHandler {
 public:
  explicit PodHandler(ClusterSync& owner) : owner_(owner) {}

  void on_list_begin() override;
  // Items go straight into the next pods' directory, not through a staging vector: during a
  // relist the model and the directory in use are held as well, so the list is held once.
  void on_list_item(const json::Value& item) override;
  // The list replaces the model's pods and the directory; a reservation whose pod the list
  // lacks is read back, not dropped (the list may be older than our bind).
  void on_replace(const std::string& rv) override;
  void on_event(apiclient::WatchEventType type, const json::Value& object) override;

 private:
  // The pod, or nullopt (counted and logged) when the object is unusable or has no UID.
  std::optional<kube::PodInfo> parse(const json::Value& object);

  ClusterSync& owner_;
  // The list in progress, by pod key, and items whose key came again.
  std::map<std::string, kube::PodInfo, std::less<>> staged_;
  std::vector<kube::PodInfo> shadowed_;
};

}  // namespace gpushare::sync
