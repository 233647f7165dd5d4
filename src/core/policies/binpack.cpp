#include "gpushare/core/policies/binpack.h"

#include <limits>

#include "gpushare/core/fit.h"

namespace gpushare::core {
namespace {

// place()'s decision without building a Placement: the score, and for a sharing pod the GPU it
// takes (through `gpu`). score() and place() both use it, so their scores are the same bits.
std::optional<double> binpack(const NodeState& node, const PodDemand& pod, int* gpu) {
  if (!fits(node, pod)) return std::nullopt;
  const double node_capacity = static_cast<double>(std::max<Units>(1, node.total_capacity()));
  const double node_free_after = static_cast<double>(node.total_free() - pod.total_gpu());
  // Secondary key in [0, 1): fuller nodes first.
  const double node_fill = 1.0 - node_free_after / node_capacity;
  if (!pod.wants_gpu()) return node_fill;
  if (pod.needs_whole_gpus()) return 1.0 + node_fill;
  // The GPUs gpus_that_fit() would list, scanned in place (prioritize calls this per node): the
  // first of those leaving the least. Without branches: which GPU fits and which is tighter are
  // coin flips on a shared cluster, and mispredicting them cost more than the rest of the score.
  int best = -1;
  Units best_left = 0;
  if (node.total_free() >= pod.per_gpu) {
    // Masks rather than conditions (g++ turns those back into branches): all ones where true.
    // A GPU that cannot take the pod gets the key kNone, never below the running minimum (what
    // fits leaves less: per_gpu > 0); the strict < keeps the first of equals.
    constexpr Units kNone = std::numeric_limits<Units>::max();
    Units best_key = kNone;
    Units best_index = -1;
    const std::vector<GpuState>& gpus = node.gpus();
    for (std::size_t i = 0; i < gpus.size(); ++i) {
      const GpuState& state = gpus[i];
      const Units difference = state.capacity - state.used;  // both >= 0: no overflow
      const Units free = difference & ~(difference >> 63);   // GpuState::free()
      const Units left = free - pod.per_gpu;
      const Units fits = -static_cast<Units>(state.healthy) & ~(left >> 63);
      const Units key = (left & fits) | (kNone & ~fits);
      const Units less = -static_cast<Units>(key < best_key);
      best_index = (static_cast<Units>(i) & less) | (best_index & ~less);
      best_key = (key & less) | (best_key & ~less);
    }
    best = static_cast<int>(best_index);
    if (best >= 0) best_left = best_key;
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
