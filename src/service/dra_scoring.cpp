#include "gpushare/service/dra_scoring.h"

#include <algorithm>

namespace gpushare::service {

std::optional<std::vector<std::optional<double>>> dra_raw_scores(
    const core::ClusterModel& model, const core::PlacementPolicy& policy, const kube::PodInfo& pod,
    std::span<const std::string_view> offered, std::span<char> unknown) {
  if (pod.resource_claims.empty()) return std::nullopt;
  const std::vector<core::DraRequest> requests = kube::pending_dra_requests(model.dra(), pod);
  if (requests.empty()) return std::nullopt;
  core::PodDemand demand;
  demand.per_gpu = 0;
  demand.cpu_milli = pod.cpu_milli;
  demand.memory = pod.memory;
  core::PodDemand gpu_only;
  gpu_only.per_gpu = 0;
  std::vector<std::optional<double>> raw(offered.size());
  model.visit_nodes(offered, [&](std::size_t i, const core::NodeState* node) {
    if (node == nullptr) {
      unknown[i] = 1;
      return;
    }
    const auto takes = model.dra().first_fit(*node, requests);
    if (!takes) return;
    raw[i] = policy.score_taken(*node, demand, *takes);
    // As for other pods: kube-scheduler found the node feasible, so where our view of its CPU
    // or memory disagrees, judge it on GPUs alone.
    if (!raw[i]) raw[i] = policy.score_taken(*node, gpu_only, *takes);
  });
  return raw;
}

}  // namespace gpushare::service
