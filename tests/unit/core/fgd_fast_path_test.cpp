// fgd and fgd-plus score and place through NodeFragmentation (grouped shapes, per-candidate
// updates, pruned candidates). These tests hold them to the straightforward computation
// (reference_place: FreeResources and fragmentation() per candidate) on random nodes, pods and
// targets: the same GPUs and bit-identical scores.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "gpushare/core/fit.h"
#include "gpushare/core/fragmentation.h"
#include "gpushare/core/policies/fgd.h"
#include "gpushare/core/policies/fgd_plus.h"

namespace gpushare::core {
namespace {

const std::vector<std::string> kModels = {"A100", "V100", "T4"};

class Random {
 public:
  explicit Random(std::uint64_t seed) : rng_(seed) {}
  std::int64_t between(std::int64_t lo, std::int64_t hi) {
    return std::uniform_int_distribution<std::int64_t>(lo, hi)(rng_);
  }
  bool chance(double p) { return std::bernoulli_distribution(p)(rng_); }
  double weight() { return std::uniform_real_distribution<double>(0.001, 1.0)(rng_); }
  template <class T>
  const T& pick(const std::vector<T>& v) {
    return v[static_cast<std::size_t>(between(0, static_cast<std::int64_t>(v.size()) - 1))];
  }
  std::vector<std::string> models() {
    std::vector<std::string> models;
    for (const auto& m : kModels) {
      if (chance(0.4)) models.push_back(m);
    }
    return models;
  }

