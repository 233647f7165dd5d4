// The deployed path end to end on clusters small enough to total the scores by hand: kube's
// plugins, the extender's score x weight x 10, filters, profiles and who binds.

#include "gpushare/kubesim/deployed_run.h"

#include <gtest/gtest.h>

namespace gpushare::kubesim {
namespace {

core::NodeSpec node(std::string name, std::int64_t cpu_milli, std::int64_t memory_mib,
                    std::string model) {
  core::NodeSpec spec;
  spec.name = std::move(name);
  spec.cpu_milli = cpu_milli;
  spec.memory = memory_mib;  // the trace's unit
  spec.gpu_count = 1;
  spec.memory_per_gpu = 1000;
  spec.gpu_model = std::move(model);
  return spec;
}

sim::TracePod pod(std::string name, core::Units gpu_milli, std::vector<std::string> models = {}) {
  sim::TracePod p;
  p.name = std::move(name);
  p.demand.cpu_milli = 1000;
  p.demand.memory = 1024;
  p.demand.per_gpu = gpu_milli;
  p.demand.gpu_count = gpu_milli > 0 ? 1 : 0;
  p.demand.allowed_models = std::move(models);
  return p;
}

// "small" (8 cores, 32 GiB) and "big" (64 cores, 256 GiB), one 1000-unit GPU each. The first
// pod is pinned to small's GPU model; the second is free to go anywhere.
//
// Second pod, kube 1.23+ plugins (weight 1 each):
//   small: LeastAllocated (75 + 93) / 2 = 84, BalancedAllocation 1 - (.25 - .0625) / 2 -> 90: 174
//   big:   LeastAllocated (98 + 99) / 2 = 98, BalancedAllocation -> 99:                    197
// The extender (binpack, min-max) scores small 10 (its GPU has exactly 500 left) and big 1.
// With the factor 10: small 174 + 10 w 10, big 197 + 1 w 10: small wins for any weight w >= 1;
// without the factor (174 + 10 vs 197 + 1) big would.
class TwoNodes : public ::testing::Test {
 protected:
  DeployedResult run(std::string_view yaml, std::vector<sim::TracePod> extra = {},
                     KubeVersion version = KubeVersion::kCurrent) {
    std::vector<sim::TracePod> pods{pod("pinned", 500, {"T4"}), pod("free", 500)};
    for (auto& p : extra) pods.push_back(std::move(p));
    std::vector<std::size_t> arrivals;
    for (std::size_t i = 0; i < pods.size(); ++i) arrivals.push_back(i);
    DeployedOptions options;
    options.version = version;
    options.extender_policy = "binpack";
    options.score_mapping = mapping;
    return run_deployed(nodes, pods, arrivals, {}, parse_scheduler_config(yaml, version), options,
                        42, "test");
  }
  std::vector<core::NodeSpec> nodes{node("small", 8000, 32768, "T4"),
                                    node("big", 64000, 262144, "V100")};
  std::string mapping = "minmax";  // the totals above; RankMapping below
};

constexpr std::string_view kExtenderWeight1 = R"(
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
extenders:
- urlPrefix: http://127.0.0.1:39999/gpushare-scheduler
  filterVerb: filter
  prioritizeVerb: prioritize
  bindVerb: bind
  weight: 1
  nodeCacheCapable: true
  managedResources:
  - name: aliyun.com/gpu-mem
)";

TEST_F(TwoNodes, ExtenderScoreCountsTenTimesItsWeight) {
  const DeployedResult result = run(kExtenderWeight1);
  ASSERT_EQ(result.placements.size(), 2u);
  EXPECT_EQ(result.placements[0], "small");  // node affinity
  EXPECT_EQ(result.placements[1], "small");  // 174 + 100 > 197 + 10
  EXPECT_EQ(result.stats.extender_binds, 2u);
  EXPECT_EQ(result.stats.extender_filter_calls, 2u);
  EXPECT_EQ(result.stats.single_feasible, 1u);  // the pinned pod: one feasible node, no scoring
  EXPECT_EQ(result.stats.extender_prioritize_calls, 1u);
  EXPECT_EQ(result.run.allocated, 1000);
}

TEST_F(TwoNodes, RankMappingGivesTheRunnerUpNine) {
  // Two feasible nodes under rank: small 10, big 9, one level (10 points per unit of weight)
  // apart: weight 1 gives small 174 + 100 < big 197 + 90; weight 3: 474 > 467.
  mapping = "rank";
  EXPECT_EQ(run(kExtenderWeight1).placements[1], "big");
  std::string weight3(kExtenderWeight1);
  weight3.replace(weight3.find("  weight: 1\n"), 12, "  weight: 3\n");
  EXPECT_EQ(run(weight3).placements[1], "small");
}

TEST_F(TwoNodes, WithoutPrioritizeKubesPluginsDecide) {
  std::string yaml(kExtenderWeight1);
  yaml.erase(yaml.find("  prioritizeVerb: prioritize\n"),
             std::string_view("  prioritizeVerb: prioritize\n").size());
  const DeployedResult result = run(yaml);
  EXPECT_EQ(result.placements[1], "big");  // 174 < 197: LeastAllocated spreads
  EXPECT_EQ(result.stats.extender_prioritize_calls, 0u);
}

TEST_F(TwoNodes, PluginWeightsScaleKubesScores) {
  // NodeResourcesFit x10: small 840 + 90 + 10 w 10, big 980 + 99 + w 10.
  const std::string heavy_fit = std::string(kExtenderWeight1) + R"(
profiles:
- schedulerName: default-scheduler
  plugins:
    score:
      enabled:
      - name: NodeResourcesFit
        weight: 10
)";
  EXPECT_EQ(run(heavy_fit).placements[1], "big");  // 1030 < 1089
  std::string weight2 = heavy_fit;
  weight2.replace(weight2.find("  weight: 1\n"), 12, "  weight: 2\n");
  EXPECT_EQ(run(weight2).placements[1], "small");  // 1130 > 1099
}

