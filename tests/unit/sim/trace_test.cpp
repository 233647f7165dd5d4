#include "gpushare/sim/trace.h"

#include <gtest/gtest.h>

namespace gpushare::sim {
namespace {

TEST(Trace, ParsesNodesByHeaderName) {
  const auto nodes = parse_nodes_csv(
      "model,sn,gpu,cpu_milli,memory_mib\r\nV100,n-1,8,96000,393216\r\n\r\n,cpu-only,0,32000,"
      "1024\n");
  ASSERT_EQ(nodes.size(), 2u);
  EXPECT_EQ(nodes[0].name, "n-1");
  EXPECT_EQ(nodes[0].gpu_count, 8);
  EXPECT_EQ(nodes[0].memory_per_gpu, kUnitsPerGpu);
  EXPECT_EQ(nodes[0].cpu_milli, 96000);
  EXPECT_EQ(nodes[0].memory, 393216);
  EXPECT_EQ(nodes[0].gpu_model, "V100");
  EXPECT_EQ(nodes[1].gpu_count, 0);
  EXPECT_EQ(nodes[1].memory_per_gpu, 0);
}

TEST(Trace, ParsesPodsWithAndWithoutGpuSpec) {
  const auto pods = parse_pods_csv(
      "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos\n"
      "p-0,12000,16384,1,460,,LS\n"
      "p-1,4000,8192,0,0,,BE\n"
      "p-2,64000,262144,8,1000,V100M16|V100M32,LS\n");
  ASSERT_EQ(pods.size(), 3u);
  EXPECT_EQ(pods[0].name, "p-0");
  EXPECT_EQ(pods[0].demand.per_gpu, 460);
  EXPECT_EQ(pods[0].demand.gpu_count, 1);
  EXPECT_EQ(pods[0].demand.cpu_milli, 12000);
  EXPECT_EQ(pods[0].demand.memory, 16384);
  EXPECT_TRUE(pods[0].demand.allowed_models.empty());
  EXPECT_FALSE(pods[1].demand.wants_gpu());
  EXPECT_EQ(pods[1].demand.gpu_count, 0);
  EXPECT_EQ(pods[2].demand.total_gpu(), 8000);
  EXPECT_EQ(pods[2].demand.allowed_models, (std::vector<std::string>{"V100M16", "V100M32"}));
  // The multigpu20 file has no gpu_spec column at all.
  EXPECT_EQ(parse_pods_csv("name,cpu_milli,memory_mib,num_gpu,gpu_milli\np,1,2,1,1000\n").size(),
            1u);
}

TEST(Trace, ErrorsNameTheLineAndTheColumn) {
  try {
    parse_pods_csv("name,cpu_milli,memory_mib,num_gpu,gpu_milli\np,1,2,1,x\n");
    FAIL() << "no error";
  } catch (const TraceError& error) {
    EXPECT_STREQ(error.what(), "line 2: gpu_milli 'x' is not a non-negative integer");
  }
  EXPECT_THROW(parse_pods_csv("name,cpu_milli,num_gpu,gpu_milli\n"), TraceError);
  EXPECT_THROW(parse_pods_csv("name,cpu_milli,memory_mib,num_gpu,gpu_milli\np,1,2,1,1500\n"),
               TraceError);
  EXPECT_THROW(parse_nodes_csv("sn,cpu_milli,memory_mib,gpu\nn,1,2\n"), TraceError);
  EXPECT_THROW(parse_nodes_csv(""), TraceError);
  EXPECT_THROW(read_text_file("/nonexistent/trace.csv"), TraceError);
}

TEST(Trace, ReadsTheBundledOpenbFiles) {
  const std::string dir = std::string(GPUSHARE_SOURCE_DIR) + "/bench/data/openb/";
  const auto nodes = parse_nodes_csv(read_text_file(dir + "openb_node_list_gpu_node.csv"));
  EXPECT_EQ(nodes.size(), 1213u);
  int gpus = 0;
  for (const auto& n : nodes) gpus += n.gpu_count;
  EXPECT_EQ(gpus, 6212);
  EXPECT_EQ(parse_pods_csv(read_text_file(dir + "openb_pod_list_default.csv")).size(), 8152u);
}

constexpr std::string_view kPaiHeader =
    "job_name,task_name,status,start_time,end_time,plan_cpu,plan_mem,plan_gpu,gpu_type\n";

std::string pai(std::string_view rows) {
  return std::string(kPaiHeader) + std::string(rows);
}

TEST(SimPaiTrace, ConvertsToOpenbUnits) {
  const PaiTasks tasks =
      parse_pai_tasks_csv(pai("half,tensorflow,Terminated,100.0,700.0,600.0,29.296875,50.0,V100\n"
                              "two,tensorflow,Failed,0,10,1800,100,200.0,T4\n"
                              "none,TensorboardTask,Terminated,5,5,400.0,8.01953125,,\n"
                              "zero,worker,Terminated,0,30,100,1,0,MISC\n"
                              "tiny,worker,Terminated,0,30,20,1,0.01,MISC\n"
                              "odd,worker,Terminated,0,30,20,1,2.5,MISC\n"));
  ASSERT_EQ(tasks.pods.size(), 6u);
  const auto& half = tasks.pods[0];
  EXPECT_EQ(half.name, "half");
  EXPECT_EQ(half.demand.cpu_milli, 6000);
  EXPECT_EQ(half.demand.memory, 30000);  // 29.296875 GiB in MiB
  EXPECT_EQ(half.demand.gpu_count, 1);
  EXPECT_EQ(half.demand.per_gpu, 500);
  EXPECT_TRUE(half.demand.allowed_models.empty());  // gpu_type is where it ran, not a pin
  EXPECT_EQ(half.lifetime, 600.0);
  EXPECT_EQ(tasks.pods[1].demand.gpu_count, 2);
  EXPECT_EQ(tasks.pods[1].demand.per_gpu, kUnitsPerGpu);
  EXPECT_EQ(tasks.pods[1].demand.total_gpu(), 2000);
  // Empty and 0 plan_gpu: no GPU.
  for (const std::size_t i : {2u, 3u}) {
    EXPECT_FALSE(tasks.pods[i].demand.wants_gpu());
    EXPECT_EQ(tasks.pods[i].demand.gpu_count, 0);
    EXPECT_EQ(tasks.pods[i].demand.total_gpu(), 0);
  }
  EXPECT_EQ(tasks.pods[2].lifetime, 0.0);
  EXPECT_EQ(tasks.pods[4].demand.per_gpu, 1);  // rounded up to the smallest share
  EXPECT_EQ(tasks.pods[5].demand.per_gpu, 25);
  EXPECT_EQ(tasks.dropped_missing_time, 0u);
  EXPECT_EQ(tasks.dropped_end_before_start, 0u);
}

TEST(SimPaiTrace, DropsRowsWithoutALifetimeAndCountsThem) {
  const PaiTasks tasks =
      parse_pai_tasks_csv(pai("running,worker,Running,100,,600,1,50,T4\n"
                              "waiting,worker,Waiting,,,600,1,50,T4\n"
                              "backwards,worker,Terminated,500,400,600,1,50,T4\n"
                              "kept,worker,Terminated,400,500,600,1,50,T4\n"));
  ASSERT_EQ(tasks.pods.size(), 1u);
  EXPECT_EQ(tasks.pods[0].name, "kept");
  EXPECT_EQ(tasks.pods[0].lifetime, 100.0);
  EXPECT_EQ(tasks.dropped_missing_time, 2u);
  EXPECT_EQ(tasks.dropped_end_before_start, 1u);
}

TEST(SimPaiTrace, HostileValuesAreErrorsNamingTheLine) {
  const auto error_of = [](std::string_view row) -> std::string {
    try {
      parse_pai_tasks_csv(pai(row));
    } catch (const TraceError& error) {
      return error.what();
    }
    return "no error";
  };
  EXPECT_EQ(error_of("p,w,Terminated,0,10,600,1,150,T4\n"),
            "line 2: plan_gpu 150 is neither a share of one GPU (below 100) nor whole GPUs (a "
            "multiple of 100)");
  EXPECT_EQ(error_of("p,w,Terminated,0,10,600,1,1e300,T4\n"),
            "line 2: plan_gpu 1e300 exceeds 100000");
  EXPECT_EQ(error_of("p,w,Terminated,0,10,9e99,1,50,T4\n"),
            "line 2: plan_cpu 9e99 exceeds 1000000");
  EXPECT_EQ(error_of("p,w,Terminated,0,10,600,2e6,50,T4\n"),
            "line 2: plan_mem 2e6 exceeds 1000000");
  EXPECT_EQ(error_of("p,w,Terminated,0,1e13,600,1,50,T4\n"),
            "line 2: end_time 1e13 exceeds 1000000000000");
  EXPECT_EQ(error_of("p,w,Terminated,0,10,600,1,-50,T4\n"),
            "line 2: plan_gpu '-50' is not a non-negative number");
  EXPECT_EQ(error_of("p,w,Terminated,0,10,600,1,nan,T4\n"),
            "line 2: plan_gpu 'nan' is not a non-negative number");
  EXPECT_EQ(error_of("p,w,Terminated,0,10,inf,1,50,T4\n"),
            "line 2: plan_cpu 'inf' is not a non-negative number");
  EXPECT_EQ(error_of("p,w,Terminated,soon,10,600,1,50,T4\n"),
            "line 2: start_time 'soon' is not a non-negative number");
  EXPECT_EQ(error_of(",w,Terminated,0,10,600,1,50,T4\n"), "line 2: empty job_name");
  EXPECT_EQ(error_of("p,w,Terminated,0,10,600\n"), "line 2: expected at least 7 fields, got 6");
  EXPECT_THROW(parse_pai_tasks_csv("job_name,start_time,end_time,plan_cpu,plan_mem\n"), TraceError);
}

TEST(SimPaiTrace, ToldApartFromOpenbByTheHeader) {
  EXPECT_TRUE(is_pai_tasks_csv(kPaiHeader));
  EXPECT_TRUE(is_pai_tasks_csv("job_name,plan_gpu\r\n"));
  EXPECT_FALSE(is_pai_tasks_csv("name,cpu_milli,memory_mib,num_gpu,gpu_milli\nplan_gpu\n"));
  EXPECT_FALSE(is_pai_tasks_csv(""));
}

TEST(SimPaiTrace, ReadsTheBundledFile) {
  const PaiTasks tasks = parse_pai_tasks_csv(
      read_text_file(std::string(GPUSHARE_SOURCE_DIR) + "/bench/data/pai/task.csv"));
  EXPECT_EQ(tasks.pods.size(), 10000u);
  EXPECT_EQ(tasks.dropped_missing_time, 0u);
  EXPECT_EQ(tasks.dropped_end_before_start, 0u);
  std::size_t shared = 0, cpu_only = 0, multi = 0;
  for (const auto& pod : tasks.pods) {
    ASSERT_TRUE(pod.lifetime);
    if (!pod.demand.wants_gpu())
      ++cpu_only;
    else if (pod.demand.per_gpu < kUnitsPerGpu)
      ++shared;
    else if (pod.demand.gpu_count > 1)
      ++multi;
  }
  EXPECT_EQ(shared, 5295u);
  EXPECT_EQ(cpu_only, 351u);
  EXPECT_EQ(multi, 355u);
}

}  // namespace
}  // namespace gpushare::sim
