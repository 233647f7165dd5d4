#pragma once
// kube-scheduler's node-resource arithmetic, as its Go source computes it: the resource-fit
// filter, the NodeResourcesFit scoring strategies, NodeResourcesBalancedAllocation, the
// adaptive percentageOfNodesToScore and the extender score factor. Pure integer (and, where Go
// uses float64, double) functions, so unit tests can check hand-computed values.
//
// Two generations are modelled, because the formulas changed and the project's placement was
// measured through both:
//  - k1_20: kube-scheduler 1.20 (NodeResourcesLeastAllocated / MostAllocated /
//    RequestedToCapacityRatio as separate plugins; BalancedAllocation = 1 - |cpu - memory|
//    over non-zero requests, 0 once either fraction reaches 1);
//  - kCurrent: 1.23 and later (one NodeResourcesFit plugin with a scoring strategy; resources a
//    node does not have are skipped; BalancedAllocation = 1 - standard deviation of the
//    fractions over actual requests, fractions capped at 1).

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace gpushare::kubesim {

enum class KubeVersion { k1_20, kCurrent };

inline constexpr std::int64_t kMaxNodeScore = 100;        // framework.MaxNodeScore
inline constexpr std::int64_t kMaxExtenderPriority = 10;  // extenderv1.MaxExtenderPriority
inline constexpr std::int64_t kMaxCustomPriorityScore =
    10;  // RequestedToCapacityRatio shape scores
// What kube-scheduler assumes for scoring when a container requests no CPU or memory.
inline constexpr std::int64_t kDefaultMilliCpuRequest = 100;
inline constexpr std::int64_t kDefaultMemoryRequest = 200LL * 1024 * 1024;

enum class ScoringStrategy { kLeastAllocated, kMostAllocated, kRequestedToCapacityRatio };

struct ResourceWeight {
  std::string name;  // "cpu", "memory" or an extended resource such as aliyun.com/gpu-mem
  std::int64_t weight = 1;
  friend bool operator==(const ResourceWeight&, const ResourceWeight&) = default;
};

struct ShapePoint {
  std::int64_t utilization = 0;  // 0..100
  std::int64_t score = 0;        // 0..10 (scaled x10 to the node score range)
  friend bool operator==(const ShapePoint&, const ShapePoint&) = default;
};

// One resource of one node as a scorer sees it.
struct ResourceUse {
  std::int64_t allocatable = 0;
  std::int64_t requested = 0;  // already including the pod being scheduled
};

// The per-resource scores (0..100).
std::int64_t least_requested_score(std::int64_t requested, std::int64_t capacity);
std::int64_t most_requested_score(std::int64_t requested, std::int64_t capacity,
                                  KubeVersion version);
// helper.BuildBrokenLinearFunction over the shape with scores already scaled to 0..100.
std::int64_t broken_linear(std::span<const ShapePoint> scaled_shape, std::int64_t utilization);

// A NodeResourcesFit-style scorer over `uses` (one per resource, in the order of `resources`).
// Resources with allocatable 0 are skipped in kCurrent (kube 1.23+) and counted in k1_20.
std::int64_t resource_strategy_score(ScoringStrategy strategy,
                                     std::span<const ResourceWeight> resources,
                                     std::span<const ShapePoint> shape,
                                     std::span<const ResourceUse> uses, KubeVersion version);

// NodeResourcesBalancedAllocation. For k1_20 only cpu and memory (the first two `uses`) count.
std::int64_t balanced_allocation_score(std::span<const ResourceUse> uses, KubeVersion version);

// numFeasibleNodesToFind: how many feasible nodes kube-scheduler looks for before scoring.
// percentage <= 0 means the adaptive default (50 % - 1 % per 125 nodes, at least 5 %), and
// never fewer than 100 nodes.
std::size_t feasible_nodes_to_find(std::size_t all_nodes, int percentage);

// An extender's 0..10 score counts this many times its weight in the node's total.
inline constexpr std::int64_t kExtenderScoreFactor = kMaxNodeScore / kMaxExtenderPriority;

}  // namespace gpushare::kubesim
