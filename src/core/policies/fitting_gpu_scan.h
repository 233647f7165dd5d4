#pragma once
// Private to src/core/policies: the one fitting GPU a best-fit or worst-fit policy takes.

#include <cstddef>

#include "gpushare/core/node_state.h"

namespace gpushare::core {

// Among the GPUs gpus_that_fit() would list (healthy, at least `per_gpu` free), scanned in place
// because prioritize calls this for every offered node: the one whose free memory `prefer`s over
// every other's (strictly, so a tie keeps the lower index); -1 if none fits.
template <typename Prefer>
int preferred_fitting_gpu(const NodeState& node, Units per_gpu, Prefer prefer) {
  int best = -1;
  Units best_free = 0;
  if (node.total_free() < per_gpu) return best;
  for (int gpu = 0; gpu < node.gpu_count(); ++gpu) {
    const GpuState& state = node.gpus()[static_cast<std::size_t>(gpu)];
    if (!state.healthy || state.free() < per_gpu) continue;
    if (best < 0 || prefer(state.free(), best_free)) {
      best = gpu;
      best_free = state.free();
    }
  }
  return best;
}

}  // namespace gpushare::core
