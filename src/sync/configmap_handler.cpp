#include "configmap_handler.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include <utility>

namespace gpushare::sync {

using apiclient::WatchEventType;

void ClusterSync::ConfigMapHandler::on_list_begin() {
  staged_.clear();
  listed_.clear();
}

void ClusterSync::ConfigMapHandler::on_list_item(const json::Value& item) {
  if (auto parsed = parse(item)) {
    note(*parsed, false);
    listed_.push_back(parsed->object);
    staged_[parsed->node] = parsed->indices;
  }
}

void ClusterSync::ConfigMapHandler::on_replace(const std::string&) {
  std::map<std::string, std::vector<int>> unhealthy = std::move(staged_);
  staged_.clear();
  // ConfigMaps deleted while the watch was down take their warnings with them.
  if (owner_.config_warnings_.retain_only(listed_) > 0) publish_warnings();
  listed_.clear();
  owner_.store_.write([&](core::ClusterModel& model, core::PlacementPolicy&) {
    for (const auto& node : marked_) {
      if (!unhealthy.contains(node)) model.set_unhealthy(node, {});
    }
    marked_.clear();
    for (const auto& [node, indices] : unhealthy) {
      model.set_unhealthy(node, indices);
      marked_.insert(node);
    }
  });
}

void ClusterSync::ConfigMapHandler::on_event(WatchEventType type, const json::Value& object) {
  auto parsed = parse(object);
  if (!parsed) return;
  owner_.store_.write([&](core::ClusterModel& model, core::PlacementPolicy&) {
    if (type == WatchEventType::kDeleted) {
      model.set_unhealthy(parsed->node, {});
      marked_.erase(parsed->node);
    } else {
      model.set_unhealthy(parsed->node, parsed->indices);
      marked_.insert(parsed->node);
    }
  });
  // After the model: whoever sees the warning also sees the GPUs it leaves marked.
  note(*parsed, type == WatchEventType::kDeleted);
  spdlog::info(
      "unhealthy GPUs of node {}: [{}]", parsed->node,
      type == WatchEventType::kDeleted ? "" : fmt::format("{}", fmt::join(parsed->indices, ",")));
}

std::optional<kube::UnhealthyGpus> ClusterSync::ConfigMapHandler::parse(const json::Value& object) {
  try {
    return kube::decode_unhealthy_configmap(object);
  } catch (const std::exception& e) {
    ++owner_.parse_errors_;
    spdlog::warn("ignoring ConfigMap: {}", e.what());
    return std::nullopt;
  }
}

void ClusterSync::ConfigMapHandler::note(const kube::UnhealthyGpus& parsed, bool deleted) {
  auto warnings = deleted ? std::vector<service::ConfigWarning>{}
                          : service::unhealthy_configmap_warnings(parsed);
  const std::vector<service::ConfigWarning> logged = warnings;
  if (!owner_.config_warnings_.set(parsed.object, std::move(warnings))) return;
  for (const auto& warning : logged) spdlog::warn("{}", warning.message);
  publish_warnings();
}

void ClusterSync::ConfigMapHandler::publish_warnings() {
  owner_.metrics_.set_config_warnings(owner_.config_warnings_.count_by_kind());
}

}  // namespace gpushare::sync
