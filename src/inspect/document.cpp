#include "gpushare/inspect/document.h"

#include <utility>

namespace gpushare::inspect {

using kube::Json;

namespace {

Json rejections_json(const std::vector<Rejection>& rejections) {
  Json list = Json::array();
  for (const auto& r : rejections) {
    list.push_back(
        {{"timeUnixNano", r.time_ns}, {"pod", r.pod}, {"node", r.node}, {"reason", r.reason}});
  }
  return list;
}

Json config_warnings_json(const std::vector<ConfigWarning>& warnings) {
  Json list = Json::array();
  for (const auto& w : warnings) {
    list.push_back({{"object", w.object},
                    {"kind", w.kind},
                    {"key", w.key},
                    {"value", w.value},
                    {"message", w.message},
                    {"node", w.node}});
  }
  return list;
}

}  // namespace

Document Document::cluster(const core::ClusterModel& model, const core::PlacementPolicy* policy) {
  if (policy == nullptr) {
    Json json = inspect_cluster(model, "", "");
    json.erase("policy");
    return Document(std::move(json), "");
  }
  Json json = inspect_cluster(model, policy->name(), policy->describe_state());
  add_fragmentation(json, model, *policy);
  return Document(std::move(json), "");
}

std::optional<Document> Document::node(const core::ClusterModel& model, std::string_view name) {
  auto node = inspect_node(model, name);
  if (!node) return std::nullopt;
  return Document(Json{{"nodes", Json::array({std::move(*node)})}}, std::string(name));
}

void Document::add(DocumentSources sources) {
  if (sources.rejections) json_["recentRejections"] = rejections_json(*sources.rejections);
  add_pod_phases(json_, sources.pod_phase);
  if (sources.config_warnings) {
    std::vector<ConfigWarning>& warnings = *sources.config_warnings;
    if (!node_.empty()) {
      std::erase_if(warnings, [&](const ConfigWarning& warning) { return warning.node != node_; });
    }
    json_["configWarnings"] = config_warnings_json(warnings);
  }
}

}  // namespace gpushare::inspect
