#pragma once
// Prioritize for pods with Dynamic Resource Allocation claims: kube's allocator, not gpushare,
// picks their devices (first fit, core::DraState::first_fit), so each offered node is scored by
// what that pick leaves (PlacementPolicy::score_taken). Filter and bind stay kube's.

#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "gpushare/core/cluster_model.h"
#include "gpushare/core/placement_policy.h"
#include "gpushare/kube/pod_info.h"

namespace gpushare::extender {

// The device requests of the pod's claims still to be allocated, for the model's DRA driver:
// a claim by name (or the one generated for a template, once the pod's status names it), else
// the template's requests. Claims already allocated add nothing: their devices are decided.
std::vector<core::DraRequest> pending_dra_requests(const core::DraState& dra,
                                                   const kube::PodInfo& pod);

// What the policy learns of the workload from a bound pod: its demand, and for a pod with DRA
// claims (which ask no GPU resource of the pod itself) the GPU memory its claims ask of the
// model's driver: as many GPUs as their requests' devices, each with the largest memory asked.
// Without it a DRA cluster's GPU pods would all count as CPU-only for the learned workload.
core::PodDemand learned_demand(const core::ClusterModel& model, const kube::PodInfo& pod);

// Raw scores of `offered` for a pod with claims (nullopt per node where they do not fit), or
// nullopt when the pod asks for no device of the configured driver: score it as any other pod.
std::optional<std::vector<std::optional<double>>> dra_raw_scores(
    const core::ClusterModel& model, const core::PlacementPolicy& policy, const kube::PodInfo& pod,
    std::span<const std::string_view> offered);

}  // namespace gpushare::extender
