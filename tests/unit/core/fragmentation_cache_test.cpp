// FragmentationCache keeps what fgd and fgd-plus read of each node alone (NodeReading: F(node)
// and the per-need counts) from one request to the next, per node position and stamp, and drops
// it all when the policy's version moves; FragmentationSums keeps F after placement per node
// state. A score computed from a kept reading or a kept sum must be the same bits as one computed
// from the node.

#include "gpushare/core/fragmentation_cache.h"

#include <gtest/gtest.h>

#include <bit>
#include <random>
#include <string>
#include <vector>

#include "gpushare/core/policies/fgd.h"
#include "gpushare/core/policies/fgd_plus.h"
#include "gpushare/core/score_mapping.h"

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

// One reading per node, filled by the first pod and read by every later one: each score the
// same bits as without it.
template <class Policy>
void expect_same_scores(const Policy& policy, Cases& cases, int& hits) {
  for (int n = 0; n < 20; ++n) {
    const NodeState node = cases.node();
    NodeReading reading;
    for (int p = 0; p < 8; ++p) {
      const PodDemand pod = cases.pod();
      const bool kept = reading.filled;
      const std::optional<double> plain = policy.score(node, pod);
      const std::optional<double> cached = policy.score_with_reading(node, pod, &reading, nullptr);
      ASSERT_EQ(plain.has_value(), cached.has_value());
      if (!plain) continue;
      ASSERT_EQ(bits(*plain), bits(*cached)) << *plain << " vs " << *cached;
      ASSERT_TRUE(reading.filled);  // a node the pod fits on leaves its reading
      hits += kept ? 1 : 0;
    }
  }
}

