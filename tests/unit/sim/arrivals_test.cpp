#include "gpushare/sim/arrivals.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>

namespace gpushare::sim {
namespace {

std::vector<TracePod> pods_of(std::vector<core::Units> gpu_milli) {
  std::vector<TracePod> pods;
  for (std::size_t i = 0; i < gpu_milli.size(); ++i) {
    TracePod pod;
    pod.name = "pod-" + std::to_string(100 + i);
    pod.demand.per_gpu = gpu_milli[i];
    pod.demand.gpu_count = gpu_milli[i] > 0 ? 1 : 0;
    pods.push_back(std::move(pod));
  }
  return pods;
}

core::Units demand_of(const std::vector<TracePod>& pods, const std::vector<std::size_t>& order) {
  core::Units total = 0;
  for (std::size_t i : order) total += pods[i].demand.total_gpu();
  return total;
}

TEST(SeededRandom, IsDeterministicAndBounded) {
  SeededRandom a(42);
  SeededRandom b(42);
  for (int i = 0; i < 100; ++i) {
    const auto value = a.below(7);
    EXPECT_LT(value, 7u);
    EXPECT_EQ(value, b.below(7));
  }
}

TEST(Arrivals, ShuffleTheWholeTraceThenTopUpWithinTheLimit) {
  const auto pods = pods_of({500, 1000, 0, 250, 750, 1000, 300});  // 3800 units
  const auto order = arrival_order(pods, 42, 2.0, 4000);           // up to 8000
  ASSERT_GE(order.size(), pods.size());
  // The first |trace| arrivals are a permutation of the trace.
  std::vector<std::size_t> head(order.begin(), order.begin() + static_cast<long>(pods.size()));
  std::sort(head.begin(), head.end());
  std::vector<std::size_t> all(pods.size());
  std::iota(all.begin(), all.end(), std::size_t{0});
  EXPECT_EQ(head, all);
  // Arrived demand stays within the limit, and the next draw would have crossed it.
  EXPECT_LE(demand_of(pods, order), 8000);
  EXPECT_GT(demand_of(pods, order), 8000 - 1000);  // the draw that stopped it was <= 1000
  EXPECT_EQ(arrival_order(pods, 42, 2.0, 4000), order);
  EXPECT_NE(arrival_order(pods, 43, 2.0, 4000), order);
}

TEST(Arrivals, StopBeforeThePodThatWouldCrossTheLimit) {
  const auto pods = pods_of({1000, 1000, 1000, 1000});
  const auto order = arrival_order(pods, 1, 0.5, 4000);
  EXPECT_EQ(order.size(), 2u);
  EXPECT_TRUE(arrival_order(pods_of({0, 0}), 1, 1.3, 4000).size() == 2u);  // no GPU: no top-up
}

TEST(Arrivals, SortByNameBeforeShufflingSoFileOrderDoesNotMatter) {
  auto pods = pods_of({100, 200, 300, 400, 500});
  auto reversed = pods;
  std::reverse(reversed.begin(), reversed.end());
  const auto a = arrival_order(pods, 5, 1.0, 100000);
  const auto b = arrival_order(reversed, 5, 1.0, 100000);
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t i = 0; i < a.size(); ++i) EXPECT_EQ(pods[a[i]].name, reversed[b[i]].name);
}

TEST(NodeTieOrder, IsASeededPermutation) {
  const auto order = node_tie_order(50, 42);
  auto sorted = order;
  std::sort(sorted.begin(), sorted.end());
  std::vector<std::size_t> all(50);
  std::iota(all.begin(), all.end(), std::size_t{0});
  EXPECT_EQ(sorted, all);
  EXPECT_NE(order, all);
  EXPECT_EQ(node_tie_order(50, 42), order);
  EXPECT_NE(node_tie_order(50, 43), order);
}

}  // namespace
}  // namespace gpushare::sim
