#include "gpushare/core/policies/binpack.h"

#include "gpushare/core/fit.h"

namespace gpushare::core {
namespace {

// place()'s decision without building a Placement: the score, and for a sharing pod the GPU it
// takes (through `gpu`). score() and place() both use it, so their scores are the same bits.
std::optional<double> binpack(const NodeState& node, const PodDemand& pod, int* gpu) {
  if (!check_fit(node, pod).fits()) return std::nullopt;
  const double node_capacity = static_cast<double>(std::max<Units>(1, node.total_capacity()));
  const double node_free_after = static_cast<double>(node.total_free() - pod.total_gpu());
  // Secondary key in [0, 1): fuller nodes first.
  const double node_fill = 1.0 - node_free_after / node_capacity;
  if (!pod.wants_gpu()) return node_fill;
  if (pod.needs_whole_gpus()) return 1.0 + node_fill;
  // The GPUs gpus_that_fit() would list, scanned in place (prioritize calls this per node).
  int best = -1;
  Units best_left = 0;
  if (node.total_free() >= pod.per_gpu) {
    for (int i = 0; i < node.gpu_count(); ++i) {
      const GpuState& state = node.gpus()[static_cast<std::size_t>(i)];
      if (!state.healthy || state.free() < pod.per_gpu) continue;
      const Units left = state.free() - pod.per_gpu;
      if (best < 0 || left < best_left) {
        best = i;
        best_left = left;
      }
    }
  }
  if (gpu != nullptr) *gpu = best;
  // Primary key: how tightly the chosen GPU is filled (1 = exactly full); ties by node fill.
  const double gpu_capacity = static_cast<double>(std::max<Units>(1, node.spec().memory_per_gpu));
  return (1.0 - static_cast<double>(best_left) / gpu_capacity) + node_fill / 1024.0;
}

}  // namespace

std::optional<Placement> BinpackPolicy::place(const NodeState& node, const PodDemand& pod) const {
  int gpu = -1;
  const std::optional<double> score = binpack(node, pod, &gpu);
  if (!score) return std::nullopt;
  Placement placement;
  placement.score = *score;
  if (!pod.wants_gpu()) return placement;
  if (pod.needs_whole_gpus()) {
    placement.gpus = lowest_whole_gpus(node, pod.gpu_count);
  } else {
    placement.gpus = {gpu};
  }
  return placement;
}

std::optional<double> BinpackPolicy::score(const NodeState& node, const PodDemand& pod) const {
  return binpack(node, pod, nullptr);
}

}  // namespace gpushare::core