TEST(FragmentationCache, ScoresFromAKeptReadingAreTheSameBits) {
  Cases cases(20261126);
  int hits_fgd = 0;
  int hits_plus = 0;
  for (int t = 0; t < 60; ++t) {
    const TargetWorkload target = cases.target();
    expect_same_scores(FgdPolicy(target), cases, hits_fgd);
    expect_same_scores(FgdPlusPolicy(target), cases, hits_plus);
    if (HasFatalFailure()) {
      ADD_FAILURE() << "target " << t;
      return;
    }
  }
  EXPECT_GT(hits_fgd, 2000);  // most scores came from a kept reading
  EXPECT_GT(hits_plus, 2000);
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
  const std::optional<double> first = policy.score_with_reading(node, pod, &reading, nullptr);
  ASSERT_TRUE(first && reading.filled);
  reading.before += 1000;  // F(node) 1 000 units higher: the pod reduces it by that much more
  const std::optional<double> second = policy.score_with_reading(node, pod, &reading, nullptr);
  ASSERT_TRUE(second);
  EXPECT_GT(*second, *first);
  reading.filled = false;  // dropped: read from the node again
  EXPECT_EQ(bits(*policy.score_with_reading(node, pod, &reading, nullptr)), bits(*first));
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

// FragmentationSums: F after placement kept per (excluded shapes, group values), whatever the
// node or the pod.

FragmentationSums::Key key_of(std::int32_t value) {
  FragmentationSums::Key key;
  key.value[0] = value;
  key.value[1] = value + 1;
  return key;
}

TEST(FragmentationSums, KeepsASumPerKeyAtOneVersion) {
  FragmentationSums sums;
  sums.begin(7);
  const FragmentationSums::Key a = key_of(4);
  FragmentationSums::Key b = key_of(4);
  b.excluded[1] = 1;  // the same values, other shapes excluded: another state
  EXPECT_EQ(sums.find(a, FragmentationSums::hash(a)), nullptr);
  sums.remember(a, FragmentationSums::hash(a), 2.5);
  ASSERT_NE(sums.find(a, FragmentationSums::hash(a)), nullptr);
  EXPECT_EQ(*sums.find(a, FragmentationSums::hash(a)), 2.5);
  EXPECT_EQ(sums.find(b, FragmentationSums::hash(b)), nullptr);
  sums.remember(a, FragmentationSums::hash(a), 9.0);  // a key is kept once
  EXPECT_EQ(*sums.find(a, FragmentationSums::hash(a)), 2.5);
  sums.begin(7);  // the next request, the same version: kept
  EXPECT_EQ(sums.size(), 1u);
  ASSERT_NE(sums.find(a, FragmentationSums::hash(a)), nullptr);
  sums.begin(8);  // the target moved: every sum is dropped
  EXPECT_EQ(sums.size(), 0u);
  EXPECT_EQ(sums.find(a, FragmentationSums::hash(a)), nullptr);
}

TEST(FragmentationSums, StartsOverWhenHalfFull) {
  FragmentationSums sums;
  sums.begin(1);
  const std::size_t half = FragmentationSums::kSlots / 2;
  for (std::size_t i = 0; i < half; ++i) {
    const FragmentationSums::Key key = key_of(static_cast<std::int32_t>(i));
    sums.remember(key, FragmentationSums::hash(key), static_cast<double>(i));
  }
  EXPECT_EQ(sums.size(), half);
  const FragmentationSums::Key first = key_of(0);
  ASSERT_NE(sums.find(first, FragmentationSums::hash(first)), nullptr);
  const FragmentationSums::Key more = key_of(static_cast<std::int32_t>(half));
  sums.remember(more, FragmentationSums::hash(more), 1.0);
  EXPECT_EQ(sums.size(), 1u);
  EXPECT_EQ(sums.find(first, FragmentationSums::hash(first)), nullptr);
  ASSERT_NE(sums.find(more, FragmentationSums::hash(more)), nullptr);
}

// Many nodes and pods through one FragmentationSums (and a reading per node), as prioritize
// scores them request after request: every score the same bits as score() alone, so the order
// kube-scheduler sees after either mapping is the same; most sums come from the kept ones.
template <class Policy>
void expect_same_scores_with_sums(const Policy& policy, Cases& cases, std::size_t& kept,
                                  std::size_t& scored) {
  FragmentationSums sums;
  std::vector<NodeState> nodes;
  for (int n = 0; n < 40; ++n) nodes.push_back(cases.node());
  std::vector<NodeReading> readings(nodes.size());
  for (int p = 0; p < 12; ++p) {
    const PodDemand pod = cases.pod();
    sums.begin(*policy.reading_version());
    std::vector<std::optional<double>> plain;
    std::vector<std::optional<double>> fast;
    for (std::size_t n = 0; n < nodes.size(); ++n) {
      plain.push_back(policy.score(nodes[n], pod));
      const std::size_t before = sums.size();
      fast.push_back(policy.score_with_reading(nodes[n], pod, &readings[n], &sums));
      ASSERT_EQ(plain.back().has_value(), fast.back().has_value());
      if (!plain.back()) continue;
      ASSERT_EQ(bits(*plain.back()), bits(*fast.back())) << *plain.back() << " vs " << *fast.back();
      ++scored;
      kept += sums.size() == before ? 1 : 0;  // nothing new summed: found, or nothing to sum
    }
    for (const ScoreMapping mapping : {ScoreMapping::kMinMax, ScoreMapping::kRank}) {
      ASSERT_EQ(map_scores(plain, mapping), map_scores(fast, mapping));
    }
  }
}

TEST(FragmentationSums, ScoresThroughKeptSumsAreTheSameBits) {
  Cases cases(20261128);
  std::size_t kept = 0;
  std::size_t scored = 0;
  for (int t = 0; t < 40; ++t) {
    // Odd rounds: targets of a few GPU sizes (few groups of shapes, as learned from a cluster),
    // which the sums serve; even rounds: any target (many groups: summed every time).
    TargetWorkload target = cases.target();
    if (t % 2 == 1) {
      for (auto& [shape, weight] : target) {
        if (shape.per_gpu > 0) shape.per_gpu = std::int64_t{2} << cases.between(0, 3);
      }
    }
    expect_same_scores_with_sums(FgdPolicy(target), cases, kept, scored);
    expect_same_scores_with_sums(FgdPlusPolicy(target), cases, kept, scored);
    if (HasFatalFailure()) {
      ADD_FAILURE() << "target " << t;
      return;
    }
  }
  ASSERT_GT(scored, 5000u);
  EXPECT_GT(kept, scored / 4);  // nodes met states summed before
}

}  // namespace
}  // namespace gpushare::core
