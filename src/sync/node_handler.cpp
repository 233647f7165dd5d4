// The nodes reflector's kind: Node objects into the model's nodes.

#include <spdlog/spdlog.h>

#include <functional>
#include <memory>
#include <set>
#include <utility>
#include <vector>

#include "gpushare/kube/node_info.h"
#include "gpushare/sync/cluster_sync.h"
#include "update_timer.h"
#include "watch_handler.h"

namespace gpushare::sync {

using apiclient::WatchEventType;

namespace {

// Node status heartbeats arrive all the time; only a change of what the model uses rebuilds.
void upsert(core::ClusterModel& model, core::NodeSpec spec) {
  if (const core::NodeState* current = model.find_node(spec.name);
      current && current->spec() == model.effective_spec(spec)) {
    return;
  }
  if (!spec.misconfiguration.empty()) spdlog::warn("node {}: {}", spec.name, spec.misconfiguration);
  model.upsert_node(std::move(spec));
}

}  // namespace

std::unique_ptr<apiclient::ReflectorHandler> ClusterSync::make_node_handler() {
  auto staged = std::make_shared<std::vector<core::NodeSpec>>();  // the list in progress
  WatchKind<core::NodeSpec> kind;
  kind.what = "node object";
  kind.decode = [this](const json::Value& object) {
    return kube::decode_node(object, options_.names);
  };
  kind.unusable = [this] { ++parse_errors_; };
  kind.begin = [staged] { staged->clear(); };
  kind.stage = [staged](core::NodeSpec spec) { staged->push_back(std::move(spec)); };
  // The list replaces the model's nodes: nodes not listed are removed.
  kind.replace = [this, staged](const std::string& rv) {
    std::vector<core::NodeSpec> specs = std::move(*staged);
    staged->clear();
    const UpdateTimer timer;
    store_.write([&](core::ClusterModel& model, core::PlacementPolicy&) {
      std::set<std::string, std::less<>> listed;
      for (const auto& spec : specs) listed.insert(spec.name);
      std::vector<std::string> vanished;
      for (const auto& node : model.nodes()) {
        if (!listed.contains(node.name())) vanished.push_back(node.name());
      }
      for (const auto& name : vanished) model.remove_node(name);
      for (auto& spec : specs) upsert(model, std::move(spec));
    });
    spdlog::info("nodes listed: {} at resourceVersion {} ({})", specs.size(), rv, timer.done());
  };
  kind.apply = [this](WatchEventType type, core::NodeSpec spec) {
    store_.write([&](core::ClusterModel& model, core::PlacementPolicy&) {
      if (type == WatchEventType::kDeleted) {
        if (model.remove_node(spec.name)) spdlog::info("node {} removed", spec.name);
      } else {
        upsert(model, std::move(spec));
      }
    });
  };
  return std::make_unique<WatchHandler<core::NodeSpec>>(std::move(kind));
}

}  // namespace gpushare::sync
