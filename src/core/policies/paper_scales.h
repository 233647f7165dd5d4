#pragma once
// Private to src/core/policies: the paper's normalisers for best-fit and dot-product. The largest
// node has 128 cores and 8 GPUs; GPU amounts are scaled by the node's GPU capacity, so that a GPU
// of 1000 units gives the paper's numbers and other units (GiB in the service) the same
// proportions.

#include <algorithm>

#include "gpushare/core/node_state.h"
#include "gpushare/core/pod_demand.h"

namespace gpushare::core::paper_scales {

inline constexpr double kMaxSpecCpuMilli = 128000;
inline constexpr double kMaxSpecGpus = 8;

// CPU left after placement; 0 when the node does not track CPU (the term then drops out).
inline double cpu_left_after(const NodeState& node, const PodDemand& pod) {
  if (node.spec().cpu_milli <= 0) return 0;
  return static_cast<double>(node.cpu_free() - pod.cpu_milli);
}

inline double gpu_scale(const NodeState& node) {
  return kMaxSpecGpus * static_cast<double>(std::max<Units>(1, node.spec().memory_per_gpu));
}

}  // namespace gpushare::core::paper_scales