TEST_F(TwoNodes, MostAllocatedPacks) {
  // small: (25 + 6) / 2 = 15 + 90; big: (1 + 0) / 2 = 0 + 99.
  const std::string most = R"(
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- pluginConfig:
  - name: NodeResourcesFit
    args:
      scoringStrategy:
        type: MostAllocated
)";
  EXPECT_EQ(run(most).placements[1], "small");
  EXPECT_EQ(run(R"(
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
)")
                .placements[1],
            "big");
}

TEST_F(TwoNodes, Kube120ModelReadsV1beta1Plugins) {
  // 1.20's BalancedAllocation (1 - |cpu - memory|): small 81, big 98. LeastAllocated: small 84,
  // big 98. MostAllocated x5: small 15 x 5, big 0 x 5, which flips the choice: 156 > 98.
  const std::string v1beta1 = R"(
apiVersion: kubescheduler.config.k8s.io/v1beta1
kind: KubeSchedulerConfiguration
profiles:
- plugins:
    score:
      disabled:
      - name: NodeResourcesLeastAllocated
      enabled:
      - name: NodeResourcesMostAllocated
        weight: 5
)";
  EXPECT_EQ(run(v1beta1, {}, KubeVersion::k1_20).placements[1], "small");
  EXPECT_EQ(run(R"(
apiVersion: kubescheduler.config.k8s.io/v1beta1
kind: KubeSchedulerConfiguration
)",
                {}, KubeVersion::k1_20)
                .placements[1],
            "big");
}

TEST_F(TwoNodes, CpuOnlyPodsReachAnExtenderWithoutManagedResources) {
  // A third pod without GPU: kube alone spreads it to big; an extender entry that scores every
  // pod (binpack: the node whose GPUs are fullest) at weight 10 steers it to small, whose GPU
  // is full.
  const std::string score_all =
      std::string(kExtenderWeight1) + R"(- urlPrefix: http://127.0.0.1:39999/gpushare-scheduler
  prioritizeVerb: prioritize
  weight: 10
  ignorable: true
)";
  const DeployedResult steered = run(score_all, {pod("cpu-only", 0)});
  EXPECT_EQ(steered.placements[2], "small");
  // The GPU pod is scored by both entries, the CPU-only pod by the second alone.
  EXPECT_EQ(steered.stats.extender_prioritize_calls, 3u);
  EXPECT_EQ(steered.stats.cpu_only_on_gpu_nodes, 1u);

  const DeployedResult plain = run(kExtenderWeight1, {pod("cpu-only", 0)});
  EXPECT_EQ(plain.placements[2], "big");
  EXPECT_EQ(plain.stats.extender_prioritize_calls, 1u);
}

TEST_F(TwoNodes, SecondSchedulerLeavesCpuOnlyPodsToTheDefaultOne) {
  const std::string second = std::string(kExtenderWeight1) + R"(profiles:
- schedulerName: gpushare-scheduler
)";
  const DeployedResult result = run(second, {pod("cpu-only", 0)});
  EXPECT_EQ(result.placements[1], "small");
  EXPECT_EQ(result.placements[2], "big");  // the default scheduler: no extender
  EXPECT_EQ(result.stats.extender_prioritize_calls, 1u);
}

TEST_F(TwoNodes, ResourceFitFilterRejectsWhatDoesNotFit) {
  // Two more 600-unit pods: only one fits on big's GPU (kube's node-total check and the
  // extender's per-GPU check agree); the last fails.
  const DeployedResult result = run(kExtenderWeight1, {pod("a", 600), pod("b", 600)});
  EXPECT_EQ(result.placements[2], "big");
  EXPECT_EQ(result.placements[3], "");
  EXPECT_EQ(result.stats.failed_gpu_pods, 1u);
}

TEST_F(TwoNodes, NodeAffinityKeepsPinnedPodsOnTheirModels) {
  nodes.push_back(node("unlabelled", 64000, 262144, ""));  // a GPU node without the model label
  // Whole-GPU pods pinned to T4 or V100: one fits (on big: small's GPU holds the first pod), the
  // second has only the unlabelled node left, which In never matches; a pin to a model no node
  // carries fits nowhere.
  const DeployedResult result =
      run(kExtenderWeight1, {pod("either", 1000, {"T4", "V100"}),
                             pod("either-2", 1000, {"T4", "V100"}), pod("nowhere", 100, {"H100"})});
  EXPECT_EQ(result.placements[0], "small");
  EXPECT_EQ(result.placements[2], "big");
  EXPECT_EQ(result.placements[3], "");
  EXPECT_EQ(result.placements[4], "");
  EXPECT_EQ(result.stats.failed_gpu_pods, 2u);
}

}  // namespace
}  // namespace gpushare::kubesim
