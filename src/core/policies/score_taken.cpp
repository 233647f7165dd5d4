// PlacementPolicy::score_taken: scoring a placement chosen elsewhere (kube's DRA allocator).

#include <algorithm>

#include "gpushare/core/fragmentation.h"
#include "gpushare/core/placement_policy.h"
#include "gpushare/core/policies/fgd_plus.h"

namespace gpushare::core {

std::optional<double> PlacementPolicy::score_taken(const NodeState& node, const PodDemand& pod,
                                                   std::span<const GpuTake> takes) const {
  PodDemand largest = pod;
  largest.gpu_count = 1;
  largest.per_gpu = 0;
  for (const GpuTake& take : takes) largest.per_gpu = std::max(largest.per_gpu, take.amount);
  return score(node, largest);
}

std::optional<double> FgdPlusPolicy::score_taken(const NodeState& node, const PodDemand& pod,
                                                 std::span<const GpuTake> takes) const {
  // reference_place's measure, on the node after exactly these takes.
  const FreeResources before = FreeResources::of(node);
  const double capacity = static_cast<double>(std::max<Units>(1, node.spec().memory_per_gpu));
  FreeResources after = before;
  PodDemand no_gpu = pod;
  no_gpu.per_gpu = 0;
  after.take(no_gpu, {});
  for (const GpuTake& take : takes) {
    if (take.gpu < 0 || static_cast<std::size_t>(take.gpu) >= after.gpu_free.size())
      return std::nullopt;
    Units& free = after.gpu_free[static_cast<std::size_t>(take.gpu)];
    free = std::max<Units>(0, free - take.amount);
  }
  return -(measure(after) - measure(before)) / capacity -
         options_.pack_weight * static_cast<double>(after.total_gpu_free()) / (8 * capacity);
}

}  // namespace gpushare::core
