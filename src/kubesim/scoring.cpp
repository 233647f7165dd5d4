#include "gpushare/kubesim/scoring.h"

#include <algorithm>
#include <cmath>

namespace gpushare::kubesim {

std::int64_t least_requested_score(std::int64_t requested, std::int64_t capacity) {
  if (capacity == 0 || requested > capacity) return 0;
  return ((capacity - requested) * kMaxNodeScore) / capacity;
}

std::int64_t most_requested_score(std::int64_t requested, std::int64_t capacity,
                                  KubeVersion version) {
  if (capacity == 0) return 0;
  if (requested > capacity) {
    // 1.20 gave such a node 0; later versions count it as full (pods without requests get
    // non-zero defaults and may push the sum past allocatable).
    if (version == KubeVersion::k1_20) return 0;
    requested = capacity;
  }
  return (requested * kMaxNodeScore) / capacity;
}

std::int64_t broken_linear(std::span<const ShapePoint> shape, std::int64_t p) {
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (p <= shape[i].utilization) {
      if (i == 0) return shape[0].score;
      return shape[i - 1].score + (shape[i].score - shape[i - 1].score) *
                                      (p - shape[i - 1].utilization) /
                                      (shape[i].utilization - shape[i - 1].utilization);
    }
  }
  return shape.empty() ? 0 : shape.back().score;
}

namespace {

std::int64_t ratio_resource_score(std::span<const ShapePoint> scaled, std::int64_t requested,
                                  std::int64_t capacity, KubeVersion version) {
  constexpr std::int64_t kMaxUtilization = 100;
  if (capacity == 0 || requested > capacity) return broken_linear(scaled, kMaxUtilization);
  if (version == KubeVersion::k1_20) {
    return broken_linear(scaled,
                         kMaxUtilization - (capacity - requested) * kMaxUtilization / capacity);
  }
  return broken_linear(scaled, requested * kMaxUtilization / capacity);
}

}  // namespace

std::int64_t resource_strategy_score(ScoringStrategy strategy,
                                     std::span<const ResourceWeight> resources,
                                     std::span<const ShapePoint> shape,
                                     std::span<const ResourceUse> uses, KubeVersion version) {
  std::vector<ShapePoint> scaled(shape.begin(), shape.end());
  for (ShapePoint& point : scaled) point.score *= kMaxNodeScore / kMaxCustomPriorityScore;
  std::int64_t node_score = 0;
  std::int64_t weight_sum = 0;
  for (std::size_t i = 0; i < resources.size() && i < uses.size(); ++i) {
    const ResourceUse& use = uses[i];
    if (version == KubeVersion::kCurrent && use.allocatable == 0) continue;
    const std::int64_t weight = resources[i].weight;
    switch (strategy) {
      case ScoringStrategy::kLeastAllocated:
        node_score += least_requested_score(use.requested, use.allocatable) * weight;
        weight_sum += weight;
        break;
      case ScoringStrategy::kMostAllocated:
        node_score += most_requested_score(use.requested, use.allocatable, version) * weight;
        weight_sum += weight;
        break;
      case ScoringStrategy::kRequestedToCapacityRatio: {
        // Only resources that score above 0 count towards the average (both versions).
        const std::int64_t score =
            ratio_resource_score(scaled, use.requested, use.allocatable, version);
        if (score > 0) {
          node_score += score * weight;
          weight_sum += weight;
        }
        break;
      }
    }
  }
  if (weight_sum == 0) return 0;
  if (strategy == ScoringStrategy::kRequestedToCapacityRatio) {
    return static_cast<std::int64_t>(
        std::round(static_cast<double>(node_score) / static_cast<double>(weight_sum)));
  }
  return node_score / weight_sum;
}

std::int64_t balanced_allocation_score(std::span<const ResourceUse> uses, KubeVersion version) {
  if (version == KubeVersion::k1_20) {
    const auto fraction = [](const ResourceUse& use) {
      if (use.allocatable == 0) return 1.0;
      return static_cast<double>(use.requested) / static_cast<double>(use.allocatable);
    };
    const double cpu = uses.size() > 0 ? fraction(uses[0]) : 1.0;
    const double memory = uses.size() > 1 ? fraction(uses[1]) : 1.0;
    if (cpu >= 1 || memory >= 1) return 0;
    return static_cast<std::int64_t>((1 - std::abs(cpu - memory)) *
                                     static_cast<double>(kMaxNodeScore));
  }
  std::vector<double> fractions;
  double total = 0;
  for (const ResourceUse& use : uses) {
    if (use.allocatable == 0) continue;
    const double fraction =
        std::min(1.0, static_cast<double>(use.requested) / static_cast<double>(use.allocatable));
    total += fraction;
    fractions.push_back(fraction);
  }
  double deviation = 0;
  if (fractions.size() == 2) {
    deviation = std::abs((fractions[0] - fractions[1]) / 2);
  } else if (fractions.size() > 2) {
    const double mean = total / static_cast<double>(fractions.size());
    double sum = 0;
    for (double fraction : fractions) sum += (fraction - mean) * (fraction - mean);
    deviation = std::sqrt(sum / static_cast<double>(fractions.size()));
  }
  return static_cast<std::int64_t>((1 - deviation) * static_cast<double>(kMaxNodeScore));
}

std::size_t feasible_nodes_to_find(std::size_t all_nodes, int percentage) {
  constexpr std::size_t kMinFeasibleNodesToFind = 100;
  constexpr int kMinFeasibleNodesPercentageToFind = 5;
  if (all_nodes < kMinFeasibleNodesToFind || percentage >= 100) return all_nodes;
  int adaptive = percentage;
  if (adaptive <= 0) {
    adaptive = 50 - static_cast<int>(all_nodes / 125);
    adaptive = std::max(adaptive, kMinFeasibleNodesPercentageToFind);
  }
  const std::size_t found = all_nodes * static_cast<std::size_t>(adaptive) / 100;
  return std::max(found, kMinFeasibleNodesToFind);
}

}  // namespace gpushare::kubesim
