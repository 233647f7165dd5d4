#pragma once
// Plausibility of a pod's GPU-memory claim against the model (no I/O: callers log the result).

#include <string>

#include "gpushare/core/cluster_model.h"
#include "gpushare/core/pod_allocation.h"
#include "gpushare/kube/pod_info.h"

namespace gpushare::kube {

// A warning naming the pod when its claim is out of range: an annotation parse_pod clamped, or
// a claim larger than its GPU (or, without a valid index, its node) can hold, which the model
// counts only up to that capacity. Empty when the claim is plausible (or its node is unknown).
std::string claim_warning(const core::ClusterModel& model, const PodInfo& pod,
                          const core::PodAllocation& allocation);

}  // namespace gpushare::kube
