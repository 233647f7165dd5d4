#pragma once
// One node's GPUs and what is allocated on them. A value type: copying it yields a
// hypothetical node for what-if questions (preemption, fragmentation look-ahead).

#include <algorithm>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "gpushare/core/pod_demand.h"

namespace gpushare::core {

struct GpuState {
  Units capacity = 0;
  Units used = 0;
  bool healthy = true;

  Units free() const { return used >= capacity ? 0 : capacity - used; }
};

// Static description of a node, as read from its Node object or a trace.
struct NodeSpec {
  std::string name;
  int gpu_count = 0;
  Units memory_per_gpu = 0;  // node total / gpu_count, as the device plugin defines it
  // Each GPU's memory where they differ (DRA devices of several sizes); empty, or not
  // gpu_count long: every GPU has memory_per_gpu.
  std::vector<Units> gpu_capacities;
  std::string gpu_model;  // empty = unknown
  // CPU (milli-cores) and memory (bytes) allocatable; 0 = not tracked. The extender reads them
  // from the Node for scoring only: kube-scheduler's own filter is the authority on them.
  std::int64_t cpu_milli = 0;
  std::int64_t memory = 0;
  std::string address;         // for display only
  bool unschedulable = false;  // cordoned; shown, not enforced (kube-scheduler filters it)
  // Non-empty when the node's GPU resources are inconsistent (e.g. memory but no GPU count):
  // the node then holds no pods and this text is the filter's reason.
  std::string misconfiguration;

  friend bool operator==(const NodeSpec&, const NodeSpec&) = default;
};

class NodeState {
 public:
  NodeState() = default;
  explicit NodeState(NodeSpec spec);

  const NodeSpec& spec() const { return spec_; }
  const std::string& name() const { return spec_.name; }
  const std::vector<GpuState>& gpus() const { return gpus_; }
  int gpu_count() const { return static_cast<int>(gpus_.size()); }

  void set_unhealthy(const std::vector<int>& indices);

  // Usage accounting. `gpu` < 0 (or beyond the node's GPUs) means "on this node, GPU unknown"
  // (a pod bound without a valid index). Each amount is counted as charge_for(gpu, amount).
  void add_usage(int gpu, Units amount);
  void remove_usage(int gpu, Units amount);
  // What one pod's claim of `amount` counts for: the claim, but never more than that GPU (or,
  // without a valid index, the whole node) can hold, and never negative. A claim beyond that
  // comes from a broken or hostile annotation; counting it in full would overflow the sums
  // (a GPU showing -2 used, then offered again) while the GPU can at most be full.
  Units charge_for(int gpu, Units amount) const;
  void add_cpu_mem(std::int64_t cpu_milli, std::int64_t memory);
  void remove_cpu_mem(std::int64_t cpu_milli, std::int64_t memory);

  Units unindexed_used() const { return unindexed_used_; }
  std::int64_t cpu_used() const { return cpu_used_; }
  std::int64_t memory_used() const { return memory_used_; }
  // Free CPU (milli-cores) and memory; INT64_MAX when not tracked. Inline: every fit check reads
  // them.
  std::int64_t cpu_free() const {
    if (spec_.cpu_milli <= 0) return std::numeric_limits<std::int64_t>::max();
    return std::max<std::int64_t>(0, spec_.cpu_milli - cpu_used_);
  }
  std::int64_t memory_free() const {
    if (spec_.memory <= 0) return std::numeric_limits<std::int64_t>::max();
    return std::max<std::int64_t>(0, spec_.memory - memory_used_);
  }

  Units total_capacity() const { return total_capacity_; }
  Units total_used() const { return total_used_; }
  // Free memory on healthy GPUs, less what unindexed pods hold.
  Units total_free() const { return total_free_; }
  // Largest free amount on one healthy GPU, capped by total_free(): the biggest pod that fits.
  Units largest_free() const { return largest_free_; }
  int healthy_gpu_count() const { return healthy_count_; }
  // Healthy GPUs with nothing on them.
  int wholly_free_gpu_count() const { return wholly_free_count_; }

  // Increases on every change; caches keyed by (node, generation) stay valid until it moves.
  std::uint64_t generation() const { return generation_; }
  // Continues the generation count of the state this one replaces, so caches never see a reuse.
  void continue_generation_from(const NodeState& previous) {
    generation_ = previous.generation_ + generation_ + 1;
  }

 private:
  void recompute();

  NodeSpec spec_;
  std::vector<GpuState> gpus_;
  Units unindexed_used_ = 0;
  std::int64_t cpu_used_ = 0;
  std::int64_t memory_used_ = 0;
  // Derived, refreshed by recompute() after every change.
  Units total_capacity_ = 0;
  Units total_used_ = 0;
  Units total_free_ = 0;
  Units largest_free_ = 0;
  int healthy_count_ = 0;
  int wholly_free_count_ = 0;
  std::uint64_t generation_ = 0;
};

}  // namespace gpushare::core
