#include "gpushare/core/fragmentation.h"

#include <algorithm>
#include <limits>

namespace gpushare::core {

FreeResources FreeResources::of(const NodeState& node) {
  FreeResources free;
  free.cpu_free = node.cpu_free();
  free.memory_free = node.memory_free();
  free.gpu_model = node.spec().gpu_model;
  free.gpu_capacity = node.spec().memory_per_gpu;
  free.gpu_free.reserve(node.gpus().size());
  for (const auto& gpu : node.gpus()) free.gpu_free.push_back(gpu.healthy ? gpu.free() : 0);
  return free;
}

Units FreeResources::total_gpu_free() const {
  Units total = 0;
  for (Units g : gpu_free) total += g;
  return total;
}

void FreeResources::take(const PodDemand& pod, std::span<const int> gpus) {
  constexpr auto untracked = std::numeric_limits<std::int64_t>::max();
  if (cpu_free != untracked) cpu_free -= pod.cpu_milli;
  if (memory_free != untracked) memory_free -= pod.memory;
  if (!pod.wants_gpu()) return;
  for (int gpu : gpus) gpu_free[static_cast<std::size_t>(gpu)] -= pod.per_gpu;
}

namespace {

// frag_j given the node's total idle GPU memory, computed once per node by the caller.
Units shape_fragmentation(const FreeResources& node, const WorkloadShape& shape, Units total) {
  if (!shape.wants_gpu() || node.cpu_free < shape.cpu_milli ||
      node.memory_free < shape.memory || !shape.allows_model(node.gpu_model)) {
    return total;
  }
  const Units need = shape.per_gpu_on(node.gpu_capacity);
  int big_enough = 0;
  Units too_small = 0;
  for (Units g : node.gpu_free) {
    if (g >= need) {
      ++big_enough;
    } else {
      too_small += g;
    }
  }
  return big_enough >= shape.gpu_count ? too_small : total;
}

}  // namespace

Units shape_fragmentation(const FreeResources& node, const WorkloadShape& shape) {
  return shape_fragmentation(node, shape, node.total_gpu_free());
}

double fragmentation(const FreeResources& node, const TargetWorkload& workload) {
  const Units total = node.total_gpu_free();
  if (total == 0) return 0;  // nothing idle, nothing fragmented
  double sum = 0;
  for (const auto& [shape, weight] : workload) {
    sum += weight * static_cast<double>(shape_fragmentation(node, shape, total));
  }
  return sum;
}

}  // namespace gpushare::core
