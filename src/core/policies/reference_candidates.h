#pragma once
// Private to src/core/policies: the reference computation's choice of GPU for a pod that shares
// one, as fgd and fgd-plus make it (each scores a node after placement its own way).

#include <algorithm>
#include <utility>
#include <vector>

#include "gpushare/core/fit.h"
#include "gpushare/core/fragmentation.h"

namespace gpushare::core {

// Each GPU that fits `pod`, the first of each free amount (GPUs with equal free memory leave
// equal nodes after placement), scored by `score(after)` on the node `before` with the pod's
// CPU and memory and its GPU memory on that GPU taken: the best GPU (the lower index on a tie)
// and its score, or -1 if none fits.
template <typename Score>
std::pair<int, double> best_reference_gpu(const NodeState& node, const PodDemand& pod,
                                          const FreeResources& before, Score score) {
  FreeResources after = before;
  after.take(pod, {});  // CPU and memory once; the GPU one candidate at a time
  std::vector<Units> tried;
  int best_gpu = -1;
  double best_score = 0;
  for (int gpu : gpus_that_fit(node, pod)) {
    const auto index = static_cast<std::size_t>(gpu);
    const Units free = before.gpu_free[index];
    if (std::find(tried.begin(), tried.end(), free) != tried.end()) continue;
    tried.push_back(free);
    after.gpu_free[index] = free - pod.per_gpu;
    const double candidate = score(static_cast<const FreeResources&>(after));
    after.gpu_free[index] = free;
    if (best_gpu < 0 || candidate > best_score) {
      best_gpu = gpu;
      best_score = candidate;
    }
  }
  return {best_gpu, best_score};
}

// The score of Policy::reference_place, for the nodes beyond NodeFragmentation's capacities.
template <typename Policy>
std::optional<double> reference_score(const Policy& policy, const NodeState& node,
                                      const PodDemand& pod) {
  const auto placement = policy.reference_place(node, pod);
  return placement ? std::optional<double>(placement->score) : std::nullopt;
}

}  // namespace gpushare::core
