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

}  // namespace
}  // namespace gpushare::sim
