// The simulator-only policies and the GPU-only view of the service.
#include <gtest/gtest.h>

#include "gpushare/core/fit.h"
#include "gpushare/core/policy_registry.h"
#include "gpushare/sim/policies.h"

namespace gpushare::sim {
namespace {

core::NodeState node(std::string name, std::vector<core::Units> used, std::int64_t cpu = 64000,
                     std::int64_t cpu_used = 0, std::int64_t memory = 262144,
                     std::int64_t memory_used = 0) {
  core::NodeSpec spec;
  spec.name = std::move(name);
  spec.gpu_count = static_cast<int>(used.size());
  spec.memory_per_gpu = 1000;
  spec.cpu_milli = cpu;
  spec.memory = memory;
  core::NodeState state(spec);
  for (std::size_t i = 0; i < used.size(); ++i) {
    if (used[i] > 0) state.add_usage(static_cast<int>(i), used[i]);
  }
  if (cpu_used > 0 || memory_used > 0) state.add_cpu_mem(cpu_used, memory_used);
  return state;
}

core::PodDemand pod(core::Units per_gpu, int count = 1, std::int64_t cpu = 1000,
                    std::int64_t memory = 1024) {
  core::PodDemand demand;
  demand.per_gpu = per_gpu;
  demand.gpu_count = count;
  demand.cpu_milli = cpu;
  demand.memory = memory;
  return demand;
}

TEST(GpuClustering, GroupsPodsOfTheSameKind) {
  GpuClusteringPolicy clustering;
  const core::NodeState empty = node("empty", {0, 0, 0, 0, 0, 0, 0, 0});
  const core::NodeState sharing = node("sharing", {500, 0, 0, 0, 0, 0, 0, 0});
  const core::NodeState whole = node("whole", {1000, 0, 0, 0, 0, 0, 0, 0});
  clustering.placed(sharing, pod(500));
  clustering.placed(whole, pod(1000));
  // base = floor(25 * used / 8 GPUs): 0 for the empty node, 1 after 500 units, 3 after 1000.
  EXPECT_EQ(clustering.place(empty, pod(300))->score, 25);        // no GPU pods yet
  EXPECT_EQ(clustering.place(sharing, pod(300))->score, 1 + 75);  // only sharing pods
  EXPECT_EQ(clustering.place(whole, pod(300))->score, 3 + 0);     // other kind only
  EXPECT_EQ(clustering.place(whole, pod(1000))->score, 3 + 75);
  clustering.placed(sharing, pod(1000));
  EXPECT_EQ(clustering.place(sharing, pod(300))->score, 1 + 50);              // among other kinds
  EXPECT_EQ(clustering.place(empty, pod(0, 0))->score, 0);                    // CPU-only pods: 0
  EXPECT_EQ(clustering.place(sharing, pod(300))->gpus, std::vector<int>{0});  // best fit
}

TEST(KubeDefault, SpreadsByCpuAndMemoryAndBindsBestFit) {
  const KubeDefaultPolicy kube;
  const core::NodeState idle = node("idle", {0, 0}, 64000);
  const core::NodeState busy = node("busy", {0, 0}, 64000, 32000, 262144, 131072);
  const auto on_idle = kube.place(idle, pod(500, 1, 8000, 32768));
  const auto on_busy = kube.place(busy, pod(500, 1, 8000, 32768));
  ASSERT_TRUE(on_idle && on_busy);
  EXPECT_GT(on_idle->score, on_busy->score);
  // LeastAllocated: cpu (64-8)/64 -> 87, memory (256-32)/256 -> 87; balanced: |0.125-0.125| -> 100.
  EXPECT_EQ(on_idle->score, 87 + 100);
  // GPU memory plays no part in the node's score, only in the GPU chosen.
  const core::NodeState gpu_busy = node("gpu-busy", {900, 300}, 64000);
  EXPECT_EQ(kube.place(gpu_busy, pod(50, 1, 8000, 32768))->score, on_idle->score);
  EXPECT_EQ(kube.place(gpu_busy, pod(50, 1, 8000, 32768))->gpus, std::vector<int>{0});
  EXPECT_FALSE(kube.place(node("full", {0}, 4000), pod(500, 1, 8000, 32768)));
}

// Records what the wrapped policy was shown.
class Probe final : public core::PlacementPolicy {
 public:
  std::string_view name() const override { return "probe"; }
  std::optional<core::Placement> place(const core::NodeState& node,
                                       const core::PodDemand& pod) const override {
    seen_cpu = node.spec().cpu_milli;
    seen_used = node.total_used();
    seen_pod_cpu = pod.cpu_milli;
    core::Placement placement;
    placement.gpus = {0};
    return placement;
  }
  void observe(const core::PodDemand& pod) override { observed_cpu = pod.cpu_milli; }
  mutable std::int64_t seen_cpu = -1;
  mutable core::Units seen_used = -1;
  mutable std::int64_t seen_pod_cpu = -1;
  std::int64_t observed_cpu = -1;
};

TEST(GpuOnlyView, FiltersOnTheFullNodeButScoresWithoutCpuAndMemory) {
  auto probe = std::make_unique<Probe>();
  Probe& seen = *probe;
  GpuOnlyView view(std::move(probe));
  EXPECT_FALSE(view.place(node("n", {0, 0}, 4000), pod(500, 1, 8000)));  // kube-scheduler's filter
  EXPECT_EQ(seen.seen_cpu, -1);
  ASSERT_TRUE(view.place(node("n", {300, 0}, 64000, 1000), pod(500, 1, 8000)));
  EXPECT_EQ(seen.seen_cpu, 0);
  EXPECT_EQ(seen.seen_used, 300);
  EXPECT_EQ(seen.seen_pod_cpu, 0);
  view.observe(pod(500, 1, 8000));
  EXPECT_EQ(seen.observed_cpu, 0);
}

TEST(Contenders, NamesBuildTheirPolicies) {
  const std::vector<core::PodDemand> trace{pod(500), pod(1000)};
  const TraceContext context{core::typical_workload(trace), trace, 1};
  for (const auto& name : sim_policy_names()) {
    const auto contender = make_contender(name, context);
    ASSERT_TRUE(contender) << name;
    EXPECT_EQ(contender->name, name);
    EXPECT_EQ(contender->observer != nullptr, name == "gpu-clustering") << name;
  }
  const auto gpu_only = make_contender("fgd-plus-online/gpu-only", context);
  ASSERT_TRUE(gpu_only);
  EXPECT_EQ(gpu_only->policy->name(), "fgd-plus");
  EXPECT_FALSE(make_contender("gpu-clustering/gpu-only", context));
  EXPECT_FALSE(make_contender("unknown", context));
}

}  // namespace
}  // namespace gpushare::sim
