// The deployed path in the time mode: kube-scheduler's cycle around the extender's service
// places pods that also leave, with the shipped scheduler configuration.

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "gpushare/kubesim/deployed_run.h"
#include "gpushare/sim/churn.h"

namespace gpushare::kubesim {
namespace {

SchedulerConfig shipped_config() {
  std::ifstream in(std::string(GPUSHARE_SOURCE_DIR) +
                   "/deploy/scheduler/kube-scheduler-config.yaml");
  std::stringstream text;
  text << in.rdbuf();
  return parse_scheduler_config(text.str(), KubeVersion::kCurrent);
}

DeployedOptions fgd_plus() {
  DeployedOptions options;
  options.extender_policy = "fgd-plus";
  return options;
}

sim::TracePod pod(std::string name, core::Units gpu_milli) {
  sim::TracePod p;
  p.name = std::move(name);
  p.demand.cpu_milli = 1000;
  p.demand.memory = 1024;
  p.demand.per_gpu = gpu_milli;
  p.demand.gpu_count = gpu_milli > 0 ? 1 : 0;
  p.lifetime = 600;
  return p;
}

// A departure frees the GPU in kube's cache and in the extender's model: on one node with one
// GPU, a second pod of 600 fits only once the first has left.
TEST(DeployedChurn, ADepartureFreesTheGpuForTheNextPod) {
  const std::vector<core::NodeSpec> nodes =
      sim::parse_nodes_csv("sn,cpu_milli,memory_mib,gpu,model\nn,16000,65536,1,T4\n");
  DeployedChurnScheduler scheduler(nodes, {}, shipped_config(), fgd_plus(), 42);
  const sim::TracePod first = pod("first", 600);
  const sim::TracePod second = pod("second", 600);
  const auto placed = scheduler.schedule(first, 0);
  ASSERT_TRUE(placed);
  EXPECT_EQ(placed->node, 0u);
  EXPECT_EQ(placed->gpus, (std::vector<int>{0}));
  EXPECT_EQ(scheduler.schedule(second, 1), std::nullopt);
  scheduler.departed(first, 0, 0);
  const auto later = scheduler.schedule(second, 1);
  ASSERT_TRUE(later);
  EXPECT_EQ(later->gpus, (std::vector<int>{0}));
  // A CPU-only pod holds no GPU.
  const auto cpu_only = scheduler.schedule(pod("cpu", 0), 2);
  ASSERT_TRUE(cpu_only);
  EXPECT_TRUE(cpu_only->gpus.empty());
  const DeployedStats& stats = scheduler.stats();
  EXPECT_EQ(stats.gpu_pods, 3u);  // every attempt
  EXPECT_EQ(stats.failed_gpu_pods, 1u);
  EXPECT_EQ(stats.extender_binds, 2u);
  EXPECT_EQ(stats.cpu_only_pods, 1u);
}

// The time mode through the deployed path: far more pods pass through than the cluster holds at
// once, and every bind is checked against the run's own model (run_churn throws otherwise).
TEST(DeployedChurn, RunsTheTimeModeThroughTheShippedConfiguration) {
  std::string node_csv = "sn,cpu_milli,memory_mib,gpu,model\n";
  for (int i = 0; i < 8; ++i) node_csv += fmt::format("n{},64000,262144,4,V100\n", i);
  node_csv += "cpu-0,32000,262144,0,\n";
  const auto pods = sim::parse_pods_csv(
      "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,"
      "deletion_time\n"
      "a,4000,8192,1,1000,,LS,Running,0,600\n"
      "b,2000,4096,1,500,,LS,Running,10,1010\n"
      "c,2000,4096,1,250,,LS,Running,20,220\n"
      "d,2000,4096,1,700,,LS,Running,30,2030\n"
      "e,8000,16384,2,1000,,LS,Running,40,440\n"
      "f,1000,2048,0,0,,LS,Running,50,150\n");
  sim::SimulationOptions admit;
  admit.single_gpu_only = true;  // as --scheduler-config implies
  const sim::Simulator simulator(sim::parse_nodes_csv(node_csv), pods, admit);
  sim::ChurnOptions options;
  options.offered_load = 0.8;
  options.warmup = 2000;
  options.duration = 10000;
  options.sample_every = 500;
  DeployedChurnScheduler scheduler(simulator.nodes(), simulator.typical_workload(),
                                   shipped_config(), fgd_plus(), 7);
  const sim::ChurnResult run = sim::run_churn(simulator, scheduler, "fgd-plus@shipped", 7, options);
  EXPECT_EQ(run.policy, "fgd-plus@shipped");
  std::size_t most_running = 0;
  for (const auto& s : run.samples) most_running = std::max(most_running, s.running);
  EXPECT_GT(run.placed, 5 * most_running);
  EXPECT_GT(run.alloc_pct, 40.0);
  EXPECT_EQ(run.arrived, run.placed + run.gave_up + run.still_waiting);
  EXPECT_GT(scheduler.stats().extender_binds, 0u);
  EXPECT_GT(scheduler.stats().cpu_only_pods, 0u);
  // The policy alone sees the same arrivals.
  EXPECT_EQ(sim::run_churn(simulator, "fgd-plus-online", 7, options).arrived, run.arrived);
}

TEST(DeployedChurn, DraIsNotModelledInTheTimeMode) {
  const std::vector<core::NodeSpec> nodes =
      sim::parse_nodes_csv("sn,cpu_milli,memory_mib,gpu,model\nn,16000,65536,1,T4\n");
  DeployedOptions options = fgd_plus();
  options.dra = true;
  EXPECT_THROW(DeployedChurnScheduler(nodes, {}, shipped_config(), options, 42),
               std::invalid_argument);
}

}  // namespace
}  // namespace gpushare::kubesim
