#include "gpushare/core/node_state.h"

#include <algorithm>
#include <limits>
#include <utility>

namespace gpushare::core {
namespace {

// Usage sums non-negative amounts read from outside; saturate rather than wrap to negative.
Units add_saturating(Units a, Units b) {
  Units sum = 0;
  return __builtin_add_overflow(a, b, &sum) ? std::numeric_limits<Units>::max() : sum;
}

}  // namespace

namespace {
// Each pod's request fits int64, but a node's sum might not (absurd requests on pods bound with
// spec.nodeName, which no scheduler checked): saturate instead of overflowing. A saturated node
// has nothing free, which is true enough; removals then undercount until the node is rebuilt.
std::int64_t saturating_add(std::int64_t a, std::int64_t b) {
  std::int64_t sum = 0;
  if (!__builtin_add_overflow(a, b, &sum)) return sum;
  return b > 0 ? std::numeric_limits<std::int64_t>::max()
               : std::numeric_limits<std::int64_t>::min();
}
}  // namespace

NodeState::NodeState(NodeSpec spec) : spec_(std::move(spec)) {
  spec_.gpu_count = std::max(0, spec_.gpu_count);
  spec_.memory_per_gpu = std::max<Units>(0, spec_.memory_per_gpu);
  if (!spec_.misconfiguration.empty()) spec_.gpu_count = 0;
  gpus_.assign(static_cast<std::size_t>(spec_.gpu_count), GpuState{spec_.memory_per_gpu, 0, true});
  if (spec_.gpu_capacities.size() == gpus_.size()) {
    for (std::size_t i = 0; i < gpus_.size(); ++i)
      gpus_[i].capacity = std::max<Units>(0, spec_.gpu_capacities[i]);
  } else {
    spec_.gpu_capacities.clear();
  }
  recompute();
}

void NodeState::set_unhealthy(const std::vector<int>& indices) {
  for (auto& gpu : gpus_) gpu.healthy = true;
  for (int index : indices) {
    if (index >= 0 && index < gpu_count()) gpus_[static_cast<std::size_t>(index)].healthy = false;
  }
  recompute();
}

Units NodeState::charge_for(int gpu, Units amount) const {
  const Units limit = gpu >= 0 && gpu < gpu_count() ? gpus_[static_cast<std::size_t>(gpu)].capacity
                                                    : total_capacity_;
  return std::clamp<Units>(amount, 0, limit);
}

void NodeState::add_usage(int gpu, Units amount) {
  amount = charge_for(gpu, amount);
  if (gpu >= 0 && gpu < gpu_count()) {
    auto& used = gpus_[static_cast<std::size_t>(gpu)].used;
    used = add_saturating(used, amount);
  } else {
    unindexed_used_ = add_saturating(unindexed_used_, amount);
  }
  recompute();
}

void NodeState::remove_usage(int gpu, Units amount) {
  amount = charge_for(gpu, amount);  // what add_usage counted (capacity does not change in between)
  if (gpu >= 0 && gpu < gpu_count()) {
    auto& used = gpus_[static_cast<std::size_t>(gpu)].used;
    used = std::max<Units>(0, used - amount);
  } else {
    unindexed_used_ = std::max<Units>(0, unindexed_used_ - amount);
  }
  recompute();
}

void NodeState::add_cpu_mem(std::int64_t cpu_milli, std::int64_t memory) {
  cpu_used_ = saturating_add(cpu_used_, cpu_milli);
  memory_used_ = saturating_add(memory_used_, memory);
  ++generation_;
}

void NodeState::remove_cpu_mem(std::int64_t cpu_milli, std::int64_t memory) {
  cpu_used_ = std::max<std::int64_t>(0, cpu_used_ - cpu_milli);
  memory_used_ = std::max<std::int64_t>(0, memory_used_ - memory);
  ++generation_;
}

void NodeState::recompute() {
  total_capacity_ = 0;
  total_used_ = unindexed_used_;
  Units healthy_free = 0;
  Units largest = 0;
  healthy_count_ = 0;
  wholly_free_count_ = 0;
  for (const auto& gpu : gpus_) {
    total_capacity_ = add_saturating(total_capacity_, gpu.capacity);
    total_used_ = add_saturating(total_used_, gpu.used);
    if (!gpu.healthy) continue;
    ++healthy_count_;
    healthy_free = add_saturating(healthy_free, gpu.free());
    largest = std::max(largest, gpu.free());
    if (gpu.used == 0) ++wholly_free_count_;
  }
  total_free_ = std::max<Units>(0, healthy_free - unindexed_used_);
  largest_free_ = std::min(largest, total_free_);
  ++generation_;
}

}  // namespace gpushare::core
