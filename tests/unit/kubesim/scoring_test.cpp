// kube-scheduler's scoring arithmetic, against values computed by hand from its Go source.

#include "gpushare/kubesim/scoring.h"

#include <gtest/gtest.h>

namespace gpushare::kubesim {
namespace {

constexpr auto k120 = KubeVersion::k1_20;
constexpr auto kNow = KubeVersion::kCurrent;
constexpr std::int64_t kGi = 1024LL * 1024 * 1024;

TEST(LeastRequested, IntegerArithmeticOfTheGoSource) {
  EXPECT_EQ(least_requested_score(3000, 8000), 62);  // 5000 * 100 / 8000 = 62.5
  EXPECT_EQ(least_requested_score(0, 8000), 100);
  EXPECT_EQ(least_requested_score(9000, 8000), 0);  // over capacity
  EXPECT_EQ(least_requested_score(1, 0), 0);        // no capacity
}

TEST(MostRequested, OverCapacityDiffersBetweenVersions) {
  EXPECT_EQ(most_requested_score(3000, 8000, kNow), 37);
  EXPECT_EQ(most_requested_score(9000, 8000, k120), 0);
  EXPECT_EQ(most_requested_score(9000, 8000, kNow), 100);  // capped at capacity
  EXPECT_EQ(most_requested_score(5, 0, kNow), 0);
}

TEST(BrokenLinear, InterpolatesWithGoIntegerDivision) {
  const std::vector<ShapePoint> packing{{0, 0}, {100, 100}};
  const std::vector<ShapePoint> spreading{{0, 100}, {100, 0}};
  EXPECT_EQ(broken_linear(packing, 37), 37);
  EXPECT_EQ(broken_linear(spreading, 37), 63);  // 100 + (-100 * 37) / 100
  const std::vector<ShapePoint> steps{{20, 10}, {60, 90}};
  EXPECT_EQ(broken_linear(steps, 5), 10);   // below the first point
  EXPECT_EQ(broken_linear(steps, 50), 70);  // 10 + 80 * 30 / 40
  EXPECT_EQ(broken_linear(steps, 99), 90);  // past the last point
}

TEST(ResourceStrategy, LeastAllocatedWeightedAverage) {
  const std::vector<ResourceWeight> even{{"cpu", 1}, {"memory", 1}};
  const std::vector<ResourceUse> uses{{8000, 2000}, {16 * kGi, 12 * kGi}};  // 75 and 25
  EXPECT_EQ(resource_strategy_score(ScoringStrategy::kLeastAllocated, even, {}, uses, kNow), 50);
  const std::vector<ResourceWeight> cpu_heavy{{"cpu", 2}, {"memory", 1}};
  EXPECT_EQ(resource_strategy_score(ScoringStrategy::kLeastAllocated, cpu_heavy, {}, uses, kNow),
            58);  // 175 / 3
}

TEST(ResourceStrategy, AResourceTheNodeLacksIsSkippedSince123) {
  const std::vector<ResourceWeight> resources{{"cpu", 1}, {"aliyun.com/gpu-mem", 1}};
  const std::vector<ResourceUse> uses{{8000, 2000}, {0, 500}};
  EXPECT_EQ(resource_strategy_score(ScoringStrategy::kLeastAllocated, resources, {}, uses, kNow),
            75);
  EXPECT_EQ(resource_strategy_score(ScoringStrategy::kLeastAllocated, resources, {}, uses, k120),
            37);  // (75 + 0) / 2
}

TEST(ResourceStrategy, RequestedToCapacityRatioRoundsUtilizationPerVersion) {
  const std::vector<ResourceWeight> gpu{{"aliyun.com/gpu-mem", 1}};
  const std::vector<ShapePoint> packing{{0, 0}, {100, 10}};  // scores 0..10, scaled x10
  const std::vector<ResourceUse> uses{{8000, 3333}};
  // current: 3333 * 100 / 8000 = 41; 1.20: 100 - 4667 * 100 / 8000 = 100 - 58 = 42.
  EXPECT_EQ(
      resource_strategy_score(ScoringStrategy::kRequestedToCapacityRatio, gpu, packing, uses, kNow),
      41);
  EXPECT_EQ(
      resource_strategy_score(ScoringStrategy::kRequestedToCapacityRatio, gpu, packing, uses, k120),
      42);
}

TEST(ResourceStrategy, RequestedToCapacityRatioOnANodeWithoutTheResource) {
  // 1.20 scores a node without gpu-mem as fully utilised: the packing shape's top score. Later
  // versions skip the resource, so the node scores 0.
  const std::vector<ResourceWeight> gpu{{"aliyun.com/gpu-mem", 1}};
  const std::vector<ShapePoint> packing{{0, 0}, {100, 10}};
  const std::vector<ResourceUse> none{{0, 0}};
  EXPECT_EQ(
      resource_strategy_score(ScoringStrategy::kRequestedToCapacityRatio, gpu, packing, none, k120),
      100);
  EXPECT_EQ(
      resource_strategy_score(ScoringStrategy::kRequestedToCapacityRatio, gpu, packing, none, kNow),
      0);
  // Only resources scoring above 0 count: an empty node averages over nothing.
  const std::vector<ResourceUse> empty{{8000, 0}};
  EXPECT_EQ(resource_strategy_score(ScoringStrategy::kRequestedToCapacityRatio, gpu, packing, empty,
                                    kNow),
            0);
}

TEST(BalancedAllocation, OldFormulaIsOneMinusTheDifference) {
  const std::vector<ResourceUse> uses{{8000, 4000}, {16 * kGi, 4 * kGi}};  // 0.5 and 0.25
  EXPECT_EQ(balanced_allocation_score(uses, k120), 75);
  const std::vector<ResourceUse> full_cpu{{8000, 8000}, {16 * kGi, 4 * kGi}};
  EXPECT_EQ(balanced_allocation_score(full_cpu, k120), 0);  // a fraction reached 1
}

TEST(BalancedAllocation, CurrentFormulaIsOneMinusTheStandardDeviation) {
  const std::vector<ResourceUse> uses{{8000, 4000}, {16 * kGi, 4 * kGi}};
  EXPECT_EQ(balanced_allocation_score(uses, kNow), 87);                     // std = 0.125
  const std::vector<ResourceUse> over{{8000, 12000}, {16 * kGi, 8 * kGi}};  // 1.5 capped to 1, 0.5
  EXPECT_EQ(balanced_allocation_score(over, kNow), 75);
  const std::vector<ResourceUse> three{{10, 2}, {10, 5}, {10, 8}};  // std of .2 .5 .8 = .2449
  EXPECT_EQ(balanced_allocation_score(three, kNow), 75);
  const std::vector<ResourceUse> one_missing{{10, 2}, {0, 0}};  // a single fraction: std 0
  EXPECT_EQ(balanced_allocation_score(one_missing, kNow), 100);
}

TEST(FeasibleNodesToFind, AdaptivePercentage) {
  EXPECT_EQ(feasible_nodes_to_find(50, 0), 50u);       // under 100 nodes: all
  EXPECT_EQ(feasible_nodes_to_find(150, 0), 100u);     // 49 % = 73, at least 100
  EXPECT_EQ(feasible_nodes_to_find(1213, 0), 497u);    // 50 - 9 = 41 %
  EXPECT_EQ(feasible_nodes_to_find(5000, 0), 500u);    // 10 %
  EXPECT_EQ(feasible_nodes_to_find(20000, 0), 1000u);  // floor of 5 %
  EXPECT_EQ(feasible_nodes_to_find(1213, 100), 1213u);
  EXPECT_EQ(feasible_nodes_to_find(1213, 30), 363u);
}

TEST(ExtenderFactor, TenPointsPerExtenderLevel) {
  EXPECT_EQ(kExtenderScoreFactor, 10);
}

}  // namespace
}  // namespace gpushare::kubesim
