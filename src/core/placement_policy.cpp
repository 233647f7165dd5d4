#include "gpushare/core/placement_policy.h"

#include <algorithm>

namespace gpushare::core {

std::optional<double> PlacementPolicy::score_taken(const NodeState& node, const PodDemand& pod,
                                                   std::span<const GpuTake> takes) const {
  PodDemand largest = pod;
  largest.gpu_count = 1;
  largest.per_gpu = 0;
  for (const GpuTake& take : takes) largest.per_gpu = std::max(largest.per_gpu, take.amount);
  return score(node, largest);
}

}  // namespace gpushare::core
