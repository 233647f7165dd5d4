#include "gpushare/metrics/model_metrics.h"

#include <fmt/format.h>

#include <algorithm>
#include <string_view>

namespace gpushare::metrics {

using prometheus::MetricType;

namespace {

constexpr std::string_view kUnitNote =
    "in units of the shared resource (aliyun.com/gpu-mem: GiB with the device plugin's default "
    "--memory-unit)";

}  // namespace

void collect_model(std::vector<prometheus::MetricFamily>& out, const ModelGauges& model) {
  ScrapeFamilies f(out);
  std::size_t misconfigured = 0;
  std::size_t healthy = 0;
  std::size_t unhealthy = 0;
  std::size_t gpus = 0;
  for (const auto& node : model.nodes) {
    misconfigured += node.misconfigured ? 1 : 0;
    for (const auto& gpu : node.gpus) (gpu.healthy ? healthy : unhealthy) += 1;
    gpus += node.gpus.size();
  }
  const auto gauge = MetricType::Gauge;
  f.family("gpushare_nodes", gauge, "GPU nodes in the model.")
      .sample(static_cast<double>(model.nodes.size()));
  f.family("gpushare_misconfigured_nodes", gauge,
           "GPU nodes whose GPU resources are inconsistent (they take no pods; see /inspect).")
      .sample(static_cast<double>(misconfigured));
  f.family("gpushare_gpus", gauge, "GPUs in the model, by health.")
      .sample(static_cast<double>(healthy), {{"healthy", "true"}})
      .sample(static_cast<double>(unhealthy), {{"healthy", "false"}});
  f.family("gpushare_pods", gauge, "Pods holding GPU memory, assumed ones included.")
      .sample(static_cast<double>(model.pods));
  f.family("gpushare_dra_claim_allocations", gauge,
           "Allocated DRA devices (ResourceClaim results) holding memory of a GPU in the model.")
      .sample(static_cast<double>(model.dra_holdings));
  f.family("gpushare_assumed_pods", gauge,
           "Pods bound by the extender that the API server has not yet shown bound.")
      .sample(static_cast<double>(model.assumed_pods));
  f.family("gpushare_reservations", gauge,
           "Bind reservations by state: binding (call in flight), accepted (waiting to see the pod "
           "bound), "
           "unresolved (the call had no answer; the pod is being read back).")
      .sample(static_cast<double>(model.reservations_binding), {{"state", "binding"}})
      .sample(static_cast<double>(model.reservations_accepted), {{"state", "accepted"}})
      .sample(static_cast<double>(model.reservations_unresolved), {{"state", "unresolved"}});
  f.family("gpushare_cluster_gpu_memory_capacity", gauge,
           fmt::format("GPU memory of all GPU nodes, {}.", kUnitNote))
      .sample(static_cast<double>(model.capacity));
  f.family("gpushare_cluster_gpu_memory_allocated", gauge,
           fmt::format("GPU memory allocated to pods and DRA ResourceClaims on all GPU nodes, {}.",
                       kUnitNote))
      .sample(static_cast<double>(model.allocated));

  auto per_node = [&](std::string name, std::string help, auto value) {
    f.family(std::move(name), gauge, std::move(help)).reserve(model.nodes.size());
    for (const auto& node : model.nodes)
      f.sample(static_cast<double>(value(node)), {{"node", node.name}});
  };
  per_node("gpushare_node_gpu_memory_capacity", fmt::format("GPU memory of a node, {}.", kUnitNote),
           [](const NodeGauge& node) { return node.capacity; });
  per_node(
      "gpushare_node_gpu_memory_allocated",
      fmt::format("GPU memory allocated on a node, pods without a GPU index and DRA ResourceClaims "
                  "included, {}.",
                  kUnitNote),
      [](const NodeGauge& node) { return node.allocated; });
  per_node("gpushare_node_unschedulable", "1 if the node is cordoned.",
           [](const NodeGauge& node) { return node.unschedulable ? 1 : 0; });

  auto per_gpu = [&](std::string name, std::string help, auto value) {
    f.family(std::move(name), gauge, std::move(help)).reserve(gpus);
    for (const auto& node : model.nodes) {
      for (const auto& gpu : node.gpus) {
        f.sample(static_cast<double>(value(gpu)),
                 {{"node", node.name}, {"gpu", std::to_string(gpu.index)}});
      }
    }
  };
  per_gpu("gpushare_gpu_memory_capacity", fmt::format("Memory of one GPU, {}.", kUnitNote),
          [](const GpuGauge& gpu) { return gpu.capacity; });
  per_gpu("gpushare_gpu_memory_allocated",
          fmt::format("Memory of one GPU allocated to pods and DRA ResourceClaims, {}.", kUnitNote),
          [](const GpuGauge& gpu) { return gpu.allocated; });
  per_gpu("gpushare_gpu_healthy",
          "1 if the GPU takes new pods, 0 if listed in its node's unhealthy-gpu ConfigMap.",
          [](const GpuGauge& gpu) { return gpu.healthy ? 1 : 0; });
}

ModelGauges model_gauges(const core::ClusterModel& model, const core::ReservationLedger& ledger) {
  ModelGauges gauges = model_gauges(model);
  gauges.reservations_binding = ledger.count(core::ReservationState::kBinding);
  gauges.reservations_accepted = ledger.count(core::ReservationState::kAccepted);
  gauges.reservations_unresolved = ledger.count(core::ReservationState::kUnresolved);
  return gauges;
}

ModelGauges model_gauges(const core::ClusterModel& model) {
  ModelGauges gauges;
  gauges.pods = model.gpu_pod_count();  // the model also holds CPU-only pods, for scoring
  gauges.assumed_pods = model.assumed_count();
  gauges.capacity = model.total_capacity();
  gauges.allocated = model.total_used();
  for (const core::NodeState& node : model.nodes()) {
    gauges.dra_holdings += model.dra().holdings_on(node.name()).size();
    const bool misconfigured = !node.spec().misconfiguration.empty();
    if (node.gpu_count() == 0 && !misconfigured) continue;  // CPU-only: no series
    NodeGauge& out = gauges.nodes.emplace_back();
    out.name = node.name();
    out.unschedulable = node.spec().unschedulable;
    out.misconfigured = misconfigured;
    out.capacity = node.total_capacity();
    out.allocated = node.total_used();
    out.gpus.reserve(node.gpus().size());
    for (std::size_t i = 0; i < node.gpus().size(); ++i) {
      const core::GpuState& gpu = node.gpus()[i];
      out.gpus.push_back({static_cast<int>(i), gpu.capacity, gpu.used, gpu.healthy});
    }
  }
  std::sort(gauges.nodes.begin(), gauges.nodes.end(),
            [](const NodeGauge& a, const NodeGauge& b) { return a.name < b.name; });
  return gauges;
}

}  // namespace gpushare::metrics
