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

Json consolidation_section(const Json& report) {
  Json section = {{"plan", nullptr}, {"holds", Json::array()}};
  if (!report.is_object()) return section;
  auto copy = [&](const char* key, auto is_type) {
    const auto it = report.find(key);
    if (it != report.end() && is_type(*it)) section[key] = *it;
  };
  const auto is_string = [](const Json& v) { return v.is_string(); };
  const auto is_bool = [](const Json& v) { return v.is_boolean(); };
  const auto object_or_null = [](const Json& v) { return v.is_object() || v.is_null(); };
  copy("mode", is_string);
  copy("acting", is_bool);
  copy("waiting", is_string);
  copy("error", is_string);
  copy("inFlight", object_or_null);
  copy("lastStop", object_or_null);
  if (const auto plan = report.find("plan"); plan != report.end() && plan->is_object()) {
    Json kept = Json::object();
    Json moves = Json::array();
    if (const auto list = plan->find("moves"); list != plan->end() && list->is_array()) {
      for (const Json& move : *list) {
        if (!move.is_object()) continue;
        Json entry = Json::object();
        for (const char* key : {"pod", "from", "to", "memory"}) {
          if (const auto v = move.find(key); v != move.end()) entry[key] = *v;
        }
        moves.push_back(std::move(entry));
      }
    }
    kept["moves"] = std::move(moves);
    for (const char* key : {"podsMoved", "gpusFreed"}) {
      if (const auto v = plan->find(key); v != plan->end() && v->is_number()) kept[key] = *v;
    }
    section["plan"] = std::move(kept);
  }
  Json holds = Json::array();
  if (const auto list = report.find("holds"); list != report.end() && list->is_array()) {
    for (const Json& hold : *list) {
      if (!hold.is_object()) continue;
      Json entry = Json::object();
      for (const char* key : {"node", "gpu", "memory", "owner", "replacing", "expiresAt"}) {
        if (const auto v = hold.find(key); v != hold.end()) entry[key] = *v;
      }
      holds.push_back(std::move(entry));
    }
  }
  section["holds"] = std::move(holds);
  return section;
}

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
  if (sources.consolidation && node_.empty())
    json_["consolidation"] = consolidation_section(*sources.consolidation);
}

}  // namespace gpushare::inspect
