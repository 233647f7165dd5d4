#include "gpushare/extender/dra_scoring.h"

#include <algorithm>

namespace gpushare::extender {

namespace {

std::vector<core::DraRequest> dra_requests(const core::DraState& dra, const kube::PodInfo& pod,
                                           bool pending_only) {
  std::vector<core::DraRequest> requests;
  for (const core::DraPodClaim& entry : pod.resource_claims) {
    const core::DraClaim* claim =
        entry.claim.empty() ? nullptr : dra.find_claim(pod.namespace_name, entry.claim);
    if (claim != nullptr) {
      if (pending_only && claim->allocated) continue;
      requests.insert(requests.end(), claim->requests.begin(), claim->requests.end());
      continue;
    }
    if (entry.template_name.empty()) continue;  // a claim not (yet) seen
    if (const core::DraClaimTemplate* from =
            dra.find_template(pod.namespace_name, entry.template_name))
      requests.insert(requests.end(), from->requests.begin(), from->requests.end());
  }
  std::erase_if(requests, [&](const core::DraRequest& request) { return !dra.ours(request); });
  return requests;
}

}  // namespace

std::vector<core::DraRequest> pending_dra_requests(const core::DraState& dra,
                                                   const kube::PodInfo& pod) {
  return dra_requests(dra, pod, /*pending_only=*/true);
}

core::PodDemand learned_demand(const core::ClusterModel& model, const kube::PodInfo& pod) {
  core::PodDemand demand = pod.demand(model.gpu_models());
  if (demand.wants_gpu() || pod.resource_claims.empty()) return demand;
  int gpus = 0;
  core::Units per_gpu = 0;
  for (const core::DraRequest& request : dra_requests(model.dra(), pod, /*pending_only=*/false)) {
    // A request for whole devices (no memory asked) or for all of them says nothing of the
    // memory a shared GPU gives: left out.
    if (request.all || !request.memory_bytes) continue;
    gpus += static_cast<int>(std::max<std::int64_t>(1, request.count));
    per_gpu = std::max(per_gpu, model.dra().units_of_claim(*request.memory_bytes));
  }
  if (gpus > 0 && per_gpu > 0) {
    demand.gpu_count = gpus;
    demand.per_gpu = per_gpu;
  }
  return demand;
}

std::optional<std::vector<std::optional<double>>> dra_raw_scores(
    const core::ClusterModel& model, const core::PlacementPolicy& policy, const kube::PodInfo& pod,
    std::span<const std::string_view> offered) {
  if (pod.resource_claims.empty()) return std::nullopt;
  const std::vector<core::DraRequest> requests = pending_dra_requests(model.dra(), pod);
  if (requests.empty()) return std::nullopt;
  core::PodDemand demand;
  demand.per_gpu = 0;
  demand.cpu_milli = pod.cpu_milli;
  demand.memory = pod.memory;
  core::PodDemand gpu_only;
  gpu_only.per_gpu = 0;
  std::vector<std::optional<double>> raw(offered.size());
  model.visit_nodes(offered, [&](std::size_t i, const core::NodeState* node) {
    if (node == nullptr) return;
    const auto takes = model.dra().first_fit(*node, requests);
    if (!takes) return;
    raw[i] = policy.score_taken(*node, demand, *takes);
    // As for other pods: kube-scheduler found the node feasible, so where our view of its CPU
    // or memory disagrees, judge it on GPUs alone.
    if (!raw[i]) raw[i] = policy.score_taken(*node, gpu_only, *takes);
  });
  return raw;
}

}  // namespace gpushare::extender