 private:
  std::mt19937_64 rng_;
};

// GPU memory per GPU: small and odd values make ties and exact fits common; the last is beyond
// the 32-bit arithmetic NodeFragmentation uses when it can.
const std::vector<Units> kCapacities = {1000, 32, 12, 7, 1, 3'000'000'019};

NodeState random_node(Random& r) {
  NodeSpec spec;
  spec.name = "n";
  spec.gpu_count = static_cast<int>(r.chance(0.05) ? r.between(17, 20) : r.between(0, 10));
  spec.memory_per_gpu = r.chance(0.02) ? 0 : r.pick(kCapacities);
  if (r.chance(0.7)) {  // CPU and memory tracked
    spec.cpu_milli = r.between(1, 64) * 1000;
    spec.memory = r.between(1, 256) * 1024;
  } else if (r.chance(0.3)) {
    spec.cpu_milli = r.between(1, 64) * 1000;  // CPU only
  }
  spec.gpu_model = r.chance(0.2) ? std::string() : r.pick(kModels);
  NodeState node(spec);
  const Units capacity = spec.memory_per_gpu;
  for (int i = 0; i < node.gpu_count(); ++i) {
    const double p = r.weight();
    if (p < 0.3) continue;  // wholly free
    if (p < 0.45) {
      node.add_usage(i, capacity);  // full
    } else {
      // Few distinct amounts, so that GPUs often tie.
      node.add_usage(i, capacity <= 1 ? 1 : r.between(1, capacity - 1) / 2 * 2);
    }
  }
  if (r.chance(0.1)) node.add_usage(-1, r.between(1, std::max<Units>(1, capacity)));
  std::vector<int> unhealthy;
  for (int i = 0; i < node.gpu_count(); ++i) {
    if (r.chance(0.1)) unhealthy.push_back(i);
  }
  if (!unhealthy.empty()) node.set_unhealthy(unhealthy);
  if (spec.cpu_milli > 0 || spec.memory > 0) {
    node.add_cpu_mem(r.between(0, spec.cpu_milli),
                     r.between(0, std::max<std::int64_t>(spec.memory, 0)));
  }
  return node;
}

WorkloadShape random_shape(Random& r, Units capacity) {
  WorkloadShape shape;
  const double kind = r.weight();
  if (kind < 0.15) {
    // wants no GPU
  } else if (kind < 0.3) {
    shape.relative = true;
    shape.per_gpu = r.pick(std::vector<Units>{250, 500, 750, 1000, 333});
    shape.gpu_count = 1;
  } else {
    shape.per_gpu = r.between(1, std::max<Units>(1, capacity + 1));
    shape.gpu_count = r.chance(0.2) ? static_cast<int>(r.between(2, 4)) : 1;
  }
  shape.cpu_milli = r.chance(0.3) ? 0 : r.between(1, 16) * 500;
  shape.memory = r.chance(0.5) ? 0 : r.between(1, 64) * 1024;
  if (r.chance(0.15)) {
    shape.allowed_models = r.models();
    std::sort(shape.allowed_models.begin(), shape.allowed_models.end());
  }
  return shape;
}

TargetWorkload random_target(Random& r) {
  const Units capacity = r.pick(kCapacities);
  const auto count = r.chance(0.1) ? r.between(0, 2) : r.between(1, r.chance(0.3) ? 140 : 40);
  TargetWorkload target;
  for (std::int64_t j = 0; j < count; ++j) {
    // Repeated weights make ties between candidates more likely.
    const double weight = r.chance(0.3) ? 1.0 / static_cast<double>(count) : r.weight();
    target.push_back({random_shape(r, capacity), weight});
  }
  return target;
}

// fgd-plus's options with the balance and pack terms now and then off or reweighted.
FgdPlusPolicy::Options random_plus_options(Random& r) {
  FgdPlusPolicy::Options options;
  if (r.chance(0.2)) options.balance_weight = 0;
  if (r.chance(0.2)) options.pack_weight = 0;
  if (r.chance(0.2)) options.balance_weight = r.weight() * 3;
  return options;
}

PodDemand random_pod(Random& r, Units capacity) {
  PodDemand pod;
  const double kind = r.weight();
  if (kind < 0.25) {
    pod.per_gpu = 0;  // wants no GPU; gpu_count 1 as PodInfo::demand() leaves it, or 0
    if (r.chance(0.5)) pod.gpu_count = 0;
  } else if (kind < 0.4) {
    pod.per_gpu = r.chance(0.5) ? capacity : r.between(1, std::max<Units>(1, capacity));
    pod.gpu_count = static_cast<int>(r.between(2, 4));
  } else {
    pod.per_gpu = r.between(1, std::max<Units>(1, capacity + 1));
  }
  pod.cpu_milli = r.chance(0.3) ? 0 : r.between(1, 16) * 500;
  pod.memory = r.chance(0.5) ? 0 : r.between(1, 64) * 1024;
  if (r.chance(0.1)) pod.allowed_models = r.models();
  return pod;
}

std::uint64_t bits(double value) {
  return std::bit_cast<std::uint64_t>(value);
}

template <class Policy>
void expect_same_as_reference(const Policy& policy, const NodeState& node, const PodDemand& pod,
                              int& compared) {
  const std::optional<Placement> reference = policy.reference_place(node, pod);
  const std::optional<Placement> placed = policy.place(node, pod);
  const std::optional<double> scored = policy.score(node, pod);
  ASSERT_EQ(placed.has_value(), reference.has_value());
  ASSERT_EQ(scored.has_value(), reference.has_value());
  if (!reference) return;
  ++compared;
  ASSERT_EQ(placed->gpus, reference->gpus);
  ASSERT_EQ(bits(placed->score), bits(reference->score))
      << placed->score << " vs " << reference->score;
  ASSERT_EQ(bits(*scored), bits(reference->score)) << *scored << " vs " << reference->score;
}

// The fragmentation sum itself: F(node) bit for bit.
void expect_same_fragmentation(const TargetWorkload& target, const CompiledWorkload& compiled,
                               const NodeState& node, const PodDemand& pod) {
  NodeFragmentation fast;
  if (!fast.prepare(compiled, node, pod)) return;
  const FreeResources before = FreeResources::of(node);
  ASSERT_EQ(bits(fast.before()), bits(fragmentation(before, target)));
  FreeResources after = before;
  after.take(pod, {});
  for (int k = 0; k < fast.candidates(); ++k) {
    const auto gpu = static_cast<std::size_t>(fast.candidate_gpu(k));
    const Units free = after.gpu_free[gpu];
    after.gpu_free[gpu] = free - pod.per_gpu;
    ASSERT_EQ(bits(fast.candidate_after(k)), bits(fragmentation(after, target)));
    after.gpu_free[gpu] = free;
  }
}

TEST(FgdFastPath, MatchesTheReferenceOnRandomNodesPodsAndTargets) {
  Random r(20261124);
  int compared_fgd = 0;
  int compared_plus = 0;
  for (int t = 0; t < 400; ++t) {
    const TargetWorkload target = random_target(r);
    const FgdPolicy fgd(target);
    const FgdPlusPolicy::Options options = random_plus_options(r);
    const FgdPlusPolicy plus(target, options);
    const CompiledWorkload compiled(target);
    for (int n = 0; n < 30; ++n) {
      const NodeState node = random_node(r);
      for (int p = 0; p < 6; ++p) {
        const PodDemand pod = random_pod(r, node.spec().memory_per_gpu);
        expect_same_as_reference(fgd, node, pod, compared_fgd);
        expect_same_as_reference(plus, node, pod, compared_plus);
        expect_same_fragmentation(target, compiled, node, pod);
        if (HasFatalFailure()) {
          ADD_FAILURE() << "target " << t << " node " << n << " pod " << p;
          return;
        }
      }
    }
  }
  // Most cases place the pod (the comparisons are not vacuous).
  RecordProperty("placed_fgd", compared_fgd);
  RecordProperty("placed_fgd_plus", compared_plus);
  EXPECT_GT(compared_fgd, 20000);
  EXPECT_GT(compared_plus, 20000);
}

// Weights in tenths and small GPUs: candidates often leave mathematically equal F(after) whose
// sums, in the target's order, still differ in the last bits (and differ from the grouped
// approximation's). Pruning must keep every candidate that can be the smallest after rounding.
TEST(FgdFastPath, MatchesTheReferenceWhenCandidatesNearlyTie) {
  Random r(7);
  int compared_fgd = 0;
  int compared_plus = 0;
  for (int t = 0; t < 300; ++t) {
    TargetWorkload target;
    const auto shapes = r.between(2, 40);
    const auto needs = r.between(1, 6);
    for (std::int64_t j = 0; j < shapes; ++j) {
      WorkloadShape shape;
      shape.per_gpu = r.between(1, needs) * 2;
      shape.gpu_count = r.chance(0.1) ? 2 : 1;
      shape.cpu_milli = r.chance(0.7) ? 0 : r.between(1, 8) * 1000;
      target.push_back({shape, r.pick(std::vector<double>{0.1, 0.2, 0.3, 0.6, 0.7, 0.9})});
    }
    const FgdPolicy fgd(target);
    const FgdPlusPolicy plus(target);
    for (int n = 0; n < 40; ++n) {
      NodeSpec spec;
      spec.name = "n";
      spec.gpu_count = static_cast<int>(r.between(2, 16));
      spec.memory_per_gpu = 12;
      spec.cpu_milli = r.chance(0.5) ? 16000 : 0;
      NodeState node(spec);
      for (int i = 0; i < node.gpu_count(); ++i) node.add_usage(i, r.between(0, 11));
      if (spec.cpu_milli > 0) node.add_cpu_mem(r.between(0, 16000), 0);
      for (Units per_gpu = 1; per_gpu <= 12; ++per_gpu) {
        PodDemand pod;
        pod.per_gpu = per_gpu;
        pod.cpu_milli = r.chance(0.5) ? 0 : 1000;
        expect_same_as_reference(fgd, node, pod, compared_fgd);
        expect_same_as_reference(plus, node, pod, compared_plus);
        if (HasFatalFailure()) return;
      }
    }
  }
  RecordProperty("placed_fgd", compared_fgd);
  RecordProperty("placed_fgd_plus", compared_plus);
  EXPECT_GT(compared_fgd, 20000);
  EXPECT_GT(compared_plus, 20000);
}

// The online policies rebuild their compiled target whenever the learned one changes.
TEST(FgdFastPath, FollowsTheLearnedTarget) {
  Random r(99);
  FgdPolicy fgd;
  FgdPlusPolicy plus;
  int compared_fgd = 0;
  int compared_plus = 0;
  std::vector<NodeState> nodes;
  for (int n = 0; n < 40; ++n) nodes.push_back(random_node(r));
  for (int step = 0; step < 600; ++step) {
    PodDemand observed = random_pod(r, 1000);
    observed.allowed_models.clear();
    fgd.observe(observed);
    plus.observe(observed);
    if (step % 20 != 0) continue;
    for (const auto& node : nodes) {
      const PodDemand pod = random_pod(r, node.spec().memory_per_gpu);
      expect_same_as_reference(fgd, node, pod, compared_fgd);
      expect_same_as_reference(plus, node, pod, compared_plus);
      if (HasFatalFailure()) return;
    }
  }
  EXPECT_GT(compared_fgd, 200);
  EXPECT_GT(compared_plus, 200);
}

TEST(FgdFastPath, NodesBeyondItsCapacityUseTheReference) {
  NodeSpec spec;
  spec.name = "big";
  spec.gpu_count = NodeFragmentation::kMaxGpus + 1;
  spec.memory_per_gpu = 100;
  NodeState node(spec);
  node.add_usage(3, 40);
  PodDemand pod;
  pod.per_gpu = 30;
  const FgdPlusPolicy plus;
  NodeFragmentation fast;
  EXPECT_FALSE(fast.prepare(CompiledWorkload(plus.target()), node, pod));
  const auto placed = plus.place(node, pod);
  const auto reference = plus.reference_place(node, pod);
  ASSERT_TRUE(placed && reference);
  EXPECT_EQ(placed->gpus, reference->gpus);
  EXPECT_EQ(bits(placed->score), bits(reference->score));
  EXPECT_EQ(bits(*plus.score(node, pod)), bits(reference->score));
}

// score() with a reading (NodeFragmentation::prepare_to_score): a pod of the GPU memory the
// reading's kept minimum is for, with other CPU and memory (which exclude the same shapes after
// placement, or not), scores as without the reading, bit for bit; so does fgd on a reading whose
// minimum fgd-plus kept (another margin: prepared in full after all).
TEST(FgdFastPath, ScoresFromAKeptMinimumAsWithoutTheReading) {
  Random r(20261129);
  int kept_for_the_pod = 0;
  for (int t = 0; t < 200; ++t) {
    const TargetWorkload target = random_target(r);
    const FgdPlusPolicy plus(target, random_plus_options(r));
    const FgdPolicy fgd(target);
    for (int n = 0; n < 20; ++n) {
      const NodeState node = random_node(r);
      NodeReading reading;
      PodDemand first = random_pod(r, node.spec().memory_per_gpu);
      first.gpu_count = 1;
      first.per_gpu = std::max<Units>(1, first.per_gpu);
      plus.score_with(node, first, &reading);
      for (int p = 0; p < 8; ++p) {
        PodDemand pod = random_pod(r, node.spec().memory_per_gpu);
        pod.gpu_count = 1;
        pod.per_gpu = first.per_gpu;
        pod.allowed_models = first.allowed_models;
        // CPU and memory up to what the node has free, so that the shapes excluded after
        // placement vary from pod to pod.
        if (node.spec().cpu_milli > 0) {
          pod.cpu_milli = r.between(0, std::max<std::int64_t>(0, node.cpu_free()));
        }
        if (node.spec().memory > 0) {
          pod.memory = r.between(0, std::max<std::int64_t>(0, node.memory_free()));
        }
        kept_for_the_pod +=
            reading.minimum.window > 0 && reading.minimum.per_gpu == pod.per_gpu ? 1 : 0;
        const FgdPolicy* other = p == 7 ? &fgd : nullptr;
        const std::optional<double> read = other != nullptr ? other->score_with(node, pod, &reading)
                                                            : plus.score_with(node, pod, &reading);
        const std::optional<double> alone =
            other != nullptr ? other->score(node, pod) : plus.score(node, pod);
        ASSERT_EQ(read.has_value(), alone.has_value()) << "target " << t << " node " << n;
        if (read) {
          ASSERT_EQ(bits(*read), bits(*alone)) << "target " << t << " node " << n;
        }
      }
    }
  }
  RecordProperty("kept_for_the_pod", kept_for_the_pod);
  EXPECT_GT(kept_for_the_pod, 5000);  // not vacuous
}

// score_in with SharedExclusions (, shared by the nodes of one request): nodes of one target
// whose CPU, memory and models exclude the same shapes after placement, or not, each with its own
// filled reading (kept for another GPU memory, so that F after placement is summed), score as
// score() does, bit for bit, for fgd-plus and fgd, whether they build a set's indexes and
// weights or read those another node built; and some read them.
TEST(FgdFastPath, ScoresWithTheRequestsSharedExclusionsAsWithoutThem) {
  Random r(20261130);
  std::size_t shared_sets = 0;
  std::size_t scored = 0;
  for (int t = 0; t < 150; ++t) {
    const TargetWorkload target = random_target(r);
    const FgdPlusPolicy plus(target, random_plus_options(r));
    const FgdPolicy fgd(target);
    // Nodes of a few specs, their CPU and memory held now alike (half the node's), now not.
    std::vector<NodeState> nodes;
    const NodeState base = random_node(r);
    for (int n = 0; n < 40; ++n) {
      const NodeState other = random_node(r);
      NodeSpec spec = r.chance(0.5) ? base.spec() : other.spec();
      if (r.chance(0.1)) spec.gpu_model = r.pick(kModels);
      NodeState node(spec);
      for (int i = 0; i < node.gpu_count(); ++i) {
        if (r.chance(0.5)) node.add_usage(i, r.between(0, std::max<Units>(0, spec.memory_per_gpu)));
      }
      if (spec.cpu_milli > 0 || spec.memory > 0) {
        const bool half = r.chance(0.5);
        node.add_cpu_mem(
            half ? spec.cpu_milli / 2 : r.between(0, spec.cpu_milli),
            half ? spec.memory / 2 : r.between(0, std::max<std::int64_t>(spec.memory, 0)));
      }
      nodes.push_back(std::move(node));
    }
    PodDemand pod = random_pod(r, base.spec().memory_per_gpu);
    if (r.chance(0.8)) {  // mostly sharing pods: F after placement per candidate
      pod.gpu_count = 1;
      pod.per_gpu = std::max<Units>(1, pod.per_gpu);
    }
    for (int which = 0; which < 2; ++which) {
      const PlacementPolicy& policy = which == 0 ? static_cast<const PlacementPolicy&>(plus)
                                                 : static_cast<const PlacementPolicy&>(fgd);
      SharedExclusions shared;
      shared.begin();
      for (const NodeState& node : nodes) {
        NodeReading reading;
        if (r.chance(0.7)) {
          PodDemand other = pod;
          other.per_gpu = pod.per_gpu + 1;
          policy.score_with(node, other, &reading);  // fills it, keeps another minimum
        }
        const std::optional<double> read = policy.score_with(node, pod, &reading, &shared);
        const std::optional<double> alone = policy.score(node, pod);
        ASSERT_EQ(read.has_value(), alone.has_value()) << "target " << t;
        if (read) {
          ASSERT_EQ(bits(*read), bits(*alone)) << "target " << t;
          ++scored;
        }
      }
      shared_sets += shared.size();
    }
  }
  RecordProperty("shared_sets", static_cast<int>(shared_sets));
  RecordProperty("scored", static_cast<int>(scored));
  EXPECT_GT(shared_sets, 100u);  // not vacuous
  EXPECT_GT(scored, 2000u);
}

// A reading refilled for a new state of its node (the cache empties it on a new stamp) keeps
// nothing of the old state: with the node's CPU and memory changed and its GPUs not (often the
// same F(node), another balance term), fgd-plus scores as score() does, bit for bit, and so does
// its score bound.
TEST(FgdFastPath, AReadingRefilledForANewStateKeepsNothingOfTheOld) {
  Random r(20261130);
  int scored = 0;
  int same_fragmentation = 0;
  for (int t = 0; t < 200; ++t) {
    const TargetWorkload target = random_target(r);
    FgdPlusPolicy::Options options = random_plus_options(r);
    options.balance_weight = std::max(options.balance_weight, 0.5);
    const FgdPlusPolicy plus(target, options);
    for (int n = 0; n < 20; ++n) {
      const NodeState first = random_node(r);
      if (first.spec().cpu_milli <= 0 || first.cpu_free() <= 0) continue;
      NodeReading reading;
      const PodDemand pod = random_pod(r, first.spec().memory_per_gpu);
      plus.score_with(first, pod, &reading);
      if (!reading.filled) continue;  // beyond the fast path
      const double before = reading.before;
      NodeState next = first;
      next.add_cpu_mem(r.between(1, first.cpu_free()), 0);
      reading.filled = false;  // as FragmentationCache::at for the new stamp
      for (int p = 0; p < 3; ++p) {
        const PodDemand other = p == 0 ? pod : random_pod(r, next.spec().memory_per_gpu);
        const std::optional<double> read = plus.score_with(next, other, &reading);
        const std::optional<double> alone = plus.score(next, other);
        ASSERT_EQ(read.has_value(), alone.has_value()) << "target " << t << " node " << n;
        if (!read) continue;
        ASSERT_EQ(bits(*read), bits(*alone)) << "target " << t << " node " << n << " pod " << p;
        ++scored;
        same_fragmentation += reading.filled && reading.before == before ? 1 : 0;
        if (const auto bound = plus.score_bound(next, other, &reading); bound && *bound) {
          ASSERT_GE(**bound, *alone) << "target " << t << " node " << n << " pod " << p;
        }
      }
    }
  }
  RecordProperty("scored", scored);
  RecordProperty("same_fragmentation", same_fragmentation);
  EXPECT_GT(scored, 1000);  // not vacuous
  EXPECT_GT(same_fragmentation, 200);
}

// fgd-plus's score bound (Scorer::score_top reads it to skip nodes that cannot reach the top
// levels): for every node and pod it gives one for, at least the score, as doubles, and exactly
// nullopt where the node cannot hold the pod; the F(after) bound below every candidate's F.
TEST(FgdFastPath, ScoreBoundIsNeverBelowTheScore) {
  Random r(20261128);
  int bounded = 0;
  int tight = 0;
  for (int t = 0; t < 300; ++t) {
    const TargetWorkload target = random_target(r);
    const FgdPlusPolicy::Options options = random_plus_options(r);
    const FgdPlusPolicy plus(target, options);
    const CompiledWorkload compiled(target);
    for (int n = 0; n < 30; ++n) {
      const NodeState node = random_node(r);
      NodeReading reading;
      EXPECT_FALSE(plus.score_bound(node, random_pod(r, node.spec().memory_per_gpu), &reading));
      plus.score_with(node, random_pod(r, node.spec().memory_per_gpu), &reading);
      for (int p = 0; p < 6; ++p) {
        const PodDemand pod = random_pod(r, node.spec().memory_per_gpu);
        const auto bound = plus.score_bound(node, pod, &reading);
        const std::optional<double> score = plus.score(node, pod);
        if (!bound) continue;
        ++bounded;
        ASSERT_EQ(bound->has_value(), score.has_value()) << "target " << t << " node " << n;
        if (!score) continue;
        ASSERT_GE(**bound, *score) << "target " << t << " node " << n << " pod " << p;
        tight += **bound - *score <= 1e-9 * std::max(1.0, std::abs(*score)) ? 1 : 0;
        const std::optional<double> after =
            compiled.sharing_after_lower_bound(reading, node, pod.per_gpu);
        ASSERT_TRUE(after);
        NodeFragmentation fast;
        ASSERT_TRUE(fast.prepare(compiled, node, pod));
        for (int k = 0; k < fast.candidates(); ++k) ASSERT_LE(*after, fast.candidate_after(k));
      }
    }
  }
  RecordProperty("bounded", bounded);
  EXPECT_GT(bounded, 5000);        // not vacuous
  EXPECT_GT(tight, bounded / 20);  // and often close to the score
}

// A preparation deferred for a bound (prepare_to_score's bound_first), on a reading filled by
// another pod: minimum_lower_bound() is at most every candidate's exact F(after) (and, for a
// node of one candidate, equal to it up to rounding), the
// candidates are those of a full preparation, and before_and_minimum() then gives what a full
// preparation without the reading gives, bit for bit; with and without the request's shared
// exclusions, the reading's kept minimum carried from pod to pod.
TEST(FgdFastPath, ABoundFirstPreparationBoundsEveryCandidateFromTheReadingAlone) {
  Random r(20261129);
  int bounded = 0;
  int single = 0;
  for (int t = 0; t < 300; ++t) {
    const TargetWorkload target = random_target(r);
    const CompiledWorkload compiled(target);
    SharedExclusions shared;
    shared.begin();
    for (int n = 0; n < 20; ++n) {
      const NodeState node = random_node(r);
      NodeReading reading;
      NodeFragmentation filling;
      if (!filling.prepare(compiled, node, random_pod(r, node.spec().memory_per_gpu), &reading)) {
        continue;  // beyond the fast path's capacities
      }
      for (int p = 0; p < 6; ++p) {
        PodDemand pod = random_pod(r, node.spec().memory_per_gpu);
        pod.gpu_count = 1;
        pod.per_gpu = std::max<Units>(1, pod.per_gpu);
        if (node.spec().cpu_milli > 0) {  // CPU that excludes some shapes after placement
          pod.cpu_milli = r.between(0, std::max<std::int64_t>(0, node.cpu_free()));
        }
        if (!fits(node, pod)) continue;
        NodeFragmentation deferred;
        ASSERT_TRUE(deferred.prepare_to_score(compiled, node, pod, &reading,
                                              r.chance(0.5) ? &shared : nullptr,
                                              /*bound_first=*/true));
        NodeFragmentation full;
        ASSERT_TRUE(full.prepare(compiled, node, pod));
        ASSERT_EQ(deferred.candidates(), full.candidates()) << "target " << t << " node " << n;
        ASSERT_EQ(deferred.total_before(), full.total_before());
        if (const std::optional<double> lowest = deferred.minimum_lower_bound(0.0)) {
          ++bounded;
          for (int k = 0; k < full.candidates(); ++k) {
            ASSERT_LE(*lowest, full.candidate_after(k))
                << "target " << t << " node " << n << " pod " << p << " candidate " << k;
          }
          // One candidate: the bound is its F(after), up to the rounding allowances.
          if (full.candidates() == 1) {
            ++single;
            const double exact = full.candidate_after(0);
            ASSERT_GE(*lowest, exact - 1e-9 * std::max(1.0, std::abs(exact)))
                << "target " << t << " node " << n << " pod " << p;
          }
          ASSERT_EQ(bits(deferred.before()), bits(full.before()));
        }
        std::array<double, NodeFragmentation::kMaxGpus> after_deferred;
        std::array<double, NodeFragmentation::kMaxGpus> after_full;
        double before_deferred = 0;
        double before_full = 0;
        const int window = deferred.before_and_minimum(0.0, before_deferred, after_deferred);
        ASSERT_EQ(window, full.before_and_minimum(0.0, before_full, after_full));
        ASSERT_EQ(bits(before_deferred), bits(before_full));
        // The same values; their order may follow another node's GPUs (shared F(after) values).
        std::sort(after_deferred.begin(), after_deferred.begin() + window);
        std::sort(after_full.begin(), after_full.begin() + window);
        for (int k = 0; k < window; ++k) {
          const auto i = static_cast<std::size_t>(k);
          ASSERT_EQ(bits(after_deferred[i]), bits(after_full[i])) << "target " << t;
        }
      }
    }
  }
  RecordProperty("bounded", bounded);
  RecordProperty("single", single);
  EXPECT_GT(bounded, 3000);  // not vacuous
  EXPECT_GT(single, 300);
}

// Nodes of one request alike in GPU size, free amounts (in any GPU order) and the shapes their
// CPU and memory exclude after placement: fgd-plus under a floor scores each as score() does,
// bit for bit, with the F(after) values that the request's SharedExclusions kept for the first
// of them; and fewer values are kept than nodes prepared in full.
TEST(FgdFastPath, NodesAlikeInARequestScoreWithTheFAfterTheFirstLeft) {
  Random r(20261202);
  std::size_t kept = 0;
  std::size_t scored = 0;
  for (int t = 0; t < 150; ++t) {
    NodeSpec spec = random_node(r).spec();
    spec.gpu_count = static_cast<int>(r.between(2, 8));
    const TargetWorkload target = random_target(r);
    const FgdPlusPolicy plus(target, random_plus_options(r));
    // Two GPU patterns, each GPU's used memory one of three amounts, GPUs shuffled per node.
    const Units capacity = spec.memory_per_gpu;
    std::vector<std::vector<Units>> patterns(2);
    for (auto& pattern : patterns) {
      for (int i = 0; i < spec.gpu_count; ++i) {
        pattern.push_back(r.pick(std::vector<Units>{0, capacity / 2, capacity / 4 * 3}));
      }
    }
    PodDemand pod = random_pod(r, capacity);
    pod.gpu_count = 1;
    pod.per_gpu = std::max<Units>(1, std::min<Units>(pod.per_gpu, capacity / 4));
    SharedExclusions shared;
    shared.begin();
    for (int n = 0; n < 30; ++n) {
      NodeState node(spec);
      std::vector<Units> used = patterns[static_cast<std::size_t>(r.between(0, 1))];
      std::shuffle(used.begin(), used.end(), std::mt19937_64(static_cast<std::uint64_t>(n)));
      for (int i = 0; i < spec.gpu_count; ++i) {
        if (used[static_cast<std::size_t>(i)] > 0) {
          node.add_usage(i, used[static_cast<std::size_t>(i)]);
        }
      }
      if (spec.cpu_milli > 0 || spec.memory > 0) {
        node.add_cpu_mem(spec.cpu_milli / static_cast<std::int64_t>(r.between(2, 3)),
                         spec.memory / 2);
      }
      NodeReading reading;
      PodDemand other = pod;
      other.per_gpu = pod.per_gpu + 1;
      plus.score_with(node, other, &reading);  // fills it, keeps another minimum
      ScoreContext context{&reading, &shared, -std::numeric_limits<double>::max()};
      const std::optional<double> got = plus.score_in(node, pod, context);
      const std::optional<double> score = plus.score(node, pod);
      ASSERT_EQ(got.has_value(), score.has_value()) << "target " << t << " node " << n;
      ASSERT_FALSE(context.bounded);
      if (!score) continue;
      ASSERT_EQ(bits(*got), bits(*score)) << "target " << t << " node " << n;
      ++scored;
    }
    kept += shared.after_size();
  }
  RecordProperty("kept", static_cast<int>(kept));
  RecordProperty("scored", static_cast<int>(scored));
  EXPECT_GT(kept, 50u);         // the values are kept
  EXPECT_LT(kept * 3, scored);  // and read back for most nodes alike
}

// score_in with a floor (ScoreContext::floor): where it answers with a bound, the bound is at
// least the score and below the floor; everywhere else it is the score, bit for bit, and the
// reading it leaves still gives the score to a pod scored after it. Floors just above and just
// below the score, and far from it.
TEST(FgdFastPath, ScoreBelowTheFloorIsTheScoreOrABoundBelowTheFloor) {
  Random r(20261201);
  int bounded = 0;
  int exact = 0;
  for (int t = 0; t < 300; ++t) {
    const TargetWorkload target = random_target(r);
    const FgdPlusPolicy plus(target, random_plus_options(r));
    for (int n = 0; n < 30; ++n) {
      const NodeState node = random_node(r);
      NodeReading reading;
      plus.score_with(node, random_pod(r, node.spec().memory_per_gpu), &reading);
      for (int p = 0; p < 6; ++p) {
        PodDemand pod = random_pod(r, node.spec().memory_per_gpu);
        if (r.chance(0.8)) {  // mostly sharing pods, which are the ones bounded
          pod.gpu_count = 1;
          pod.per_gpu = std::max<Units>(1, pod.per_gpu);
        }
        const std::optional<double> score = plus.score(node, pod);
        const double step = score ? std::max(1e-6, std::abs(*score) * 1e-3) : 1.0;
        const double floor = !score          ? 0.0
                             : r.chance(0.5) ? *score + step * static_cast<double>(r.between(1, 3))
                             : r.chance(0.5) ? std::nextafter(*score, 1e300)
                                             : *score - step;
        SharedExclusions shared;
        shared.begin();
        ScoreContext context{&reading, r.chance(0.5) ? &shared : nullptr, floor};
        const std::optional<double> got = plus.score_in(node, pod, context);
        ASSERT_EQ(got.has_value(), score.has_value()) << "target " << t << " node " << n;
        if (!score) {
          ASSERT_FALSE(context.bounded);
          continue;
        }
        if (context.bounded) {
          ++bounded;
          ASSERT_LT(*got, floor) << "target " << t << " node " << n << " pod " << p;
          ASSERT_GE(*got, *score) << "target " << t << " node " << n << " pod " << p;
        } else {
          ++exact;
          ASSERT_EQ(bits(*got), bits(*score)) << "target " << t << " node " << n << " pod " << p;
        }
        ASSERT_EQ(bits(*plus.score_with(node, pod, &reading)), bits(*score));
      }
    }
  }
  RecordProperty("bounded", bounded);
  EXPECT_GT(bounded, 1000);  // not vacuous
  EXPECT_GT(exact, 1000);
}

}  // namespace
}  // namespace gpushare::core
