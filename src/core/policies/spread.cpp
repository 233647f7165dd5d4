#include "gpushare/core/policies/spread.h"

#include "gpushare/core/fit.h"

namespace gpushare::core {

std::optional<double> SpreadPolicy::score(const NodeState& node, const PodDemand& pod) const {
  if (!check_fit(node, pod).fits()) return std::nullopt;
  // As place() computes it: the score does not depend on the GPU chosen.
  const double node_capacity = static_cast<double>(std::max<Units>(1, node.total_capacity()));
  return static_cast<double>(node.total_free() - pod.total_gpu()) / node_capacity;
}

std::optional<Placement> SpreadPolicy::place(const NodeState& node, const PodDemand& pod) const {
  if (!check_fit(node, pod).fits()) return std::nullopt;
  Placement placement;
  const double node_capacity = static_cast<double>(std::max<Units>(1, node.total_capacity()));
  // Emptiest node first: the share of the node still free after placement.
  placement.score = static_cast<double>(node.total_free() - pod.total_gpu()) / node_capacity;
  if (!pod.wants_gpu()) return placement;
  if (pod.needs_whole_gpus()) {
    placement.gpus = lowest_whole_gpus(node, pod.gpu_count);
    return placement;
  }
  // The GPUs gpus_that_fit() would list, scanned in place (prioritize calls this per node).
  int best = -1;
  Units best_free = 0;
  if (node.total_free() >= pod.per_gpu) {
    for (int gpu = 0; gpu < node.gpu_count(); ++gpu) {
      const GpuState& state = node.gpus()[static_cast<std::size_t>(gpu)];
      if (!state.healthy || state.free() < pod.per_gpu) continue;
      if (best < 0 || state.free() > best_free) {
        best = gpu;
        best_free = state.free();
      }
    }
  }
  placement.gpus = {best};
  return placement;
}

}  // namespace gpushare::core
