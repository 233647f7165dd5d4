// The deployed path with DRA GPUs: kube's first-fit allocator picks the devices, kube's scoring
// (native) or the shipped prioritize entry (with gpushare) the node. Units are GiB.

#include <gtest/gtest.h>

#include <array>
#include <fstream>
#include <sstream>

#include "gpushare/kubesim/deployed_run.h"
#include "gpushare/kubesim/dra_allocator.h"

namespace gpushare::kubesim {
namespace {

core::NodeSpec gpu_node(std::string name, std::int64_t cpu_milli, std::int64_t memory_mib, int gpus,
                        std::string model) {
  core::NodeSpec spec;
  spec.name = std::move(name);
  spec.cpu_milli = cpu_milli;
  spec.memory = memory_mib;  // the trace's unit
  spec.gpu_count = gpus;
  spec.memory_per_gpu = 32;
  spec.gpu_model = std::move(model);
  return spec;
}

sim::TracePod claim_pod(core::Units per_gpu, int gpus = 1, std::vector<std::string> models = {}) {
  sim::TracePod p;
  p.name = "p";
  p.demand.cpu_milli = 1000;
  p.demand.memory = 1024;
  p.demand.per_gpu = per_gpu;
  p.demand.gpu_count = gpus;
  p.demand.allowed_models = std::move(models);
  return p;
}

// No extender: kube-scheduler's default plugins alone.
constexpr std::string_view kNative = R"(
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
)";

std::string shipped_config() {
  std::ifstream in(std::string(GPUSHARE_SOURCE_DIR) +
                   "/deploy/scheduler/kube-scheduler-config.yaml");
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

DeployedResult run(const std::vector<core::NodeSpec>& nodes, const std::vector<sim::TracePod>& pods,
                   std::string_view yaml) {
  std::vector<std::size_t> arrivals;
  for (std::size_t i = 0; i < pods.size(); ++i) arrivals.push_back(i);
  DeployedOptions options;
  options.dra = true;
  options.extender_policy = "fgd-plus";  // the service's default
  return run_deployed(nodes, pods, arrivals, {},
                      parse_scheduler_config(yaml, KubeVersion::kCurrent), options, 42, "test");
}

TEST(DraFirstFit, TakesTheFirstDevicesWithEnoughFreeMemory) {
  const std::array<core::Units, 3> free{10, 25, 30};
  EXPECT_EQ(dra_first_fit(free, 1, 20),
            (std::vector<std::size_t>{1}));  // not the tighter... nor 30
  EXPECT_EQ(dra_first_fit(free, 1, 10), (std::vector<std::size_t>{0}));  // exactly what is left
  EXPECT_EQ(dra_first_fit(free, 2, 20), (std::vector<std::size_t>{1, 2}));
  EXPECT_EQ(dra_first_fit(free, 3, 20), std::nullopt);  // distinct devices only
  EXPECT_EQ(dra_first_fit(free, 1, 31), std::nullopt);
}

// One node, two 32 GiB GPUs: 20 -> gpu-0 (12 left), 20 -> gpu-1 (12 left), 10 -> gpu-0 again
// (the first with 10 free), a 2-GPU claim of 2 each -> gpu-0 and gpu-1, and 12 fits nowhere.
TEST(DraDeployed, KubesAllocatorTakesTheFirstDeviceThatFits) {
  const DeployedResult result =
      run({gpu_node("n", 16000, 65536, 2, "T4")},
          {claim_pod(20), claim_pod(20), claim_pod(10), claim_pod(2, 2), claim_pod(12)}, kNative);
  ASSERT_EQ(result.dra_devices.size(), 5u);
  EXPECT_EQ(result.dra_devices[0], std::vector<int>{0});
  EXPECT_EQ(result.dra_devices[1], std::vector<int>{1});
  EXPECT_EQ(result.dra_devices[2], std::vector<int>{0});
  EXPECT_EQ(result.dra_devices[3], (std::vector<int>{0, 1}));
  EXPECT_TRUE(result.dra_devices[4].empty());
  EXPECT_EQ(result.placements[4], "");
  EXPECT_EQ(result.stats.failed_gpu_pods, 1u);
  EXPECT_EQ(result.run.allocated, 20 + 20 + 10 + 4);
  EXPECT_EQ(result.stats.extender_prioritize_calls, 0u);
}

// "a" (64 cores, 256 GiB, two GPUs) gets a 22 GiB pod pinned to its model on gpu-0 (10 left);
// "b" (8 cores, 32 GiB, one GPU) a 7 GiB pinned pod (25 left). Then a free 20 GiB claim: on a,
// first fit skips gpu-0 and opens gpu-1 (12 left, 22 free on the node); on b it takes gpu-0
// (5 left). kube's LeastAllocated prefers the much larger a (cpu 97 vs 75 %, memory 99 vs
// 93 % free); the shipped prioritize entry (weight 10 x 10) ranks b, where the claim fits
// tightest, above it.
class TightestFit : public ::testing::Test {
 protected:
  std::vector<core::NodeSpec> nodes{gpu_node("a", 64000, 262144, 2, "A"),
                                    gpu_node("b", 8000, 32768, 1, "B")};
  std::vector<sim::TracePod> pods{claim_pod(22, 1, {"A"}), claim_pod(7, 1, {"B"}), claim_pod(20)};
};

TEST_F(TightestFit, NativeDraTakesKubesChoice) {
  const DeployedResult result = run(nodes, pods, kNative);
  ASSERT_EQ(result.placements.size(), 3u);
  EXPECT_EQ(result.placements[0], "a");
  EXPECT_EQ(result.placements[1], "b");
  EXPECT_EQ(result.placements[2], "a");
  EXPECT_EQ(result.dra_devices[2], std::vector<int>{1});
}

TEST_F(TightestFit, GpusharesPrioritizeTakesTheTightestFit) {
  const DeployedResult result = run(nodes, pods, shipped_config());
  ASSERT_EQ(result.placements.size(), 3u);
  EXPECT_EQ(result.placements[2], "b");
  EXPECT_EQ(result.dra_devices[2], std::vector<int>{0});
  // The prioritize-only entry scores DRA pods; the GPU entry neither filters nor binds them.
  EXPECT_EQ(result.stats.extender_prioritize_calls, 1u);  // the pinned pods had one node each
  EXPECT_EQ(result.stats.extender_filter_calls, 0u);
  EXPECT_EQ(result.stats.extender_binds, 0u);
}

// Two like nodes, two 4 GiB claims: kube's LeastAllocated sends the second to the node the first
// left empty; gpushare's prioritize stacks it on the GPU the first opened.
TEST(DraDeployed, NativeSpreadsGpusharePacks) {
  const std::vector<core::NodeSpec> nodes{gpu_node("n1", 16000, 65536, 1, "T4"),
                                          gpu_node("n2", 16000, 65536, 1, "T4")};
  const std::vector<sim::TracePod> pods{claim_pod(4), claim_pod(4)};
  const DeployedResult native = run(nodes, pods, kNative);
  ASSERT_EQ(native.placements.size(), 2u);
  EXPECT_NE(native.placements[0], native.placements[1]);
  const DeployedResult packed = run(nodes, pods, shipped_config());
  ASSERT_EQ(packed.placements.size(), 2u);
  EXPECT_EQ(packed.placements[0], packed.placements[1]);
}

}  // namespace
}  // namespace gpushare::kubesim
