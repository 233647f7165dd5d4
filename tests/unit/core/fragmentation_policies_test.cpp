// FGD, fgd-plus and the FGD paper's baselines, on small hand-made nodes.
#include <gtest/gtest.h>

#include <cmath>
#include <set>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "gpushare/core/fit.h"
#include "gpushare/core/placement_policy.h"
#include "gpushare/core/policies/best_fit.h"
#include "gpushare/core/policies/dot_product.h"
#include "gpushare/core/policies/fgd.h"
#include "gpushare/core/policies/fgd_plus.h"
#include "gpushare/core/policies/gpu_packing.h"
#include "gpushare/core/policies/random_choice.h"
#include "gpushare/core/policy_registry.h"

namespace gpushare::core {
namespace {

// A node with GPUs of 1000 units, `used` on each, and CPU/memory tracked.
NodeState node(std::string name, std::vector<Units> used, std::int64_t cpu = 64000,
               std::int64_t cpu_used = 0, std::int64_t memory = 262144,
               std::string model = std::string("A")) {
  NodeSpec spec;
  spec.name = std::move(name);
  spec.gpu_count = static_cast<int>(used.size());
  spec.memory_per_gpu = 1000;
  spec.cpu_milli = cpu;
  spec.memory = memory;
  spec.gpu_model = std::move(model);
  NodeState state(spec);
  for (std::size_t i = 0; i < used.size(); ++i) {
    if (used[i] > 0) state.add_usage(static_cast<int>(i), used[i]);
  }
  if (cpu_used > 0) state.add_cpu_mem(cpu_used, 0);
  return state;
}

PodDemand pod(Units per_gpu, int count = 1, std::int64_t cpu = 1000, std::int64_t memory = 0) {
  PodDemand demand;
  demand.per_gpu = per_gpu;
  demand.gpu_count = count;
  demand.cpu_milli = cpu;
  demand.memory = memory;
  return demand;
}

PodDemand cpu_only(std::int64_t cpu) {
  return pod(0, 0, cpu);
}

TargetWorkload only(WorkloadShape shape) {
  return {{std::move(shape), 1.0}};
}

WorkloadShape shape(Units per_gpu, int count = 1, std::int64_t cpu = 0) {
  WorkloadShape s;
  s.per_gpu = per_gpu;
  s.gpu_count = count;
  s.cpu_milli = cpu;
  return s;
}

TEST(Fgd, ChoosesTheGpuThatKeepsTargetPodsPlaceable) {
  // Target: pods of 500. Best fit would take GPU 0 (600 free -> 100) ... no: 600 -> 400 is
  // tighter than 700 -> 500, but leaves a 400 hole no target pod fits; GPU 1 leaves 500.
  const FgdPolicy fgd(only(shape(500)));
  const NodeState n = node("n", {400, 300});
  const auto placement = fgd.place(n, pod(200));
  ASSERT_TRUE(placement);
  EXPECT_EQ(placement->gpus, std::vector<int>{1});
  EXPECT_EQ(best_fit_gpus(n, pod(200)), std::vector<int>{0});
}

TEST(Fgd, ScoresWithTheTruncatedSigmoidOfTheFragmentationChange) {
  const FgdPolicy fgd(only(shape(500)));
  // No change: 50. Filling a hole nothing else fits (dF = -300): floor(100 sigmoid(0.3)) = 57.
  EXPECT_EQ(fgd.place(node("n", {0, 0}), pod(1000))->score, 50);
  EXPECT_EQ(fgd.place(node("n", {700, 0}), pod(300))->score, 57);
  // Creating a 400 hole (dF = +400): floor(100 sigmoid(-0.4)) = 40.
  EXPECT_EQ(fgd.place(node("n", {0}), pod(600))->score, 40);
}

TEST(Fgd, MultiGpuPodsTakeTheLowestWhollyFreeGpus) {
  const FgdPolicy fgd(only(shape(1000, 2)));
  const auto placement = fgd.place(node("n", {100, 0, 0, 0}), pod(1000, 2));
  ASSERT_TRUE(placement);
  EXPECT_EQ(placement->gpus, (std::vector<int>{1, 2}));
  EXPECT_FALSE(fgd.place(node("n", {100, 0, 100, 0}), pod(1000, 3)));
}

TEST(Fgd, AvoidsStrandingGpusForLackOfCpu) {
  // Target pods need 4 cores with their GPU. A CPU-only pod that leaves a node with fewer
  // cores than that strands the node's GPUs; elsewhere it costs nothing.
  const FgdPolicy fgd(only(shape(1000, 1, 4000)));
  const auto tight = fgd.place(node("tight", {0, 0}, 6000), cpu_only(3000));
  const auto roomy = fgd.place(node("roomy", {0, 0}, 64000), cpu_only(3000));
  ASSERT_TRUE(tight && roomy);
  EXPECT_LT(tight->score, roomy->score);
  EXPECT_EQ(roomy->score, 50);
  EXPECT_FALSE(fgd.place(node("full", {0, 0}, 6000, 4000), cpu_only(3000)));  // CPU-bound
}

TEST(Fgd, OnlineLearningChangesTheTargetAndIsExposed) {
  FgdPolicy fgd;
  EXPECT_NE(fgd.describe_state().find("\"observedPods\":0"), std::string::npos);
  const auto version = fgd.state_version();
  fgd.observe(pod(250));
  EXPECT_NE(fgd.state_version(), version);  // the first pods refresh the target at once
  for (int i = 1; i < 64; ++i) fgd.observe(pod(250));
  EXPECT_EQ(fgd.target().front().shape.per_gpu, 250);  // outweighs the prior's 64 pods
  EXPECT_NE(fgd.describe_state().find("\"observedPods\":64"), std::string::npos);
}

TEST(FgdPlus, PutsCpuOnlyPodsWhereCpuIsPlentiful) {
  // Workload: whole-GPU pods with 4 cores each. Both nodes can host one after the CPU-only
  // pod, so FGD ties them; on the 8-core node the pod leaves one GPU without its cores.
  const TargetWorkload target = only(shape(1000, 1, 4000));
  const NodeState balanced = node("balanced", {0, 0}, 8000);
  const NodeState rich = node("rich", {0, 0}, 32000);
  const FgdPolicy fgd(target);
  EXPECT_EQ(fgd.place(balanced, cpu_only(4000))->score, fgd.place(rich, cpu_only(4000))->score);
  const FgdPlusPolicy plus(target);
  EXPECT_GT(plus.place(rich, cpu_only(4000))->score, plus.place(balanced, cpu_only(4000))->score);
  EXPECT_NEAR(plus.stranded_gpu(FreeResources::of(balanced)), 0.0, 1e-9);
  FreeResources after = FreeResources::of(balanced);
  after.take(cpu_only(4000), {});
  EXPECT_NEAR(plus.stranded_gpu(after), 1000.0, 1e-9);  // 4 cores left: one GPU's worth
}

TEST(FgdPlus, SeesMemoryAndTheWorkloadsMemoryPerGpu) {
  WorkloadShape hungry = shape(1000, 1, 0);
  hungry.memory = 100000;
  const FgdPlusPolicy plus(only(hungry));
  // 150000 MiB left: one hungry pod fits, so one of two idle GPUs is stranded.
  const NodeState n = node("n", {0, 0}, 64000, 0, 150000);
  EXPECT_NEAR(plus.stranded_gpu(FreeResources::of(n)), 500.0, 1e-9);
  // A pod that needs no memory goes to the GPU-rich, memory-poor node rather than spend the
  // memory of a node that can still take hungry pods.
  const NodeState roomy = node("roomy", {0, 0}, 64000, 0, 262144);
  const auto on_poor = plus.place(n, pod(1000, 1, 0, 0));
  const auto on_roomy = plus.place(roomy, pod(1000, 1, 0, 0));
  ASSERT_TRUE(on_poor && on_roomy);
  EXPECT_GT(on_poor->score, on_roomy->score);
}

TEST(FgdPlus, ChoosesTheGpuByTheSameMeasure) {
  const FgdPlusPolicy plus(only(shape(500)));
  const auto placement = plus.place(node("n", {400, 300}), pod(200));
  ASSERT_TRUE(placement);
  EXPECT_EQ(placement->gpus, std::vector<int>{1});
  // Continuous scores: a smaller fragmentation change is always a higher score.
  const auto fill = plus.place(node("n", {700, 0}), pod(300));
  const auto open = plus.place(node("n", {0, 0}), pod(300));
  EXPECT_GT(fill->score, open->score);
}

TEST(FgdPlus, FullerNodesWinAmongEquals) {
  const FgdPlusPolicy plus(only(shape(1000)));
  EXPECT_GT(plus.place(node("fuller", {1000, 0, 0}), pod(1000))->score,
            plus.place(node("emptier", {0, 0, 0}), pod(1000))->score);
}

TEST(FgdPlus, LearnsOnlineWithMemoryAwareShapes) {
  FgdPlusPolicy plus;
  for (int i = 0; i < 64; ++i) plus.observe(pod(1000, 1, 8000, 32768));
  EXPECT_EQ(plus.target().front().shape.memory, 32768);
  const std::string state = plus.describe_state();
  EXPECT_NE(state.find("\"policy\":\"fgd-plus\""), std::string::npos);
  // 8000 milli-CPU per 1000 units of GPU; the prior's relative shapes do not count.
  EXPECT_NE(state.find("\"cpuMilliPerGpuUnit\":8.0000"), std::string::npos);
  EXPECT_NE(state.find("\"observedPods\":64"), std::string::npos);
}

TEST(BestFit, ScoresLeftoverCpuAndGpuAsThePaper) {
  const BestFitPolicy best_fit;
  // 128 cores and 8 idle GPUs; the pod takes 1 GPU and no CPU:
  // raw = 0.5 * 128/128 + 0.5 * 7/8 = 0.9375 -> floor(6.25) = 6.
  EXPECT_EQ(best_fit.place(node("n", std::vector<Units>(8, 0), 128000), pod(1000, 1, 0))->score, 6);
  // Half the CPU and 1 GPU left after: raw = 0.25 + 0.0625 -> floor(68.75) = 68.
  EXPECT_EQ(best_fit.place(node("n", {0, 0}, 128000, 64000), pod(1000, 1, 0))->score, 68);
  EXPECT_EQ(best_fit.place(node("n", {700, 300}), pod(300))->gpus, std::vector<int>{0});
}

TEST(DotProduct, PrefersTheNodeLeastAlignedWithThePod) {
  const DotProductPolicy dot;
  // 8 idle GPUs, 128 cores; pod 1 GPU, 16 cores: d = (1 * 1/8 + 1 * 1/8) / 2 = 0.125 -> 87.
  EXPECT_EQ(dot.place(node("n", std::vector<Units>(8, 0), 128000), pod(1000, 1, 16000))->score, 87);
  EXPECT_GT(dot.place(node("small", {0}, 8000), pod(1000, 1, 4000))->score,
            dot.place(node("big", std::vector<Units>(8, 0), 128000), pod(1000, 1, 4000))->score);
}

TEST(GpuPacking, SharedGpusFirstThenUsedNodesThenSmallIdleNodes) {
  const GpuPackingPolicy packing;
  EXPECT_EQ(packing.place(node("idle8", std::vector<Units>(8, 0)), pod(500))->score, 25);
  EXPECT_EQ(packing.place(node("idle2", {0, 0}), pod(500))->score, 31);
  // Onto a GPU with 600 free: 100 - 60 / 10 = 94.
  EXPECT_EQ(packing.place(node("shared", {400, 0}), pod(500))->score, 94);
  // A whole GPU on a used node: 50 - 1.
  EXPECT_EQ(packing.place(node("used", {400, 0}), pod(1000))->score, 49);
  EXPECT_EQ(packing.place(node("used", {400, 0}), cpu_only(100))->score, 0);
}

TEST(Random, FeasibleNodesInADeterministicRandomOrderThatMovesOnEachPod) {
  RandomPolicy random(7);
  const std::vector<NodeState> nodes{node("a", {0}), node("b", {0}), node("c", {0}),
                                     node("d", {0})};
  std::vector<double> first;
  for (const auto& n : nodes) first.push_back(random.place(n, pod(500))->score);
  EXPECT_EQ(std::set<double>(first.begin(), first.end()).size(), nodes.size());
  EXPECT_EQ(RandomPolicy(7).place(nodes[0], pod(500))->score, first[0]);
  random.observe(pod(500));
  EXPECT_NE(random.place(nodes[0], pod(500))->score, first[0]);
  EXPECT_FALSE(random.place(node("full", {1000}), pod(500)));
}

TEST(Random, PicksAmongFittingGpusOnly) {
  RandomPolicy random(1);
  std::set<int> chosen;
  for (int i = 0; i < 64; ++i) {
    const auto placement = random.place(node("n", {900, 0, 700, 0}), pod(400));
    ASSERT_TRUE(placement);
    chosen.insert(placement->gpus.front());
    random.observe(pod(400));
  }
  EXPECT_EQ(chosen, (std::set<int>{1, 3}));
}

TEST(PaperPolicies, AreRegisteredAndFgdPlusIsTheDefault) {
  for (std::string_view name :
       {"fgd", "fgd-plus", "best-fit", "dot-product", "gpu-packing", "random"}) {
    const auto policy = make_policy(name);
    ASSERT_TRUE(policy) << name;
    EXPECT_EQ(policy->name(), name);
  }
  // binpack was the default until benchmarks proved a better one: the deployed path did
  // (docs/placement.md, "As deployed").
  EXPECT_EQ(policy_names().front(), "fgd-plus");
  EXPECT_TRUE(make_policy("binpack"));
}

TEST(PaperPolicies, WholeGpuPodsNeverShareAGpu) {
  for (const auto& name : policy_names()) {
    const auto policy = make_policy(name);
    const NodeState n = node("n", {10, 0, 500, 0});
    const auto placement = policy->place(n, pod(1000, 2));
    ASSERT_TRUE(placement) << name;
    EXPECT_EQ(placement->gpus, (std::vector<int>{1, 3})) << name;
  }
}

// Scarce GPU models. Target: 5 % of the GPU demand pinned to model S, the rest unpinned. Node s
// (model S) has one of its two GPUs free, node p (model P) all eight: 9 000 idle in all, so the
// pinned demand still to come is 0.05 x 9 000 = 450 against S's 1 000 idle: price 0.45.
struct ScarceFleet {
  TargetWorkload target() const {
    WorkloadShape pinned = shape(1000);
    pinned.allowed_models = {"S"};
    return {{pinned, 0.05}, {shape(1000), 0.95}};
  }
  std::vector<NodeState> nodes{node("s", {1000, 0}, 64000, 0, 262144, "S"),
                               node("p", std::vector<Units>(8, 0), 64000, 0, 262144, "P")};
};

TEST(FgdPlusScarcity, PricesAPinnedModelByItsDemandAgainstItsIdleMemory) {
  const ScarceFleet fleet;
  const FgdPlusPolicy plus(fleet.target());
  const auto prices = plus.model_prices(fleet.nodes);
  ASSERT_EQ(prices.size(), 1U);
  EXPECT_EQ(prices[0].models, std::vector<std::string>{"S"});
  EXPECT_NEAR(prices[0].price, 0.45, 1e-12);
  // Pinned demand beyond the model's idle memory: the price stops at 1.
  const std::vector<NodeState> full{node("s", {1000, 990}, 64000, 0, 262144, "S"),
                                    node("p", std::vector<Units>(8, 0), 64000, 0, 262144, "P")};
  EXPECT_EQ(plus.model_prices(full)[0].price, 1.0);
}

TEST(FgdPlusScarcity, AnUnpinnedPodLeavesTheScarceModelToThePinnedDemand) {
  const ScarceFleet fleet;
  const NodeState& s = fleet.nodes[0];
  const NodeState& p = fleet.nodes[1];
  const PodDemand unpinned = pod(1000);
  PodDemand pinned = pod(1000);
  pinned.allowed_models = {"S"};

  // Without prices the pod fills s (score 0: nothing idle after) rather than open p
  // (+0.05 for the pinned shape p cannot host, -0.1 x 7/8 for the GPUs left idle).
  FgdPlusPolicy::Options off;
  off.scarcity_weight = 0;
  FgdPlusPolicy blind(fleet.target(), off);
  blind.observe_cluster(fleet.nodes);
  EXPECT_NEAR(blind.place(s, unpinned)->score, 0.0, 1e-12);
  EXPECT_NEAR(blind.place(p, unpinned)->score, 0.05 - 0.0875, 1e-12);

  // With them s costs weight x 0.45 per GPU taken, and p wins.
  FgdPlusPolicy::Options on;
  on.scarcity_weight = 4;
  FgdPlusPolicy plus(fleet.target(), on);
  const std::uint64_t before = plus.state_version();
  plus.observe_cluster(fleet.nodes);
  EXPECT_NE(plus.state_version(), before);  // cached scores must not survive new prices
  EXPECT_NEAR(plus.place(s, unpinned)->score, -4 * 0.45, 1e-12);
  EXPECT_NEAR(plus.place(p, unpinned)->score, 0.05 - 0.0875, 1e-12);
  // The pinned pod is the demand the price protects: it pays nothing on s.
  EXPECT_NEAR(plus.place(s, pinned)->score, 0.0, 1e-12);
  EXPECT_FALSE(plus.place(p, pinned).has_value());
  // A sharing pod pays for what it takes; score() and the reference agree with place().
  const PodDemand half = pod(500);
  for (const NodeState* n : {&s, &p}) {
    for (const PodDemand& d : {unpinned, pinned, half}) {
      const auto placed = plus.place(*n, d);
      const auto reference = plus.reference_place(*n, d);
      ASSERT_EQ(placed.has_value(), reference.has_value());
      if (!placed) continue;
      EXPECT_EQ(placed->score, *plus.score(*n, d));
      EXPECT_EQ(placed->score, reference->score);
      EXPECT_EQ(placed->gpus, reference->gpus);
    }
  }
  EXPECT_NEAR(plus.scarcity_cost("S", 1000, half, 500), 4 * 0.45 * 0.5, 1e-12);
  EXPECT_EQ(plus.scarcity_cost("P", 1000, half, 500), 0.0);
}

TEST(FgdPlusScarcity, PricesFollowTheClusterOnlyEveryRefresh) {
  const ScarceFleet fleet;
  FgdPlusPolicy::Options options;
  options.scarcity_refresh = 3;
  FgdPlusPolicy plus(fleet.target(), options);
  plus.observe_cluster(fleet.nodes);
  const std::uint64_t version = plus.state_version();
  // s is now full: the price would be 1, but it is read again only on the third call.
  const std::vector<NodeState> filled{node("s", {1000, 1000}, 64000, 0, 262144, "S"),
                                      fleet.nodes[1]};
  plus.observe_cluster(filled);
  plus.observe_cluster(filled);
  EXPECT_EQ(plus.state_version(), version);
  EXPECT_NEAR(plus.prices()[0].price, 0.45, 1e-12);
  plus.observe_cluster(filled);
  EXPECT_NE(plus.state_version(), version);
  EXPECT_EQ(plus.prices()[0].price, 1.0);
}

// Hosts of multi-GPU pods. Target by GPU demand: half single-GPU pods, a quarter 8-GPU pods of
// 120 cores (only node g3 has the CPU), a quarter 8-GPU pods of 64 cores (g3 or g2). Weights
// are per pod x sqrt(GPUs), so an 8-GPU shape's weight is its pods' share x sqrt(8). Both nodes
// are free: 16 idle GPUs, 4 of them wanted by the big pods against g3's 8 (ratio 0.5), 8 (big
// and mid pods both fit every host of the mid shape) against 16 (0.5). With host_threshold
// 0.2 both prices are (0.5 - 0.2) / 0.8 = 0.375.
struct HostFleet {
  static WorkloadShape eight(std::int64_t cpu) { return shape(1000, 8, cpu); }
  TargetWorkload target() const {
    const double eight_gpu = 0.25 / std::sqrt(8.0);
    return {{shape(1000, 1, 1000), 0.5}, {eight(120000), eight_gpu}, {eight(64000), eight_gpu}};
  }
  static FgdPlusPolicy::Options options() {
    FgdPlusPolicy::Options options;
    options.host_weight = 2;
    options.host_threshold = 0.2;
    return options;
  }
  std::vector<NodeState> nodes{node("g3", std::vector<Units>(8, 0), 128000, 0, 786432, "G3"),
                               node("g2", std::vector<Units>(8, 0), 96000, 0, 393216, "G2")};
};

TEST(FgdPlusHosts, PricesAMultiGpuShapeByTheDemandForItsHostsAgainstTheHostsLeft) {
  const HostFleet fleet;
  FgdPlusPolicy plus(fleet.target(), HostFleet::options());
  const auto prices = plus.host_prices(fleet.nodes);
  ASSERT_EQ(prices.size(), 2U);
  for (const HostPrice& price : prices) EXPECT_NEAR(price.price, 0.375, 1e-12);
  // g2 half used: 12 idle GPUs, 3 wanted by big pods against g3 (0.375, below the threshold
  // after the ramp: (0.375 - 0.2) / 0.8), 6 by both against g3 alone (0.75).
  const std::vector<NodeState> half{
      fleet.nodes[0], node("g2", {1000, 1000, 1000, 1000, 0, 0, 0, 0}, 96000, 0, 393216, "G2")};
  const auto after = plus.host_prices(half);
  ASSERT_EQ(after.size(), 2U);
  EXPECT_NEAR(after[0].price, (0.375 - 0.2) / 0.8, 1e-12);
  EXPECT_NEAR(after[1].price, (0.75 - 0.2) / 0.8, 1e-12);
  // No host left for a shape: nothing to protect, no price.
  const std::vector<NodeState> none{
      node("g3", {1000, 0, 0, 0, 0, 0, 0, 0}, 128000, 0, 786432, "G3"), fleet.nodes[1]};
  const auto left = plus.host_prices(none);
  ASSERT_EQ(left.size(), 1U);
  EXPECT_EQ(left[0].shape.cpu_milli, 64000);
}

TEST(FgdPlusHosts, APodPaysForTheHostsItBreaks) {
  const HostFleet fleet;
  const NodeState& g3 = fleet.nodes[0];
  const NodeState& g2 = fleet.nodes[1];
  FgdPlusPolicy plus(fleet.target(), HostFleet::options());
  const std::uint64_t before = plus.state_version();
  plus.observe_cluster(fleet.nodes);
  EXPECT_NE(plus.state_version(), before);  // cached scores must not survive new prices
  // One GPU on g3 breaks a host of both shapes: one slot of 8 GPUs, which would have held one
  // pod, so the pod pays the dearest loss once, 2 x 0.375 x 8 GPUs, not one per shape. On g2
  // the slot is priced by the pods that can use it, the mid ones alone: 4 GPUs wanted against
  // 16, (0.25 - 0.2) / 0.8, so 2 x 0.0625 x 8.
  const PodDemand single = pod(1000, 1, 4000);
  EXPECT_NEAR(plus.host_cost(g3, single), 6.0, 1e-12);
  EXPECT_NEAR(plus.host_cost(g2, single), 1.0, 1e-12);
  // A CPU-only pod breaks g3 for the big pods once it leaves less than 120 cores there.
  EXPECT_EQ(plus.host_cost(g3, cpu_only(8000)), 0.0);
  EXPECT_NEAR(plus.host_cost(g3, cpu_only(9000)), 6.0, 1e-12);
  // A sharing pod that fits on a used GPU breaks nothing (a ninth GPU, half used).
  const NodeState shared = node("g3", {500, 0, 0, 0, 0, 0, 0, 0, 0}, 128000, 0, 786432, "G3");
  EXPECT_EQ(plus.host_cost(shared, pod(500, 1, 1000)), 0.0);
  EXPECT_NEAR(plus.host_cost(shared, pod(600, 1, 1000)), 6.0, 1e-12);  // takes a whole GPU

  FgdPlusPolicy blind(fleet.target(), [] {
    auto options = HostFleet::options();
    options.host_weight = 0;
    return options;
  }());
  blind.observe_cluster(fleet.nodes);
  for (const NodeState* n : {&g3, &g2, &shared}) {
    for (const PodDemand& d : {single, pod(500, 1, 1000), cpu_only(9000), pod(1000, 8, 64000)}) {
      const auto placed = plus.place(*n, d);
      const auto reference = plus.reference_place(*n, d);
      ASSERT_EQ(placed.has_value(), reference.has_value());
      if (!placed) continue;
      EXPECT_EQ(placed->score, *plus.score(*n, d));
      EXPECT_NEAR(placed->score, reference->score, 1e-12);
      EXPECT_EQ(placed->gpus, reference->gpus);
      EXPECT_NEAR(placed->score, blind.place(*n, d)->score - plus.host_cost(*n, d), 1e-12);
    }
  }
  // The 64-core 8-GPU pod goes to g2 and leaves g3 to the pods only g3 can host.
  EXPECT_GT(plus.place(g2, pod(1000, 8, 64000))->score, plus.place(g3, pod(1000, 8, 64000))->score);
}

// Before any multi-GPU shape is known there is no host price, and an 8-GPU pod that empties a
// node scores the same on nodes of any spec: it goes to the one with less CPU and memory, and
// the larger one stays for the shapes only it hosts.
TEST(FgdPlusHosts, APodOfSeveralGpusThatScoresAlikeGoesToTheSmallerNode) {
  WorkloadShape single = shape(1000, 1, 8000);
  single.memory = 32768;
  FgdPlusPolicy plus(only(single));
  const std::vector<Units> empty(8, 0);
  const std::vector<NodeState> nodes{node("g3", empty, 128000, 0, 786432, "G3"),
                                     node("g2", empty, 96000, 0, 393216, "G2"),
                                     node("g2-less-memory", empty, 96000, 0, 262144, "G2")};
  plus.observe_cluster(nodes);
  EXPECT_TRUE(plus.host_prices().empty());
  const PodDemand eight = pod(1000, 8, 64000);
  std::vector<double> scores;
  for (const NodeState& n : nodes) {
    scores.push_back(*plus.score(n, eight));
    EXPECT_EQ(plus.place(n, eight)->score, scores.back());
    EXPECT_NEAR(plus.reference_place(n, eight)->score, scores.back(), 1e-12);
    // Without the term the nodes tie.
    EXPECT_NEAR(scores.back() + plus.spec_tie_break(n, eight),
                scores.front() + plus.spec_tie_break(nodes.front(), eight), 1e-12);
  }
  EXPECT_GT(scores[2], scores[1]);
  EXPECT_GT(scores[1], scores[0]);
  // Cores, plus the memory in the cores the workload asks with it (8 cores per 32768).
  EXPECT_NEAR(plus.spec_tie_break(nodes[1], eight),
              FgdPlusPolicy::kSpecTieBreak * (96 + 393216.0 / 32768 * 8), 1e-18);
  EXPECT_LT(plus.spec_tie_break(nodes[0], eight), 1e-5);  // far below the measure's steps
  // Nor does a pod that leaves wholly free GPUs on the node, or a pod of one GPU.
  EXPECT_EQ(plus.spec_tie_break(nodes[0], pod(1000, 4, 32000)), 0.0);
  const NodeState half = node("g2-half", {1000, 1000, 1000, 1000, 0, 0, 0, 0}, 96000, 0, 393216);
  EXPECT_GT(plus.spec_tie_break(half, pod(1000, 4, 32000)), 0.0);
  EXPECT_EQ(plus.spec_tie_break(nodes[0], pod(1000, 1, 1000)), 0.0);
  EXPECT_EQ(plus.spec_tie_break(nodes[0], pod(500)), 0.0);
  EXPECT_EQ(plus.spec_tie_break(nodes[0], cpu_only(1000)), 0.0);
}

TEST(FgdPlusHosts, ABrokenSlotCostsItsDearestShapeNotEveryShapeItHosts) {
  // g2 half used (prices as above): the big shape's price is (0.375 - 0.2) / 0.8, the mid
  // one's (0.75 - 0.2) / 0.8. A GPU taken on g3 loses a slot of each; the pod pays for the mid
  // one alone, the dearer, as if the big shape were not priced at all.
  const HostFleet fleet;
  const std::vector<NodeState> half{
      fleet.nodes[0], node("g2", {1000, 1000, 1000, 1000, 0, 0, 0, 0}, 96000, 0, 393216, "G2")};
  FgdPlusPolicy plus(fleet.target(), HostFleet::options());
  plus.observe_cluster(half);
  ASSERT_EQ(plus.host_prices().size(), 2U);
  const double mid = (0.75 - 0.2) / 0.8;
  EXPECT_NEAR(plus.host_cost(half[0], pod(1000, 1, 4000)), 2 * mid * 8, 1e-12);
  // Many variants of one shape (CPU differing by a core) price the same slot no higher.
  TargetWorkload variants{{shape(1000, 1, 1000), 0.5}};
  for (int i = 0; i < 8; ++i) {
    variants.push_back({HostFleet::eight(64000 - 1000 * i), 0.25 / 8 / std::sqrt(8.0)});
  }
  FgdPlusPolicy many(variants, HostFleet::options());
  many.observe_cluster(fleet.nodes);
  ASSERT_GT(many.host_prices().size(), 1U);  // the variants with enough demand behind them
  double dearest = 0;
  for (const HostPrice& price : many.host_prices()) dearest = std::max(dearest, price.price);
  EXPECT_NEAR(many.host_cost(fleet.nodes[1], pod(1000, 1, 4000)), 2 * dearest * 8, 1e-12);
}

// One g3 (128 cores, 768 GiB) and three g2 (96 cores, 384 GiB), 8 empty GPUs each, and a target
// where the common 64-core 8-GPU shape is priced and the 120-core one (g3 only) is below the
// threshold.
std::pair<TargetWorkload, std::vector<NodeState>> one_g3_three_g2() {
  const double eight_gpu = 1 / std::sqrt(8.0);
  TargetWorkload target{{shape(1000, 1, 1000), 0.5},
                        {HostFleet::eight(120000), 0.05 * eight_gpu},
                        {HostFleet::eight(64000), 0.45 * eight_gpu}};
  std::vector<NodeState> nodes{node("g3", std::vector<Units>(8, 0), 128000, 0, 786432, "G3")};
  for (int i = 0; i < 3; ++i) {
    nodes.push_back(
        node("g2-" + std::to_string(i), std::vector<Units>(8, 0), 96000, 0, 393216, "G2"));
  }
  return {std::move(target), std::move(nodes)};
}

TEST(FgdPlusHosts, AMultiGpuPodPaysMoreOnANodeThatAlsoHostsRarerShapes) {
  // One g3 and three g2: the common 64-core shape is priced, the 120-core one (g3 only) is
  // below the threshold. The largest loss is the common shape's on either node, dearer on g3
  // by the 120-core demand its class counts; the host sets make g3 dearer still for a 64-core
  // 8-GPU pod by what it holds for the 120-core pods.
  const auto [target, nodes] = one_g3_three_g2();
  const PodDemand common = pod(1000, 8, 64000);
  FgdPlusPolicy largest_only(target, [] {
    auto options = HostFleet::options();
    options.exclusive_weight = 0;
    return options;
  }());
  largest_only.observe_cluster(nodes);
  EXPECT_GT(largest_only.host_cost(nodes[1], common), 0.0);
  const HostPrice* common_price = nullptr;
  for (const HostPrice& host : largest_only.host_prices()) {
    if (host.shape.cpu_milli == 64000) common_price = &host;
  }
  ASSERT_NE(common_price, nullptr);
  ASSERT_EQ(common_price->class_prices.size(), 2U);  // g3's class, then g2's
  EXPECT_EQ(common_price->class_prices[0], common_price->price);
  EXPECT_LT(common_price->class_prices[1], common_price->price);
  const double weight = HostFleet::options().host_weight;
  EXPECT_NEAR(largest_only.host_cost(nodes[0], common), weight * common_price->price * 8, 1e-12);
  EXPECT_NEAR(largest_only.host_cost(nodes[1], common), weight * common_price->class_prices[1] * 8,
              1e-12);
  const double largest_difference =
      largest_only.host_cost(nodes[0], common) - largest_only.host_cost(nodes[1], common);

  const FgdPlusPolicy::Options options = [] {
    auto options = HostFleet::options();
    options.exclusive_weight = 3;
    return options;
  }();
  FgdPlusPolicy plus(target, options);
  plus.observe_cluster(nodes);
  double rare_scarcity = -1;
  for (const HostPrice& host : plus.host_prices()) {
    if (host.shape.cpu_milli != 120000) continue;
    EXPECT_EQ(host.price, 0.0);
    rare_scarcity = host.scarcity;
  }
  ASSERT_GT(rare_scarcity, 0.0);
  EXPECT_NEAR(plus.host_cost(nodes[0], common) - plus.host_cost(nodes[1], common),
              largest_difference + options.exclusive_weight * rare_scarcity * 8, 1e-9);
  EXPECT_GT(plus.place(nodes[1], common)->score, plus.place(nodes[0], common)->score);
  // A single-GPU pod pays the largest loss alone, the same on both.
  EXPECT_NEAR(plus.host_cost(nodes[0], pod(1000, 1, 4000)),
              largest_only.host_cost(nodes[0], pod(1000, 1, 4000)), 1e-12);
}

TEST(FgdPlusHosts, ASmallerMultiGpuPodPaysTheLargestLossAloneOnEitherHost) {
  // As above, with a 4-GPU pod of 48 cores: it breaks a 64-core 8-GPU slot on g3 and on g2,
  // and the 120-core set on g3 too, but only pods of the largest priced GPU count pay the host
  // sets: the pod pays the largest loss alone on either node (at the routed prices), not the
  // sets on top.
  const auto [target, nodes] = one_g3_three_g2();
  FgdPlusPolicy::Options options = HostFleet::options();
  options.exclusive_weight = 3;
  FgdPlusPolicy plus(target, options);
  plus.observe_cluster(nodes);
  options.exclusive_weight = 0;
  FgdPlusPolicy largest_only(target, options);
  largest_only.observe_cluster(nodes);
  const PodDemand four = pod(1000, 4, 48000);
  EXPECT_GT(plus.host_cost(nodes[1], four), 0.0);
  for (const NodeState& n : nodes) {
    EXPECT_NEAR(plus.host_cost(n, four), largest_only.host_cost(n, four), 1e-12) << n.name();
  }
  // The 8-GPU pod of the common shape still pays the 120-core set on g3.
  const PodDemand common = pod(1000, 8, 64000);
  EXPECT_GT(plus.host_cost(nodes[0], common), plus.host_cost(nodes[1], common));
}

// One g3 and three g2 (as above), all free: 32 idle GPUs. A target by GPU demand of single-GPU
// pods, 8-GPU pods of 120 cores (g3 only) and 8-GPU pods of 64 cores (every node).
std::pair<TargetWorkload, std::vector<NodeState>> rare_and_common(double single, double rare,
                                                                  double common) {
  const double per_eight = 1 / std::sqrt(8.0);
  auto [unused, nodes] = one_g3_three_g2();
  return {{{shape(1000, 1, 1000), single},
           {HostFleet::eight(120000), rare * per_eight},
           {HostFleet::eight(64000), common * per_eight}},
          std::move(nodes)};
}

const HostPrice& price_of(const FgdPlusPolicy& policy, std::int64_t cpu) {
  for (const HostPrice& host : policy.host_prices()) {
    if (host.shape.cpu_milli == cpu) return host;
  }
  throw std::logic_error("no such priced shape");
}

// The priced shape of `gpus` GPUs (the first), or null.
const HostPrice* price_of_gpus(const FgdPlusPolicy& policy, int gpus) {
  for (const HostPrice& host : policy.host_prices()) {
    if (host.shape.gpu_count == gpus) return &host;
  }
  return nullptr;
}

TEST(FgdPlusHosts, RoutedPricesFillTheClassOfTheRarerShapeWithItsOwnDemandFirst) {
  // 9.6 GPUs of 120-core pods against g3's 8 slots: routed first, they fill g3 (load 1.2, price
  // 1). The 19.2 GPUs of 64-core pods go to g2 then (19.2 / 24 = 0.8, price (0.8 - 0.2) / 0.8):
  // g2 is not yet up to g3's load. Counted per class, as single-GPU and 8-GPU pods pay, the
  // 64-core slot costs 28.8 / 32 on g3 and 19.2 / 32 on g2.
  const auto [target, nodes] = rare_and_common(0.1, 0.3, 0.6);
  FgdPlusPolicy plus(target, HostFleet::options());
  plus.observe_cluster(nodes);
  const HostPrice& common = price_of(plus, 64000);
  ASSERT_EQ(common.routed_prices.size(), 2U);  // g3's class, then g2's
  EXPECT_NEAR(common.routed_prices[0], 1.0, 1e-12);
  EXPECT_NEAR(common.routed_prices[1], 0.75, 1e-12);
  EXPECT_NEAR(common.class_prices[0], (0.9 - 0.2) / 0.8, 1e-12);
  EXPECT_NEAR(common.class_prices[1], (0.6 - 0.2) / 0.8, 1e-12);
  const HostPrice& rare = price_of(plus, 120000);
  EXPECT_NEAR(rare.routed_prices[0], 1.0, 1e-12);
  EXPECT_EQ(rare.routed_prices[1], 0.0);  // g2 hosts none

  // A 4-GPU pod (a middle pod: the largest priced shapes have 8 GPUs) pays the routed prices,
  // the dearest loss of its slot: 1 x 8 on g3, 0.75 x 8 on g2. A single-GPU pod pays the
  // class prices.
  const double weight = HostFleet::options().host_weight;
  const PodDemand four = pod(1000, 4, 48000);
  ASSERT_TRUE(plus.middle_pod(four));
  EXPECT_NEAR(plus.host_cost(nodes[0], four), weight * 1.0 * 8, 1e-12);
  EXPECT_NEAR(plus.host_cost(nodes[1], four), weight * 0.75 * 8, 1e-12);
  const PodDemand single = pod(1000, 1, 4000);
  EXPECT_FALSE(plus.middle_pod(single));
  EXPECT_FALSE(plus.middle_pod(pod(1000, 8, 64000)));
  EXPECT_NEAR(plus.host_cost(nodes[1], single), weight * common.class_prices[1] * 8, 1e-12);
}

TEST(FgdPlusHosts, RoutedPricesAreEvenWhereTheRarerShapeLeavesItsClassRoomForTheCommonOne) {
  // 3.2 GPUs of 120-core pods take 0.4 of g3; the 12.8 GPUs of 64-core pods would load g2 to
  // 0.53, above g3, so they are spread over both: (3.2 + 12.8) / 32 = 0.5 on each, price
  // (0.5 - 0.2) / 0.8. Per class, g3 (16 / 32) would cost more than g2 (12.8 / 32).
  const auto [target, nodes] = rare_and_common(0.5, 0.1, 0.4);
  FgdPlusPolicy plus(target, HostFleet::options());
  plus.observe_cluster(nodes);
  const HostPrice& common = price_of(plus, 64000);
  ASSERT_EQ(common.routed_prices.size(), 2U);
  EXPECT_NEAR(common.routed_prices[0], 0.375, 1e-12);
  EXPECT_NEAR(common.routed_prices[1], 0.375, 1e-12);
  EXPECT_GT(common.class_prices[0], common.class_prices[1]);
  const PodDemand four = pod(1000, 4, 48000);
  EXPECT_NEAR(plus.host_cost(nodes[0], four), plus.host_cost(nodes[1], four), 1e-12);
}

// Single-GPU pods of `single_cpu`, 4-GPU pods of 32 cores and 8-GPU pods of 64 cores, each a
// quarter or a half of the GPU demand (0.5 / 0.25 / 0.25); one 8-GPU node of 96 cores and two
// 4-GPU nodes of 32 cores (8 per GPU).
std::pair<TargetWorkload, std::vector<NodeState>> small_and_middle_nodes(std::int64_t single_cpu) {
  const TargetWorkload target{{shape(1000, 1, single_cpu), 0.5},
                              {shape(1000, 4, 32000), 0.25 / 4 * std::sqrt(4.0)},
                              {shape(1000, 8, 64000), 0.25 / 8 * std::sqrt(8.0)}};
  const std::vector<NodeState> nodes{
      node("g2", std::vector<Units>(8, 0), 96000, 0, 393216, "G2"),
      node("v16-0", std::vector<Units>(4, 0), 32000, 0, 131072, "V100M16"),
      node("v16-1", std::vector<Units>(4, 0), 32000, 0, 131072, "V100M16")};
  return {target, nodes};
}

TEST(FgdPlusHosts, APodOfOneGpuPaysRoutedPricesForTheMiddleSlotsOfANodeTheWorkloadCanUse) {
  // 8 of the 16 idle GPUs are wanted by pods that need a 4-GPU host, against 16 slots: 0.5,
  // price (0.5 - 0.2) / 0.8. Counted per class, the 4-GPU nodes' slot serves only the 4-GPU
  // pods (4 / 16: 0.0625); routed, the 8-GPU pods fill the 8-GPU node to 0.5 and the 4-GPU
  // pods the 4-GPU nodes to 0.5 too (0.375). Single-GPU pods of 10 cores: the workload asks
  // 14.66 / 1.707 = 8.59 cores per GPU, so a 4-GPU node's GPUs are usable to 8 / 8.59 = 0.93.
  const auto [target, nodes] = small_and_middle_nodes(10000);
  FgdPlusPolicy plus(target, HostFleet::options());
  plus.observe_cluster(nodes);
  const HostPrice* four_slot = price_of_gpus(plus, 4);
  ASSERT_NE(four_slot, nullptr);
  ASSERT_EQ(four_slot->class_prices.size(), 2U);  // the 8-GPU node's class, then the 4-GPU's
  EXPECT_NEAR(four_slot->class_prices[1], 0.0625, 1e-12);
  EXPECT_NEAR(four_slot->routed_prices[1], 0.375, 1e-12);
  EXPECT_NEAR(plus.usable_share(nodes[1]), 8 / (14.65685 / 1.70711), 1e-4);
  EXPECT_DOUBLE_EQ(plus.usable_share(nodes[0]), 1.0);
  // A whole single-GPU pod and a sharing pod break the 4-GPU node's one slot: routed price.
  const double weight = HostFleet::options().host_weight;
  for (const PodDemand& small : {pod(1000, 1, 10000), pod(500, 1, 5000)}) {
    EXPECT_NEAR(plus.host_cost(nodes[1], small), weight * 0.375 * 4, 1e-12);
    const auto placed = plus.place(nodes[1], small);
    const auto reference = plus.reference_place(nodes[1], small);
    ASSERT_TRUE(placed && reference);
    EXPECT_EQ(placed->score, *plus.score(nodes[1], small));
    EXPECT_NEAR(placed->score, reference->score, 1e-12);
  }
  // The 8-GPU shape's slot (the largest) is still priced per class for them.
  const HostPrice* eight_slot = price_of_gpus(plus, 8);
  ASSERT_NE(eight_slot, nullptr);
  EXPECT_NEAR(plus.host_cost(nodes[0], pod(1000, 1, 10000)),
              weight * std::max(eight_slot->class_prices[0] * 8, four_slot->class_prices[0] * 4),
              1e-12);

  // Single-GPU pods of 16 cores: 10.34 cores per GPU, usable to 0.77, under
  // small_routed_usable: the 4-GPU node's GPUs would be stranded behind its CPU anyway, and
  // its slot keeps the class price. The prices themselves are the same.
  const auto [cpu_heavy, same_nodes] = small_and_middle_nodes(16000);
  FgdPlusPolicy heavy(cpu_heavy, HostFleet::options());
  heavy.observe_cluster(same_nodes);
  EXPECT_LT(heavy.usable_share(same_nodes[1]), 0.8);
  EXPECT_NEAR(heavy.host_cost(same_nodes[1], pod(1000, 1, 16000)), weight * 0.0625 * 4, 1e-12);
  // Above 1, never.
  auto options = HostFleet::options();
  options.small_routed_usable = 1.5;
  FgdPlusPolicy never(target, options);
  never.observe_cluster(nodes);
  EXPECT_NEAR(never.host_cost(nodes[1], pod(1000, 1, 10000)), weight * 0.0625 * 4, 1e-12);
}

// FgdPlusPolicy with HostFleet::options(), and the same without middle_balance_weight, both
// having seen `nodes`.
std::pair<FgdPlusPolicy, FgdPlusPolicy> with_and_without_middle_weight(
    const TargetWorkload& target, std::span<const NodeState> nodes) {
  FgdPlusPolicy::Options options = HostFleet::options();
  FgdPlusPolicy plus(target, options);
  options.middle_balance_weight = 0;
  FgdPlusPolicy once(target, options);
  plus.observe_cluster(nodes);
  once.observe_cluster(nodes);
  return {std::move(plus), std::move(once)};
}

TEST(FgdPlusHosts, AMiddlePodWeighsTheGpusItStrandsTwice) {
  // About 10 cores per GPU arrive on average. A 4-GPU pod of 70 cores leaves 4 GPUs behind 26
  // cores on g2 (S grows by about 1.4 GPUs) and behind 58 on g3 (S stays 0). With
  // middle_balance_weight it pays that growth once more, times the dearest host price.
  const auto [target, nodes] = rare_and_common(0.1, 0.3, 0.6);
  const auto [plus, once] = with_and_without_middle_weight(target, nodes);
  const PodDemand four = pod(1000, 4, 70000);
  ASSERT_TRUE(plus.middle_pod(four));
  double dearest = 0;
  for (const HostPrice& host : plus.host_prices()) dearest = std::max(dearest, host.price);
  ASSERT_GT(dearest, 0.5);
  for (const NodeState& n : {nodes[0], nodes[1]}) {
    const auto placed = plus.place(n, four);
    const auto reference = plus.reference_place(n, four);
    ASSERT_TRUE(placed && reference);
    EXPECT_EQ(placed->score, *plus.score(n, four));
    EXPECT_NEAR(placed->score, reference->score, 1e-12);
    FreeResources before = FreeResources::of(n);
    FreeResources after = before;
    after.take(four, placed->gpus);
    const double growth = (plus.stranded_gpu(after) - plus.stranded_gpu(before)) / 1000;
    EXPECT_NEAR(placed->score, once.place(n, four)->score - dearest * growth, 1e-12) << n.name();
    if (n.name() == "g3") {
      EXPECT_EQ(growth, 0.0);
    } else {
      EXPECT_GT(growth, 1.0);
    }
  }
  // A single-GPU pod weighs S once.
  const PodDemand single = pod(1000, 1, 30000);
  EXPECT_EQ(plus.place(nodes[1], single)->score, once.place(nodes[1], single)->score);
}

TEST(FgdPlusHosts, AMiddlePodWeighsSOnceWhileNoHostIsDear) {
  // The same fleet with a tenth of the GPU demand in 8-GPU pods: 3.2 GPUs against 32 slots, under
  // host_threshold. The shapes stay priced for the host sets (scarcity above 0), but no host is
  // dear, so the extra weight on S would only send a middle pod to wholly free nodes: it is 0.
  // About 3 cores per GPU arrive; a 4-GPU pod of 90 cores leaves 4 GPUs behind 6 cores on g2.
  const auto [target, nodes] = rare_and_common(0.9, 0.02, 0.08);
  const auto [plus, once] = with_and_without_middle_weight(target, nodes);
  ASSERT_FALSE(plus.host_prices().empty());
  for (const HostPrice& host : plus.host_prices()) {
    EXPECT_GT(host.scarcity, 0.0);
    EXPECT_EQ(host.price, 0.0);
  }
  const PodDemand four = pod(1000, 4, 90000);
  ASSERT_TRUE(plus.middle_pod(four));
  for (const NodeState& n : {nodes[0], nodes[1]}) {
    EXPECT_EQ(plus.place(n, four)->score, once.place(n, four)->score) << n.name();
    EXPECT_EQ(plus.reference_place(n, four)->score, once.reference_place(n, four)->score);
  }
  // S does grow on g2, so a weight on it would show.
  FreeResources before = FreeResources::of(nodes[1]);
  FreeResources after = before;
  after.take(four, plus.place(nodes[1], four)->gpus);
  EXPECT_GT(plus.stranded_gpu(after), plus.stranded_gpu(before));
}

TEST(FgdPlusHosts, ASlotIsPricedByThePodsItsNodeCanHost) {
  // One 8-GPU node and two 2-GPU nodes of 104 cores; a target of single-GPU pods, 2-GPU pods
  // of 12 cores and 8-GPU pods of 64 cores. The 8-GPU pods compete for the 8-GPU node's slots,
  // which also host 2-GPU pods, so the 2-GPU shape's cluster-wide price counts them; a 2-GPU
  // node can host no 8-GPU pod, and its slot is priced by the 2-GPU pods alone.
  const double eight_gpu = 1 / std::sqrt(8.0);
  const double two_gpu = 1 / std::sqrt(2.0);
  const TargetWorkload target{{shape(1000, 1, 4000), 0.4},
                              {shape(1000, 2, 12000), 0.1 * two_gpu},
                              {shape(1000, 8, 64000), 0.5 * eight_gpu}};
  const std::vector<NodeState> nodes{
      node("g2", std::vector<Units>(8, 0), 96000, 0, 393216, "G2"),
      node("t4-0", std::vector<Units>(2, 0), 104000, 0, 393216, "T4"),
      node("t4-1", std::vector<Units>(2, 0), 104000, 0, 393216, "T4")};
  FgdPlusPolicy plus(target, HostFleet::options());
  plus.observe_cluster(nodes);
  const HostPrice* pair = price_of_gpus(plus, 2);
  ASSERT_NE(pair, nullptr);
  ASSERT_EQ(pair->class_prices.size(), 2U);  // g2's class, then the T4 nodes'
  EXPECT_GT(pair->price, 0.0);
  EXPECT_EQ(pair->class_prices[0], pair->price);  // the 8-GPU node hosts every shape
  EXPECT_LT(pair->class_prices[1], pair->price);
  const double weight = HostFleet::options().host_weight;
  const PodDemand single = pod(1000, 1, 8000);
  EXPECT_NEAR(plus.host_cost(nodes[1], single), weight * pair->class_prices[1] * 2, 1e-12);
  EXPECT_NEAR(plus.host_cost(nodes[2], single), plus.host_cost(nodes[1], single), 1e-12);
  // A 2-GPU node of a class the prices have not seen pays the cluster-wide price.
  const NodeState unseen = node("p100", std::vector<Units>(2, 0), 48000, 0, 393216, "P100");
  EXPECT_NEAR(plus.host_cost(unseen, single), weight * pair->price * 2, 1e-12);
  // score(), place() and the reference computation agree on every node, unseen included.
  for (const NodeState* n : {&nodes[0], &nodes[1], &unseen}) {
    const auto placed = plus.place(*n, single);
    const auto reference = plus.reference_place(*n, single);
    ASSERT_TRUE(placed && reference);
    EXPECT_EQ(placed->score, *plus.score(*n, single));
    EXPECT_NEAR(placed->score, reference->score, 1e-12);
  }
}

TEST(FgdPlusHosts, ProtectsTheHostsOfARareShapeBelowTheTargetsCoverage) {
  // 300 single-GPU pods and one 8-GPU pod of 120 cores: the big shape is under 1 % of the
  // learned weight, below the target's 95 % coverage, yet its pods need g3.
  FgdPlusPolicy plus(FgdPlusPolicy::default_learning(), HostFleet::options());
  for (int i = 0; i < 300; ++i) plus.observe(pod(1000, 1, 4000, 16384));
  plus.observe(pod(1000, 8, 120000, 16384));
  for (const auto& [shape, weight] : plus.target()) EXPECT_EQ(shape.gpu_count, 1);
  // One host among 60 free 8-GPU nodes: 480 idle GPUs, about 2.6 % of them wanted by big pods.
  std::vector<NodeState> nodes{node("g3", std::vector<Units>(8, 0), 128000, 0, 786432, "G3")};
  for (int i = 0; i < 59; ++i) {
    nodes.push_back(
        node("g2-" + std::to_string(i), std::vector<Units>(8, 0), 96000, 0, 393216, "G2"));
  }
  const auto prices = plus.host_prices(nodes);
  ASSERT_EQ(prices.size(), 1U);
  EXPECT_EQ(prices[0].shape.cpu_milli, 120000);
  EXPECT_GT(prices[0].price, 0.5);
}

}  // namespace
}  // namespace gpushare::core
