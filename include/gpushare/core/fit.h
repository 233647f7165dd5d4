#pragma once
// Can a node hold a pod at all? Shared by every policy, so filter and bind agree.

#include <string>
#include <string_view>
#include <vector>

#include "gpushare/core/node_state.h"
#include "gpushare/core/pod_demand.h"

namespace gpushare::core {

enum class FitStatus {
  kFits,
  kNoGpus,         // node has no GPUs (or no GPU memory)
  kMisconfigured,  // node's GPU resources are inconsistent; see NodeSpec::misconfiguration
  kAllGpusUnhealthy,
  kModelNotAllowed,
  kInsufficientCpu,
  kInsufficientMemory,
  kExceedsGpuCapacity,  // larger than a whole GPU of this node: can never fit here
  kInsufficientGpuMemory,
  kNotEnoughWholeGpus,
};

struct FitResult {
  FitStatus status = FitStatus::kFits;
  Units requested = 0;
  Units largest_free = 0;
  Units gpu_capacity = 0;
  int whole_gpus_free = 0;
  std::string detail;  // misconfiguration text

  bool fits() const { return status == FitStatus::kFits; }
  // True if the node could never hold this pod whatever is evicted (kube-scheduler's
  // UnschedulableAndUnresolvable): preemption should skip it.
  bool unresolvable() const;
  // A sentence a person can act on, naming the resource.
  std::string reason(std::string_view resource_name) const;
};

FitResult check_fit(const NodeState& node, const PodDemand& pod);
// check_fit(node, pod).status alone, without the details: for the hot paths (every policy's
// score and place), which ask only whether the pod fits.
FitStatus fit_status(const NodeState& node, const PodDemand& pod);
inline bool fits(const NodeState& node, const PodDemand& pod) {
  return fit_status(node, pod) == FitStatus::kFits;
}

// GPU indices where a single-GPU pod fits (healthy, enough free), ascending.
std::vector<int> gpus_that_fit(const NodeState& node, const PodDemand& pod);
// For multi-GPU pods: the lowest-index healthy, wholly free GPUs, or empty if too few.
std::vector<int> lowest_whole_gpus(const NodeState& node, int count);

}  // namespace gpushare::core
