// FragmentationCache keeps what fgd and fgd-plus read of each node alone (NodeReading: F(node)
// and the per-need counts) from one request to the next, per node position and stamp, and drops
// it all when the policy's version moves; with it, a sharing pod's F after placement
// (NodeReading::Minimum). A score computed from a kept reading must be the same bits as one
// computed from the node.

#include "gpushare/core/fragmentation_cache.h"

#include <gtest/gtest.h>

#include <bit>
#include <random>
#include <string>
#include <vector>

#include "gpushare/core/policies/fgd.h"
#include "gpushare/core/policies/fgd_plus.h"

namespace gpushare::core {
namespace {

std::uint64_t bits(double value) {
  return std::bit_cast<std::uint64_t>(value);
}

TEST(FragmentationCache, KeepsAReadingPerPositionAndStamp) {
  FragmentationCache cache;
  cache.begin(3, 4);
  EXPECT_EQ(cache.capacity(), 4u);
  NodeReading& first = cache.at(1, 10);
  EXPECT_FALSE(first.filled);
  first.filled = true;
  first.before = 2.5;
  cache.begin(3, 4);
  ASSERT_TRUE(cache.at(1, 10).filled);  // the same node state, the same version: a hit
  EXPECT_EQ(cache.at(1, 10).before, 2.5);
  EXPECT_FALSE(cache.at(2, 10).filled);  // another position
  EXPECT_FALSE(cache.at(1, 11).filled);  // the node changed: its reading is dropped
  EXPECT_FALSE(cache.at(1, 10).filled);  // and stays dropped (stamps only grow)
}

TEST(FragmentationCache, DropsEveryReadingWhenThePolicyVersionMoves) {
  FragmentationCache cache;
  cache.begin(1, 3);
  for (std::size_t p = 0; p < 3; ++p) cache.at(p, 5).filled = true;
  cache.begin(1, 3);
  EXPECT_TRUE(cache.at(0, 5).filled);
  cache.begin(2, 3);
  for (std::size_t p = 0; p < 3; ++p) EXPECT_FALSE(cache.at(p, 5).filled) << p;
}

TEST(FragmentationCache, HoldsOneReadingPerPositionOfTheModel) {
  FragmentationCache cache;
  cache.begin(1, 5);
  cache.at(4, 1).filled = true;
  cache.at(0, 1).filled = true;
  cache.begin(1, 2);  // the model shrank: positions beyond it are gone
  EXPECT_EQ(cache.capacity(), 2u);
  EXPECT_TRUE(cache.at(0, 1).filled);
  cache.begin(1, 5);  // and grew again: the new positions start empty
  EXPECT_EQ(cache.capacity(), 5u);
  EXPECT_FALSE(cache.at(4, 1).filled);
}

// Nodes of 8 GPUs of 32 units, partly used, CPU and memory tracked; pods sharing a GPU, taking
// whole GPUs or none, with CPU and memory that exclude some target shapes after placement.
class Cases {
 public:
  explicit Cases(std::uint64_t seed) : rng_(seed) {}
  std::int64_t between(std::int64_t lo, std::int64_t hi) {
    return std::uniform_int_distribution<std::int64_t>(lo, hi)(rng_);
  }
  NodeState node() {
    NodeSpec spec;
    spec.name = "n";
    spec.gpu_count = static_cast<int>(between(1, 8));
    spec.memory_per_gpu = 32;
    spec.cpu_milli = 64000;
    spec.memory = 256 * 1024;
    spec.gpu_model = between(0, 1) == 0 ? "A100" : "T4";
    NodeState node(spec);
    for (int i = 0; i < node.gpu_count(); ++i) node.add_usage(i, between(0, 16) * 2);
    node.add_cpu_mem(between(0, 64) * 1000, between(0, 256) * 1024);
    return node;
  }
  PodDemand pod() {
    PodDemand pod;
    const auto kind = between(0, 3);
    pod.per_gpu = kind == 0 ? 0 : between(1, 32);
    pod.gpu_count = kind == 1 ? static_cast<int>(between(2, 4)) : 1;
    pod.cpu_milli = between(0, 40) * 500;
    pod.memory = between(0, 64) * 1024;
    return pod;
  }
  TargetWorkload target() {
    TargetWorkload target;
    for (std::int64_t j = between(1, 60); j > 0; --j) {
      WorkloadShape shape;
      shape.per_gpu = between(0, 3) == 0 ? 0 : between(1, 32);
      shape.gpu_count = shape.per_gpu > 0 && between(0, 4) == 0 ? 2 : 1;
      shape.cpu_milli = between(0, 16) * 1000;
      shape.memory = between(0, 32) * 4096;
      if (between(0, 9) == 0) shape.allowed_models = {"A100"};
      target.push_back({shape, std::uniform_real_distribution<double>(0.01, 1.0)(rng_)});
    }
    return target;
  }

