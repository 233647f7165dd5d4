#include "gpushare/core/policies/binpack.h"

#include "gpushare/core/fit.h"

namespace gpushare::core {

std::optional<Placement> BinpackPolicy::place(const NodeState& node, const PodDemand& pod) const {
  if (!check_fit(node, pod).fits()) return std::nullopt;
  Placement placement;
  const double node_capacity = static_cast<double>(std::max<Units>(1, node.total_capacity()));
  const double node_free_after = static_cast<double>(node.total_free() - pod.total_gpu());
  // Secondary key in [0, 1): fuller nodes first.
  const double node_fill = 1.0 - node_free_after / node_capacity;
  if (!pod.wants_gpu()) {
    placement.score = node_fill;
    return placement;
  }
  if (pod.needs_whole_gpus()) {
    placement.gpus = lowest_whole_gpus(node, pod.gpu_count);
    placement.score = 1.0 + node_fill;
    return placement;
  }
  // The GPUs gpus_that_fit() would list, scanned in place (prioritize calls this per node).
  int best = -1;
  Units best_left = 0;
  if (node.total_free() >= pod.per_gpu) {
    for (int gpu = 0; gpu < node.gpu_count(); ++gpu) {
      const GpuState& state = node.gpus()[static_cast<std::size_t>(gpu)];
      if (!state.healthy || state.free() < pod.per_gpu) continue;
      const Units left = state.free() - pod.per_gpu;
      if (best < 0 || left < best_left) {
        best = gpu;
        best_left = left;
      }
    }
  }
  placement.gpus = {best};
  // Primary key: how tightly the chosen GPU is filled (1 = exactly full); ties by node fill.
  const double gpu_capacity = static_cast<double>(std::max<Units>(1, node.spec().memory_per_gpu));
  placement.score = (1.0 - static_cast<double>(best_left) / gpu_capacity) + node_fill / 1024.0;
  return placement;
}

}  // namespace gpushare::core
