#pragma once
// GPU fragmentation of a node with respect to a target workload (Weng et al., "Beware of
// Fragmentation", USENIX ATC'23): the idle GPU memory that pods of the workload could not use.

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "gpushare/core/node_state.h"
#include "gpushare/core/workload.h"

namespace gpushare::core {

// What is left on a node, as the measure reads it. A small value type: copy it and subtract a
// pod to ask what-if questions.
struct FreeResources {
  std::int64_t cpu_free = 0;      // max() when the node does not track CPU
  std::int64_t memory_free = 0;   // max() when not tracked
  std::string_view gpu_model;     // views the node's spec: keep the node alive
  Units gpu_capacity = 0;         // per GPU
  std::vector<Units> gpu_free;    // per GPU index; unhealthy GPUs count as 0

  static FreeResources of(const NodeState& node);
  Units total_gpu_free() const;
  // Takes the pod's share from each of `gpus` and its CPU/memory; no checks.
  void take(const PodDemand& pod, std::span<const int> gpus);
};

// frag_j(n): idle GPU memory on the node that a pod of shape j cannot use.
//  - j wants no GPU, or the node's model is not allowed for j: all idle GPU memory;
//  - the node can host j (gpu_count GPUs with free >= per_gpu, enough CPU and, if the shape
//    names it, memory): the memory of GPUs with less free than per_gpu;
//  - otherwise: all idle GPU memory.
Units shape_fragmentation(const FreeResources& node, const WorkloadShape& shape);

// F(n) = sum_j weight_j * frag_j(n).
double fragmentation(const FreeResources& node, const TargetWorkload& workload);
inline double fragmentation(const NodeState& node, const TargetWorkload& workload) {
  return fragmentation(FreeResources::of(node), workload);
}

}  // namespace gpushare::core
