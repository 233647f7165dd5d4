// binpack's GPU scan is branch-free (masks instead of conditions); it must choose the GPU and
// give the score the former conditional scan gave, bit for bit, including amounts near int64's
// range and GPUs that are unhealthy, full or over-full.

#include <gtest/gtest.h>

#include <random>

#include "gpushare/core/fit.h"
#include "gpushare/core/policies/binpack.h"

namespace gpushare::core {
namespace {

// The scan without the fast path (a reference), for a sharing pod that check_fit accepts.
std::pair<int, double> former_binpack(const NodeState& node, const PodDemand& pod) {
  const double node_capacity = static_cast<double>(std::max<Units>(1, node.total_capacity()));
  const double node_free_after = static_cast<double>(node.total_free() - pod.total_gpu());
  const double node_fill = 1.0 - node_free_after / node_capacity;
  int best = -1;
  Units best_left = 0;
  if (node.total_free() >= pod.per_gpu) {
    for (int i = 0; i < node.gpu_count(); ++i) {
      const GpuState& state = node.gpus()[static_cast<std::size_t>(i)];
      if (!state.healthy || state.free() < pod.per_gpu) continue;
      const Units left = state.free() - pod.per_gpu;
      if (best < 0 || left < best_left) {
        best = i;
        best_left = left;
      }
    }
  }
  const double gpu_capacity = static_cast<double>(std::max<Units>(1, node.spec().memory_per_gpu));
  return {best, (1.0 - static_cast<double>(best_left) / gpu_capacity) + node_fill / 1024.0};
}

TEST(BinpackScan, ChoosesAsTheConditionalScan) {
  std::mt19937_64 rng(5);
  const BinpackPolicy policy;
  int placed = 0;
  for (int round = 0; round < 40000; ++round) {
    const bool huge = round % 4 == 0;
    NodeSpec spec;
    spec.name = "n";
    spec.gpu_count = static_cast<int>(rng() % 17);
    spec.memory_per_gpu =
        huge ? kMaxGpuMemoryClaim >> (rng() % 8) : 1 + static_cast<Units>(rng() % 40);
    NodeState node(spec);
    for (int pods = static_cast<int>(rng() % 24); pods > 0; --pods) {
      const Units amount =
          huge ? static_cast<Units>(rng() % static_cast<std::uint64_t>(spec.memory_per_gpu))
               : 1 + static_cast<Units>(rng() % 12);
      node.add_usage(static_cast<int>(rng() % 18) - 1, amount);
    }
    if (rng() % 3 == 0)
      node.set_unhealthy({static_cast<int>(rng() % 16), static_cast<int>(rng() % 16)});
    PodDemand pod;
    pod.per_gpu =
        huge ? 1 + static_cast<Units>(rng() % static_cast<std::uint64_t>(spec.memory_per_gpu))
             : 1 + static_cast<Units>(rng() % 20);
    const auto placement = policy.place(node, pod);
    ASSERT_EQ(placement.has_value(), check_fit(node, pod).fits()) << round;
    if (!placement) continue;
    ++placed;
    const auto [gpu, score] = former_binpack(node, pod);
    ASSERT_EQ(placement->gpus, std::vector<int>{gpu}) << round;
    EXPECT_EQ(placement->score, score) << round;  // exact
    EXPECT_EQ(*policy.score(node, pod), score) << round;
  }
  EXPECT_GT(placed, 10000);  // the comparison ran on many placements, not a few
}

}  // namespace
}  // namespace gpushare::core
