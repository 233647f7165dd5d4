#include "gpushare/inspect/snapshot.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "gpushare/core/fragmentation.h"
#include "gpushare/core/policies/fgd.h"
#include "gpushare/core/policies/fgd_plus.h"
#include "gpushare/inspect/dra_view.h"

namespace gpushare::inspect {

using kube::Json;

namespace {

// A pod's entry in a node's lists, with its pin to GPU models as it says it ("modelPin") and as
// it resolves among the models the cluster's GPU nodes carry now ("allowedModels"; "" = nodes
// without the model label).
Json pod_entry(const core::PodAllocation& pod, const core::ClusterModel& model) {
  Json entry = {{"name", pod.name},
                {"namespace", pod.namespace_name},
                {"uid", pod.uid},
                {"usedGPU", pod.per_gpu},
                {"assumed", pod.assumed}};
  const std::string pin = pod.model_pin.describe();
  if (pin.empty()) return entry;
  entry["modelPin"] = pin;
  if (pod.model_pin.pinned) {
    std::vector<std::string> allowed = core::resolve_models(pod.model_pin, model.gpu_models());
    if (allowed.empty()) allowed = model.gpu_models();  // every model present
    entry["allowedModels"] = std::move(allowed);
  }
  return entry;
}

const core::TargetWorkload* learned_workload(const core::PlacementPolicy& policy) {
  if (const auto* fgd = dynamic_cast<const core::FgdPolicy*>(&policy)) return &fgd->target();
  if (const auto* plus = dynamic_cast<const core::FgdPlusPolicy*>(&policy)) return &plus->target();
  return nullptr;
}

}  // namespace

std::optional<Json> inspect_node(const core::ClusterModel& model, std::string_view name) {
  const core::NodeState* node = model.find_node(name);
  if (node == nullptr) return std::nullopt;
  const auto pods = model.pods_on(name);
  Json devs = Json::array();
  for (int i = 0; i < node->gpu_count(); ++i) {
    const auto& gpu = node->gpus()[static_cast<std::size_t>(i)];
    Json dev_pods = Json::array();
    for (const core::PodAllocation* pod : pods) {
      if (std::find(pod->gpus.begin(), pod->gpus.end(), i) == pod->gpus.end()) continue;
      dev_pods.push_back(pod_entry(*pod, model));
    }
    devs.push_back({{"id", i},
                    {"totalGPU", gpu.capacity},
                    {"usedGPU", gpu.used},
                    {"healthy", gpu.healthy},
                    {"pods", std::move(dev_pods)}});
  }
  Json unindexed = Json::array();
  // Holders whose index annotation names a GPU the node does not have (a stale annotation, the
  // node shrank, or a hostile write). The model counts them on the node like unindexed pods;
  // listed apart, with the index, so their memory is never unaccounted for in this view.
  Json invalid_index = Json::array();
  for (const core::PodAllocation* pod : pods) {
    // Pods holding only CPU and memory are in the model for scoring; this view is of GPUs.
    if (!pod->holds_gpu()) continue;
    Json entry = pod_entry(*pod, model);
    if (pod->gpus.empty()) {
      unindexed.push_back(std::move(entry));
      continue;
    }
    for (int gpu : pod->gpus) {
      if (gpu >= 0 && gpu < node->gpu_count()) continue;
      entry["gpuIndex"] = gpu;
      invalid_index.push_back(entry);
    }
  }
  const auto& spec = node->spec();
  Json result = {{"name", spec.name},
                 {"address", spec.address},
                 {"gpuModel", spec.gpu_model},
                 {"unschedulable", spec.unschedulable},
                 {"totalGPU", node->total_capacity()},
                 {"usedGPU", node->total_used()},
                 {"largestFreeGPU", node->largest_free()},
                 {"devs", std::move(devs)},
                 {"unindexedPods", std::move(unindexed)},
                 {"invalidIndexPods", std::move(invalid_index)}};
  if (!spec.misconfiguration.empty()) result["misconfiguration"] = spec.misconfiguration;
  add_dra_holders(result, model, name);
  return result;
}

Json inspect_cluster(const core::ClusterModel& model, std::string_view policy_name,
                     std::string_view policy_state) {
  std::vector<std::string_view> names;
  names.reserve(model.node_count());
  for (const auto& node : model.nodes()) names.push_back(node.name());
  std::sort(names.begin(), names.end());
  Json nodes = Json::array();
  for (auto name : names) nodes.push_back(*inspect_node(model, name));
  // Per GPU model ("" = GPU nodes without the model label): what pins are resolved against.
  struct ModelUse {
    std::size_t nodes = 0;
    int gpus = 0;
    core::Units total = 0;
    core::Units used = 0;
  };
  std::map<std::string_view, ModelUse> by_model;
  for (const auto& node : model.nodes()) {
    if (node.gpu_count() <= 0) continue;
    ModelUse& use = by_model[node.spec().gpu_model];
    ++use.nodes;
    use.gpus += node.gpu_count();
    use.total += node.total_capacity();
    use.used += node.total_used();
  }
  std::map<std::string_view, std::size_t> pinned_pods;  // bound GPU pods that may use the model
  for (const auto& [uid, pod] : model.pods()) {
    if (!pod.holds_gpu() || !pod.model_pin.pinned) continue;
    for (const auto& [name, use] : by_model) {
      if (pod.model_pin.allows(name.empty() ? std::nullopt : std::optional(name)))
        ++pinned_pods[name];
    }
  }
  Json models = Json::array();
  for (const auto& [name, use] : by_model) {
    models.push_back({{"model", std::string(name)},
                      {"nodes", use.nodes},
                      {"gpus", use.gpus},
                      {"totalGPU", use.total},
                      {"usedGPU", use.used},
                      {"pinnedPods", pinned_pods[name]}});
  }
  Json result = {{"nodes", std::move(nodes)},
                 {"gpuModels", std::move(models)},
                 {"totalGPU", model.total_capacity()},
                 {"usedGPU", model.total_used()},
                 {"pods", model.gpu_pod_count()},
                 {"assumedPods", model.assumed_count()},
                 {"policy", {{"name", std::string(policy_name)}}}};
  if (!policy_state.empty()) {
    Json state = Json::parse(policy_state, nullptr, false);
    if (!state.is_discarded()) result["policy"]["state"] = std::move(state);
  }
  return result;
}

void add_fragmentation(Json& cluster, const core::ClusterModel& model,
                       const core::PlacementPolicy& policy) {
  const auto* fgd = dynamic_cast<const core::FgdPolicy*>(&policy);
  const core::TargetWorkload prior =
      fgd == nullptr ? core::default_prior_workload() : core::TargetWorkload{};
  const core::TargetWorkload& workload = fgd != nullptr ? fgd->target() : prior;
  auto rounded = [](double units) { return std::round(units * 100) / 100; };
  double total = 0;
  if (cluster.contains("nodes")) {
    for (Json& entry : cluster["nodes"]) {
      const core::NodeState* node = model.find_node(entry.value("name", std::string()));
      if (node == nullptr) continue;
      const double fragmented = node->gpu_count() > 0 ? core::fragmentation(*node, workload) : 0.0;
      total += fragmented;
      entry["fragmentedGPU"] = rounded(fragmented);
    }
  }
  cluster["fragmentedGPU"] = rounded(total);
  // The learned workload's share pinned to each model: how much of what the policy plans for
  // only that model (among others) may take.
  if (const core::TargetWorkload* learned = learned_workload(policy);
      learned != nullptr && cluster.contains("gpuModels")) {
    for (Json& entry : cluster["gpuModels"]) {
      const std::string name = entry.value("model", std::string());
      double weight = 0;
      std::size_t shapes = 0;
      for (const core::WeightedShape& shape : *learned) {
        if (shape.shape.allowed_models.empty() || !shape.shape.allows_model(name)) continue;
        weight += shape.weight;
        ++shapes;
      }
      entry["learnedPinnedWeight"] = std::round(weight * 10000) / 10000;
      entry["learnedPinnedShapes"] = shapes;
    }
  }
  cluster["fragmentation"] = {{"measure", "fgd"},
                              {"workload", fgd != nullptr ? "policy-target" : "default-prior"},
                              {"shapes", workload.size()}};
}

void add_pod_phases(Json& document, const PodPhaseLookup& phase_of) {
  if (!phase_of || !document.contains("nodes")) return;
  auto annotate = [&](Json& node, std::string_view key) {
    auto pods = node.find(key);
    if (pods == node.end() || !pods->is_array()) return;
    for (Json& pod : *pods) {
      const auto phase =
          phase_of(pod.value("uid", ""), pod.value("namespace", ""), pod.value("name", ""));
      if (phase && !phase->empty()) pod["phase"] = *phase;
    }
  };
  for (Json& node : document["nodes"]) {
    if (auto devs = node.find("devs"); devs != node.end() && devs->is_array()) {
      for (Json& dev : *devs) annotate(dev, "pods");
    }
    annotate(node, "unindexedPods");
    annotate(node, "invalidIndexPods");
  }
}

}  // namespace gpushare::inspect
