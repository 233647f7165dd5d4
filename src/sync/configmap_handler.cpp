// The unhealthy-gpu ConfigMaps reflector's kind: the GPUs each ConfigMap marks unhealthy into the
// model, and the ConfigMaps' mistakes into the configuration warnings.

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "gpushare/kube/node_info.h"
#include "gpushare/sync/cluster_sync.h"
#include "watch_handler.h"

namespace gpushare::sync {

using apiclient::WatchEventType;

std::unique_ptr<apiclient::ReflectorHandler> ClusterSync::make_configmap_handler() {
  struct State {
    std::set<std::string> marked;                    // nodes with an unhealthy-gpu ConfigMap
    std::map<std::string, std::vector<int>> staged;  // the list in progress
    std::vector<std::string> listed;                 // the list in progress: ConfigMap names
  };
  auto state = std::make_shared<State>();
  const auto publish_warnings = [this] {
    metrics_.set_config_warnings(config_warnings_.count_by_kind());
  };
  // Records the ConfigMap's mistakes (none once deleted); logs them when they change, not on
  // every relist.
  const auto note = [this, publish_warnings](const kube::UnhealthyGpus& parsed, bool deleted) {
    auto warnings = deleted ? std::vector<service::ConfigWarning>{}
                            : service::unhealthy_configmap_warnings(parsed);
    const std::vector<service::ConfigWarning> logged = warnings;
    if (!config_warnings_.set(parsed.object, std::move(warnings))) return;
    for (const auto& warning : logged) spdlog::warn("{}", warning.message);
    publish_warnings();
  };
  WatchKind<kube::UnhealthyGpus> kind;
  kind.what = "ConfigMap";
  kind.decode = [](const json::Value& object) { return kube::decode_unhealthy_configmap(object); };
  kind.unusable = [this] { ++parse_errors_; };
  kind.begin = [state] {
    state->staged.clear();
    state->listed.clear();
  };
  kind.stage = [state, note](kube::UnhealthyGpus parsed) {
    note(parsed, false);
    state->listed.push_back(parsed.object);
    state->staged[parsed.node] = parsed.indices;
  };
  // The list replaces the marks: nodes whose ConfigMap is gone have every GPU healthy again.
  kind.replace = [this, state, publish_warnings](const std::string&) {
    std::map<std::string, std::vector<int>> unhealthy = std::move(state->staged);
    state->staged.clear();
    // ConfigMaps deleted while the watch was down take their warnings with them.
    if (config_warnings_.retain_only(state->listed) > 0) publish_warnings();
    state->listed.clear();
    store_.write([&](core::ClusterModel& model, core::PlacementPolicy&) {
      for (const auto& node : state->marked) {
        if (!unhealthy.contains(node)) model.set_unhealthy(node, {});
      }
      state->marked.clear();
      for (const auto& [node, indices] : unhealthy) {
        model.set_unhealthy(node, indices);
        state->marked.insert(node);
      }
    });
  };
  kind.apply = [this, state, note](WatchEventType type, kube::UnhealthyGpus parsed) {
    store_.write([&](core::ClusterModel& model, core::PlacementPolicy&) {
      if (type == WatchEventType::kDeleted) {
        model.set_unhealthy(parsed.node, {});
        state->marked.erase(parsed.node);
      } else {
        model.set_unhealthy(parsed.node, parsed.indices);
        state->marked.insert(parsed.node);
      }
    });
    // After the model: whoever sees the warning also sees the GPUs it leaves marked.
    note(parsed, type == WatchEventType::kDeleted);
    spdlog::info(
        "unhealthy GPUs of node {}: [{}]", parsed.node,
        type == WatchEventType::kDeleted ? "" : fmt::format("{}", fmt::join(parsed.indices, ",")));
  };
  return std::make_unique<WatchHandler<kube::UnhealthyGpus>>(std::move(kind));
}

}  // namespace gpushare::sync
