#pragma once
// ClusterSync's handler of the unhealthy-gpu ConfigMaps reflector (private to src/sync): the
// GPUs each ConfigMap marks unhealthy into the model, and the ConfigMaps' mistakes into the
// configuration warnings. Called on the reflector's thread only.

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "gpushare/apiclient/reflector.h"
#include "gpushare/kube/node_info.h"
#include "gpushare/sync/cluster_sync.h"

namespace gpushare::sync {

class ClusterSync::ConfigMapHandler final : public apiclient::ReflectorHandler {
 public:
  explicit ConfigMapHandler(ClusterSync& owner) : owner_(owner) {}

  void on_list_begin() override;
  void on_list_item(const json::Value& item) override;
  // The list replaces the marks: nodes whose ConfigMap is gone have every GPU healthy again.
  void on_replace(const std::string& rv) override;
  void on_event(apiclient::WatchEventType type, const json::Value& object) override;

 private:
  // The ConfigMap's marks, or nullopt (counted and logged) when it is unusable.
  std::optional<kube::UnhealthyGpus> parse(const json::Value& object);
  // Records the ConfigMap's mistakes (none once deleted); logs them when they change, not on
  // every relist.
  void note(const kube::UnhealthyGpus& parsed, bool deleted);
  void publish_warnings();

  ClusterSync& owner_;
  std::set<std::string> marked_;                    // nodes with an unhealthy-gpu ConfigMap
  std::map<std::string, std::vector<int>> staged_;  // the list in progress
  std::vector<std::string> listed_;                 // the list in progress: ConfigMap names
};

}  // namespace gpushare::sync
