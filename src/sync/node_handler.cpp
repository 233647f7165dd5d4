#include "node_handler.h"

#include <spdlog/spdlog.h>

#include <functional>
#include <set>
#include <utility>

#include "gpushare/kube/node_info.h"
#include "update_timer.h"

namespace gpushare::sync {

using apiclient::WatchEventType;

void ClusterSync::NodeHandler::on_list_item(const json::Value& item) {
  if (auto spec = parse(item)) staged_.push_back(std::move(*spec));
}

void ClusterSync::NodeHandler::on_replace(const std::string& rv) {
  std::vector<core::NodeSpec> specs = std::move(staged_);
  staged_.clear();
  const UpdateTimer timer;
  owner_.store_.write([&](core::ClusterModel& model, core::PlacementPolicy&) {
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
}

void ClusterSync::NodeHandler::on_event(WatchEventType type, const json::Value& object) {
  auto spec = parse(object);
  if (!spec) return;
  owner_.store_.write([&](core::ClusterModel& model, core::PlacementPolicy&) {
    if (type == WatchEventType::kDeleted) {
      if (model.remove_node(spec->name)) spdlog::info("node {} removed", spec->name);
    } else {
      upsert(model, std::move(*spec));
    }
  });
}

std::optional<core::NodeSpec> ClusterSync::NodeHandler::parse(const json::Value& object) {
  try {
    return kube::decode_node(object, owner_.options_.names);
  } catch (const std::exception& e) {
    ++owner_.parse_errors_;
    spdlog::warn("ignoring node object: {}", e.what());
    return std::nullopt;
  }
}

void ClusterSync::NodeHandler::upsert(core::ClusterModel& model, core::NodeSpec spec) {
  if (const core::NodeState* current = model.find_node(spec.name);
      current && current->spec() == model.effective_spec(spec)) {
    return;
  }
  if (!spec.misconfiguration.empty()) spdlog::warn("node {}: {}", spec.name, spec.misconfiguration);
  model.upsert_node(std::move(spec));
}

}  // namespace gpushare::sync