 private:
  std::mt19937_64 rng_;
};

// How the pods scored on one node follow each other: any pods, or pods of one GPU size on one
// GPU with CPU and memory new each time (demands never seen before that differ only in those).
enum class Pods { kAny, kOneGpuSize };

// One reading per node, filled by the first pod and read by every later one: each score the
// same bits as without it. `hits` counts the scores that found what they read kept: the
// reading (kAny), or the last pod's F(after) values for their GPU size (kOneGpuSize,
// NodeReading::Minimum).
template <class Policy>
void expect_same_scores(const Policy& policy, Cases& cases, Pods pods, int& hits) {
  for (int n = 0; n < 20; ++n) {
    const NodeState node = cases.node();
    NodeReading reading;
    PodDemand pod;
    if (pods == Pods::kOneGpuSize) {
      pod.per_gpu = cases.between(1, 31);
      pod.gpu_count = 1;
    }
    for (int p = 0; p < 8; ++p) {
      if (pods == Pods::kAny) {
        pod = cases.pod();
      } else {
        pod.cpu_milli = cases.between(0, 40) * 500;
        pod.memory = cases.between(0, 64) * 1024;
      }
      const bool kept = pods == Pods::kAny
                            ? reading.filled
                            : reading.minimum.window > 0 && reading.minimum.per_gpu == pod.per_gpu;
      const std::optional<double> plain = policy.score(node, pod);
      const std::optional<double> cached = policy.score_with(node, pod, &reading);
      ASSERT_EQ(plain.has_value(), cached.has_value());
      if (!plain) continue;
      ASSERT_EQ(bits(*plain), bits(*cached)) << *plain << " vs " << *cached;
      ASSERT_TRUE(reading.filled);  // a node the pod fits on leaves its reading
      hits += kept ? 1 : 0;
    }
  }
}

// expect_same_scores for fgd and fgd-plus on 60 random targets; most scores find what they read
// kept.
void expect_same_scores_on_targets(std::uint64_t seed, Pods pods, int min_hits) {
  Cases cases(seed);
  int hits_fgd = 0;
  int hits_plus = 0;
  for (int t = 0; t < 60; ++t) {
    const TargetWorkload target = cases.target();
    expect_same_scores(FgdPolicy(target), cases, pods, hits_fgd);
    expect_same_scores(FgdPlusPolicy(target), cases, pods, hits_plus);
    if (::testing::Test::HasFatalFailure()) {
      ADD_FAILURE() << "target " << t;
      return;
    }
  }
  EXPECT_GT(hits_fgd, min_hits);
  EXPECT_GT(hits_plus, min_hits);
}

TEST(FragmentationCache, ScoresFromAKeptReadingAreTheSameBits) {
  expect_same_scores_on_targets(20261126, Pods::kAny, 2000);
}

// A sharing pod's F(after) values are kept with the reading (NodeReading::Minimum): pods of
// the same GPU memory with other CPU and memory read them where the node excludes the same
// shapes after placement, and every score stays the same bits.
TEST(FragmentationCache, NewCpuAndMemoryOnTheSameGpuSizeGiveTheSameBits) {
  expect_same_scores_on_targets(20261128, Pods::kOneGpuSize, 1000);
}

// The kept F(node) is what the score reads: a reading that lies shows in the score.
TEST(FragmentationCache, AKeptReadingIsUsedInsteadOfTheNode) {
  Cases cases(5);
  const FgdPlusPolicy policy(cases.target());
  PodDemand pod;
  pod.per_gpu = 4;
  NodeState node = cases.node();
  while (!policy.score(node, pod)) node = cases.node();
  NodeReading reading;
  const std::optional<double> first = policy.score_with(node, pod, &reading);
  ASSERT_TRUE(first && reading.filled);
  reading.before += 1000;  // F(node) 1 000 units higher: the pod reduces it by that much more
  const std::optional<double> second = policy.score_with(node, pod, &reading);
  ASSERT_TRUE(second);
  EXPECT_GT(*second, *first);
  reading.filled = false;  // dropped: read from the node again
  EXPECT_EQ(bits(*policy.score_with(node, pod, &reading)), bits(*first));
}

// Readings hold F of the policy's target: they follow the learned target's version.
TEST(FragmentationCache, ReadingVersionMovesWithTheLearnedTarget) {
  FgdPlusPolicy plus;
  FgdPolicy fgd;
  ASSERT_TRUE(plus.reading_version() && fgd.reading_version());
  const std::uint64_t plus_before = *plus.reading_version();
  const std::uint64_t fgd_before = *fgd.reading_version();
  PodDemand pod;
  pod.per_gpu = 7;
  pod.cpu_milli = 1500;
  for (int i = 0; i < 1000; ++i) {
    plus.observe(pod);
    fgd.observe(pod);
  }
  EXPECT_NE(*plus.reading_version(), plus_before);
  EXPECT_NE(*fgd.reading_version(), fgd_before);
  EXPECT_EQ(*fgd.reading_version(), fgd.state_version());
}

// The kept F(after) is what the score reads while the pod asks the same of the GPUs and the
// node excludes the same shapes; another GPU size computes it again.
TEST(FragmentationCache, AKeptMinimumIsUsedOnlyForTheSameGpuAsk) {
  Cases cases(11);
  const FgdPlusPolicy policy(cases.target());
  PodDemand pod;
  pod.per_gpu = 4;
  PodDemand new_cpu = pod;  // a new demand, which excludes no more shapes on a node of idle CPU
  new_cpu.cpu_milli = 1;
  NodeState node = cases.node();
  while (!policy.score(node, pod) || node.cpu_free() < 32000) node = cases.node();
  NodeReading reading;
  const std::optional<double> first = policy.score_with(node, pod, &reading);
  ASSERT_TRUE(first && reading.minimum.window > 0);
  EXPECT_EQ(reading.minimum.per_gpu, 4);
  reading.minimum.after[0] += 1000;  // F(after) 1 000 units higher: the score drops
  const std::optional<double> second = policy.score_with(node, new_cpu, &reading);
  ASSERT_TRUE(second);
  EXPECT_LT(*second, *first);
  pod.per_gpu = 3;  // another GPU size: computed from the node, and kept instead
  EXPECT_EQ(bits(*policy.score_with(node, pod, &reading)), bits(*policy.score(node, pod)));
  EXPECT_EQ(reading.minimum.per_gpu, 3);
}

}  // namespace
}  // namespace gpushare::core
