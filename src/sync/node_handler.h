#pragma once
// ClusterSync's handler of the nodes reflector (private to src/sync): Node objects into the
// model's nodes. Called on the reflector's thread only.

#include <optional>
#include <string>
#include <vector>

#include "gpushare/apiclient/reflector.h"
#include "gpushare/core/cluster_model.h"
#include "gpushare/sync/cluster_sync.h"

namespace gpushare::sync {

class ClusterSync::NodeHandler final : public apiclient::ReflectorHandler {
 public:
  explicit NodeHandler(ClusterSync& owner) : owner_(owner) {}

  void on_list_begin() override { staged_.clear(); }
  void on_list_item(const json::Value& item) override;
  // The list replaces the model's nodes: nodes not listed are removed.
  void on_replace(const std::string& rv) override;
  void on_event(apiclient::WatchEventType type, const json::Value& object) override;

 private:
  // The node's spec, or nullopt (counted and logged) when the object is unusable.
  std::optional<core::NodeSpec> parse(const json::Value& object);
  // Node status heartbeats arrive all the time; only a change of what the model uses rebuilds.
  static void upsert(core::ClusterModel& model, core::NodeSpec spec);

  ClusterSync& owner_;
  std::vector<core::NodeSpec> staged_;  // the list in progress
};

}  // namespace gpushare::sync
