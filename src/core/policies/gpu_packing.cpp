#include "gpushare/core/policies/gpu_packing.h"

#include <algorithm>
#include <vector>

#include "gpushare/core/fit.h"
#include "gpushare/core/policies/best_fit.h"

namespace gpushare::core {

std::optional<Placement> GpuPackingPolicy::place(const NodeState& node,
                                                 const PodDemand& pod) const {
  if (!fits(node, pod)) return std::nullopt;
  Placement placement;
  placement.gpus = best_fit_gpus(node, pod);
  if (!pod.wants_gpu()) return placement;  // score 0
  const Units capacity = std::max<Units>(1, node.spec().memory_per_gpu);
  const int gpu_count = node.gpu_count();
  if (node.wholly_free_gpu_count() == gpu_count) {
    // An idle node: small nodes first.
    placement.score = std::max(33 - gpu_count, gpu_count);
    return placement;
  }
  // The GPUs the paper's simulator would take: least free first (stable), those that fit.
  std::vector<int> order(static_cast<std::size_t>(gpu_count));
  for (int i = 0; i < gpu_count; ++i) order[static_cast<std::size_t>(i)] = i;
  const auto free_of = [&](int i) {
    const auto& gpu = node.gpus()[static_cast<std::size_t>(i)];
    return gpu.healthy ? gpu.free() : 0;
  };
  std::stable_sort(order.begin(), order.end(),
                   [&](int a, int b) { return free_of(a) < free_of(b); });
  int wanted = pod.gpu_count;
  int wholly_free_taken = 0;
  std::int64_t free_percent_sum = 0;
  for (int i : order) {
    if (wanted == 0) break;
    const Units free = free_of(i);
    if (free < pod.per_gpu) continue;
    --wanted;
    if (free == capacity) ++wholly_free_taken;
    free_percent_sum += free * 100 / capacity;
  }
  if (wholly_free_taken > 0) {
    placement.score = std::max(50 - wholly_free_taken, 33);
  } else {
    placement.score = static_cast<double>(std::max<std::int64_t>(100 - free_percent_sum / 10, 50));
  }
  return placement;
}

}  // namespace gpushare::core
