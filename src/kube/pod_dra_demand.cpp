#include "gpushare/kube/pod_dra_demand.h"

#include <algorithm>

namespace gpushare::kube {

namespace {

std::vector<core::DraRequest> dra_requests(const core::DraState& dra, const PodInfo& pod,
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
  std::erase_if(requests, [&](const core::DraRequest& request) { return !dra.any_ours(request); });
  return requests;
}

}  // namespace

std::vector<core::DraRequest> pending_dra_requests(const core::DraState& dra, const PodInfo& pod) {
  return dra_requests(dra, pod, /*pending_only=*/true);
}

std::optional<std::string> unresolved_dra_claim(const core::DraState& dra, const PodInfo& pod) {
  for (const core::DraPodClaim& entry : pod.resource_claims) {
    if (!entry.claim.empty() && dra.find_claim(pod.namespace_name, entry.claim) != nullptr)
      continue;
    if (!entry.template_name.empty()) {
      if (dra.find_template(pod.namespace_name, entry.template_name) != nullptr) continue;
      return "ResourceClaimTemplate " + pod.namespace_name + "/" + entry.template_name;
    }
    if (!entry.claim.empty()) return "ResourceClaim " + pod.namespace_name + "/" + entry.claim;
  }
  return std::nullopt;
}

core::PodDemand learned_demand(const core::ClusterModel& model, const PodInfo& pod) {
  core::PodDemand demand = pod.demand(model.gpu_models());
  if (demand.wants_gpu() || pod.resource_claims.empty()) return demand;
  // kube gives one claim at most kMaxResultsPerClaim devices (resource.k8s.io's
  // AllocationResultsMaxSize): a count past it is never allocated, so it is learned as that many.
  constexpr std::int64_t kMaxResultsPerClaim = 32;
  const std::int64_t most = kMaxResultsPerClaim * static_cast<std::int64_t>(std::min<std::size_t>(
                                                      pod.resource_claims.size(), 1024));
  std::int64_t gpus = 0;
  core::Units per_gpu = 0;
  for (const core::DraRequest& request : dra_requests(model.dra(), pod, /*pending_only=*/false)) {
    // Of prioritised alternatives, the first of the driver: what a free node gives.
    const auto ways = request.ways();
    const auto ask = std::find_if(ways.begin(), ways.end(),
                                  [&](const core::DraDeviceAsk& a) { return model.dra().ours(a); });
    // A request for whole devices (no memory asked) or for all of them says nothing of the
    // memory a shared GPU gives: left out.
    if (ask == ways.end() || ask->all || !ask->memory_bytes) continue;
    gpus = std::min(most, gpus + std::clamp<std::int64_t>(ask->count, 1, kMaxResultsPerClaim));
    per_gpu = std::max(per_gpu, model.dra().units_of_claim(*ask->memory_bytes));
  }
  if (gpus > 0 && per_gpu > 0) {
    demand.gpu_count = static_cast<int>(gpus);
    demand.per_gpu = per_gpu;
  }
  return demand;
}

}  // namespace gpushare::kube
