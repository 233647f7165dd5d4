#include <gtest/gtest.h>

#include <random>

#include "gpushare/core/fit.h"
#include "gpushare/core/placement_policy.h"
#include "gpushare/core/policies/binpack.h"
#include "gpushare/core/policies/spread.h"
#include "gpushare/core/policy_registry.h"
#include "gpushare/core/score_mapping.h"

namespace gpushare::core {
namespace {

NodeState node_with(std::vector<Units> used, Units per_gpu = 16) {
  NodeSpec spec;
  spec.name = "n";
  spec.gpu_count = static_cast<int>(used.size());
  spec.memory_per_gpu = per_gpu;
  NodeState node(spec);
  for (std::size_t i = 0; i < used.size(); ++i) {
    if (used[i] > 0) node.add_usage(static_cast<int>(i), used[i]);
  }
  return node;
}

PodDemand wants(Units amount) {
  PodDemand pod;
  pod.per_gpu = amount;
  return pod;
}

TEST(Fit, ReasonsNameTheNumbers) {
  const NodeState node = node_with({12, 14});
  const FitResult fit = check_fit(node, wants(8));
  EXPECT_EQ(fit.status, FitStatus::kInsufficientGpuMemory);
  EXPECT_FALSE(fit.unresolvable());
  EXPECT_EQ(fit.reason("aliyun.com/gpu-mem"),
            "insufficient aliyun.com/gpu-mem on any single GPU: largest free 4 of requested 8");
}

TEST(Fit, LargerThanAGpuIsUnresolvable) {
  const FitResult fit = check_fit(node_with({0, 0}), wants(17));
  EXPECT_EQ(fit.status, FitStatus::kExceedsGpuCapacity);
  EXPECT_TRUE(fit.unresolvable());
  EXPECT_NE(fit.reason("r").find("exceeds one GPU's capacity of 16"), std::string::npos);
}

TEST(Fit, NoGpusAndUnhealthyAndMisconfigured) {
  EXPECT_EQ(check_fit(node_with({}), wants(1)).status, FitStatus::kNoGpus);
  NodeState sick = node_with({0, 0});
  sick.set_unhealthy({0, 1});
  EXPECT_EQ(check_fit(sick, wants(1)).status, FitStatus::kAllGpusUnhealthy);
  NodeSpec spec;
  spec.name = "bad";
  spec.gpu_count = 2;
  spec.memory_per_gpu = 8;
  spec.misconfiguration = "gpu-count is 0";
  const FitResult fit = check_fit(NodeState(spec), wants(1));
  EXPECT_EQ(fit.status, FitStatus::kMisconfigured);
  EXPECT_NE(fit.reason("r").find("gpu-count is 0"), std::string::npos);
}

TEST(Fit, PodsWithoutGpuFitAnywhere) {
  EXPECT_TRUE(check_fit(node_with({}), PodDemand{}).fits());
  EXPECT_TRUE(check_fit(node_with({16}), PodDemand{}).fits());
}

TEST(Fit, CpuAndMemoryWhenTracked) {
  NodeSpec spec;
  spec.name = "n";
  spec.gpu_count = 1;
  spec.memory_per_gpu = 1000;
  spec.cpu_milli = 4000;
  spec.memory = 1024;
  NodeState node(spec);
  node.add_cpu_mem(3500, 0);
  PodDemand pod = wants(100);
  pod.cpu_milli = 1000;
  EXPECT_EQ(check_fit(node, pod).status, FitStatus::kInsufficientCpu);
  pod.cpu_milli = 500;
  pod.memory = 2048;
  EXPECT_EQ(check_fit(node, pod).status, FitStatus::kInsufficientMemory);
  pod.memory = 1024;
  EXPECT_TRUE(check_fit(node, pod).fits());
}

TEST(Fit, ModelRestriction) {
  NodeSpec spec;
  spec.name = "n";
  spec.gpu_count = 1;
  spec.memory_per_gpu = 1000;
  spec.gpu_model = "V100";
  PodDemand pod = wants(100);
  pod.allowed_models = {"T4", "P100"};
  EXPECT_EQ(check_fit(NodeState(spec), pod).status, FitStatus::kModelNotAllowed);
  pod.allowed_models.push_back("V100");
  EXPECT_TRUE(check_fit(NodeState(spec), pod).fits());
}

TEST(Fit, MultiGpuPodsNeedWhollyFreeGpus) {
  PodDemand pod;
  pod.per_gpu = 16;
  pod.gpu_count = 2;
  EXPECT_EQ(check_fit(node_with({0, 1, 0}), pod).status, FitStatus::kFits);
  EXPECT_EQ(check_fit(node_with({0, 1, 1}), pod).status, FitStatus::kNotEnoughWholeGpus);
  EXPECT_EQ(lowest_whole_gpus(node_with({1, 0, 0, 0}), 2), (std::vector<int>{1, 2}));
}

// Scorer relies on it (scored_demand): a pod fits exactly where its GPUs alone fit and the
// node's CPU and memory hold it, and check_fit's status is fit_status's.
TEST(Fit, APodFitsWhereItsGpusAloneFitAndCpuAndMemoryHoldIt) {
  std::mt19937 rng(7);
  const auto between = [&](int low, int high) {
    return std::uniform_int_distribution<int>(low, high)(rng);
  };
  int fitted = 0;
  int cpu_or_memory_short = 0;
  for (int round = 0; round < 4000; ++round) {
    NodeSpec spec;
    spec.name = "n";
    spec.gpu_count = between(0, 4);
    spec.memory_per_gpu = between(0, 3) == 0 ? 0 : 16;
    spec.cpu_milli = between(0, 2) * 4000;  // 0: not tracked
    spec.memory = between(0, 2) * 1024;
    spec.gpu_model = between(0, 1) == 0 ? "T4" : "V100";
    if (between(0, 30) == 0) spec.misconfiguration = "broken";
    NodeState node(spec);
    for (int gpu = 0; gpu < spec.gpu_count; ++gpu) {
      if (const Units used = between(0, 16); used > 0) node.add_usage(gpu, used);
    }
    if (spec.gpu_count > 0 && between(0, 8) == 0)
      node.set_unhealthy({between(0, spec.gpu_count - 1)});
    node.add_cpu_mem(between(0, 4) * 1000, between(0, 4) * 256);
    PodDemand pod;
    pod.per_gpu = between(0, 3) == 0 ? 16 : between(0, 17);
    pod.gpu_count = pod.per_gpu == 16 ? between(1, 3) : between(0, 1);
    pod.cpu_milli = between(0, 6) * 1000;
    pod.memory = between(0, 6) * 256;
    if (between(0, 5) == 0) pod.allowed_models = {"V100"};
    PodDemand gpu_only = pod;
    gpu_only.cpu_milli = 0;
    gpu_only.memory = 0;
    const bool holds = pod.cpu_milli <= node.cpu_free() && pod.memory <= node.memory_free();
    ASSERT_EQ(fits(node, pod), fits(node, gpu_only) && holds) << round;
    ASSERT_EQ(check_fit(node, pod).status, fit_status(node, pod)) << round;
    fitted += fits(node, pod) ? 1 : 0;
    cpu_or_memory_short += fits(node, gpu_only) && !holds ? 1 : 0;
  }
  // Both sides of the equivalence were met often.
  EXPECT_GT(fitted, 400);
  EXPECT_GT(cpu_or_memory_short, 400);
}

TEST(Binpack, ChoosesTightestGpuLowestIndexOnTies) {
  BinpackPolicy policy;
  auto placement = policy.place(node_with({10, 4, 10, 0}), wants(6));
  ASSERT_TRUE(placement);
  EXPECT_EQ(placement->gpus, std::vector<int>{0});  // GPUs 0 and 2 both leave 0 free
  placement = policy.place(node_with({0, 4, 11, 0}), wants(6));
  EXPECT_EQ(placement->gpus, std::vector<int>{1});  // 12 free beats 16 free; 5 free is too small
  placement = policy.place(node_with({0, 4, 9, 0}), wants(6));
  EXPECT_EQ(placement->gpus, std::vector<int>{2});  // 7 free is tighter still
}

TEST(Binpack, SkipsUnhealthyGpus) {
  BinpackPolicy policy;
  NodeState node = node_with({10, 0});
  node.set_unhealthy({0});
  auto placement = policy.place(node, wants(6));
  ASSERT_TRUE(placement);
  EXPECT_EQ(placement->gpus, std::vector<int>{1});
  EXPECT_FALSE(policy.place(node, wants(17)));
}

TEST(Binpack, TighterNodeScoresHigher) {
  BinpackPolicy policy;
  const auto exact = policy.place(node_with({8, 16}), wants(8));
  const auto loose = policy.place(node_with({2, 16}), wants(8));
  const auto empty = policy.place(node_with({0, 0}), wants(8));
  ASSERT_TRUE(exact && loose && empty);
  EXPECT_GT(exact->score, loose->score);
  EXPECT_GT(loose->score, empty->score);
  // Same GPU fit: the fuller node wins.
  const auto fuller = policy.place(node_with({0, 10}), wants(8));
  const auto emptier = policy.place(node_with({0, 0}), wants(8));
  EXPECT_GT(fuller->score, emptier->score);
}

TEST(Spread, ChoosesEmptiestGpuAndNode) {
  SpreadPolicy policy;
  auto placement = policy.place(node_with({10, 4, 0, 0}), wants(6));
  ASSERT_TRUE(placement);
  EXPECT_EQ(placement->gpus, std::vector<int>{2});
  EXPECT_GT(policy.place(node_with({0, 0}), wants(4))->score,
            policy.place(node_with({8, 0}), wants(4))->score);
}

TEST(Policies, AgreeWithFitAndChooseFittingGpus) {
  for (const auto& name : policy_names()) {
    auto policy = make_policy(name);
    ASSERT_TRUE(policy) << name;
    for (Units request : {1, 5, 8, 12, 16, 17}) {
      NodeState node = node_with({3, 9, 14, 0});
      node.set_unhealthy({3});
      const auto placement = policy->place(node, wants(request));
      EXPECT_EQ(placement.has_value(), check_fit(node, wants(request)).fits()) << name << request;
      if (!placement) continue;
      ASSERT_EQ(placement->gpus.size(), 1u);
      const auto& gpu = node.gpus()[static_cast<std::size_t>(placement->gpus[0])];
      EXPECT_TRUE(gpu.healthy);
      EXPECT_GE(gpu.free(), request);
    }
  }
  EXPECT_EQ(make_policy("nope"), nullptr);
  EXPECT_EQ(policy_names().front(), kDefaultPolicy);
}

TEST(NormalizeScores, BestGetsTenInfeasibleZero) {
  const std::vector<std::optional<double>> raw{0.5, std::nullopt, 0.9, 0.1};
  EXPECT_EQ(min_max_scores(raw), (std::vector<int>{6, 0, 10, 1}));
  const std::vector<std::optional<double>> equal{0.3, 0.3};
  EXPECT_EQ(min_max_scores(equal), (std::vector<int>{10, 10}));
  const std::vector<std::optional<double>> none{std::nullopt};
  EXPECT_EQ(min_max_scores(none), (std::vector<int>{0}));
}

}  // namespace
}  // namespace gpushare::core
