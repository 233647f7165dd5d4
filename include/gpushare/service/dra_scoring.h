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
#include "gpushare/kube/pod_dra_demand.h"
#include "gpushare/kube/pod_info.h"

namespace gpushare::service {

// Raw scores of `offered` for a pod with claims (nullopt per node where they do not fit), or
// nullopt when the pod asks for no device of the configured driver: score it as any other pod.
// Marks in `unknown` (offered.size() long) the names that are no node of the model.
std::optional<std::vector<std::optional<double>>> dra_raw_scores(
    const core::ClusterModel& model, const core::PlacementPolicy& policy, const kube::PodInfo& pod,
    std::span<const std::string_view> offered, std::span<char> unknown);

}  // namespace gpushare::service
