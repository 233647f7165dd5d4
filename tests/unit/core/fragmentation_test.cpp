// The fragmentation measure and the target workloads it is measured against.
#include "gpushare/core/fragmentation.h"

#include <gtest/gtest.h>

#include <cmath>

#include "gpushare/core/workload.h"

namespace gpushare::core {
namespace {

FreeResources free_resources(std::vector<Units> gpu_free, std::int64_t cpu_free = 8000,
                             std::int64_t memory_free = 65536) {
  FreeResources node;
  node.cpu_free = cpu_free;
  node.memory_free = memory_free;
  node.gpu_model = "A";
  node.gpu_capacity = 1000;
  node.gpu_free = std::move(gpu_free);
  return node;
}

WorkloadShape gpu_shape(Units per_gpu, int count = 1, std::int64_t cpu = 1000) {
  WorkloadShape shape;
  shape.per_gpu = per_gpu;
  shape.gpu_count = count;
  shape.cpu_milli = cpu;
  return shape;
}

PodDemand pod(Units per_gpu, int count = 1, std::int64_t cpu = 1000, std::int64_t memory = 0) {
  PodDemand demand;
  demand.per_gpu = per_gpu;
  demand.gpu_count = count;
  demand.cpu_milli = cpu;
  demand.memory = memory;
  return demand;
}

TEST(ShapeFragmentation, HostableShapeCountsOnlyTooSmallGpus) {
  const auto node = free_resources({1000, 300, 0, 500});
  EXPECT_EQ(shape_fragmentation(node, gpu_shape(400)), 300);  // 1000 and 500 can take it
  EXPECT_EQ(shape_fragmentation(node, gpu_shape(300)), 0);
  EXPECT_EQ(shape_fragmentation(node, gpu_shape(501)), 800);  // 300 + 500
}

TEST(ShapeFragmentation, UnhostableShapeCountsEverythingIdle) {
  const auto node = free_resources({1000, 300, 0, 500});
  EXPECT_EQ(shape_fragmentation(node, gpu_shape(600, 2)), 1800);        // one GPU >= 600, needs two
  EXPECT_EQ(shape_fragmentation(node, gpu_shape(0, 0, 100)), 1800);     // CPU-only
  EXPECT_EQ(shape_fragmentation(node, gpu_shape(100, 1, 9000)), 1800);  // lacks CPU
  WorkloadShape other_model = gpu_shape(100);
  other_model.allowed_models = {"B"};
  EXPECT_EQ(shape_fragmentation(node, other_model), 1800);
  other_model.allowed_models = {"A", "B"};
  EXPECT_EQ(shape_fragmentation(node, other_model), 0);
  WorkloadShape big_memory = gpu_shape(100);
  big_memory.memory = 65537;
  EXPECT_EQ(shape_fragmentation(node, big_memory), 1800);
  big_memory.memory = 65536;
  EXPECT_EQ(shape_fragmentation(node, big_memory), 0);
}

TEST(ShapeFragmentation, RelativeShapesScaleWithTheGpu) {
  FreeResources node = free_resources({10, 7});
  node.gpu_capacity = 16;
  WorkloadShape half = gpu_shape(500, 1, 0);
  half.relative = true;  // 8 of 16
  EXPECT_EQ(half.per_gpu_on(16), 8);
  EXPECT_EQ(shape_fragmentation(node, half), 7);
}

TEST(Fragmentation, WeightsShapesAndIgnoresFullNodes) {
  const TargetWorkload workload{{gpu_shape(400), 0.5}, {gpu_shape(600, 2), 0.5}};
  EXPECT_DOUBLE_EQ(fragmentation(free_resources({1000, 300, 0, 500}), workload),
                   0.5 * 300 + 0.5 * 1800);
  EXPECT_DOUBLE_EQ(fragmentation(free_resources({0, 0}), workload), 0.0);
}

TEST(Fragmentation, OfNodeStateUsesHealthyFreeMemoryAndCpu) {
  NodeSpec spec;
  spec.name = "n";
  spec.gpu_count = 3;
  spec.memory_per_gpu = 1000;
  spec.cpu_milli = 4000;
  spec.gpu_model = "A";
  NodeState node(spec);
  node.add_usage(0, 700);
  node.set_unhealthy({2});
  node.add_cpu_mem(1000, 0);
  const FreeResources free = FreeResources::of(node);
  EXPECT_EQ(free.gpu_free, (std::vector<Units>{300, 1000, 0}));
  EXPECT_EQ(free.cpu_free, 3000);
  EXPECT_EQ(free.memory_free, std::numeric_limits<std::int64_t>::max());  // not tracked
  EXPECT_EQ(free.total_gpu_free(), 1300);
  EXPECT_DOUBLE_EQ(fragmentation(node, {{gpu_shape(500, 1, 3000), 1.0}}), 300.0);
  EXPECT_DOUBLE_EQ(fragmentation(node, {{gpu_shape(500, 1, 3001), 1.0}}), 1300.0);
}

TEST(FreeResources, TakeSubtractsThePod) {
  FreeResources node = free_resources({1000, 1000, 500});
  node.take(pod(1000, 2, 3000, 1024), std::vector<int>{0, 1});
  EXPECT_EQ(node.gpu_free, (std::vector<Units>{0, 0, 500}));
  EXPECT_EQ(node.cpu_free, 5000);
  EXPECT_EQ(node.memory_free, 65536 - 1024);
}

TEST(TypicalWorkload, KeepsTheHeaviestShapesUpToCoverage) {
  std::vector<PodDemand> pods;
  for (int i = 0; i < 6; ++i) pods.push_back(pod(500));
  for (int i = 0; i < 3; ++i) pods.push_back(pod(1000));
  pods.push_back(pod(0, 0, 2000));  // CPU-only
  const TargetWorkload all = typical_workload(pods, 0.95);
  ASSERT_EQ(all.size(), 3u);
  EXPECT_EQ(all[0].shape.per_gpu, 500);
  EXPECT_DOUBLE_EQ(all[0].weight, 0.6);
  EXPECT_EQ(all[2].shape.gpu_count, 0);
  const TargetWorkload most = typical_workload(pods, 0.9);
  ASSERT_EQ(most.size(), 2u);
  EXPECT_DOUBLE_EQ(most[0].weight, 6.0 / 9.0);
  EXPECT_DOUBLE_EQ(most[1].weight, 3.0 / 9.0);
}

TEST(TypicalWorkload, TiesGoToTheBiggerShapeAndMemoryIsOptional) {
  const std::vector<PodDemand> pods{pod(300, 1, 1000, 10), pod(300, 1, 2000, 20)};
  const TargetWorkload target = typical_workload(pods, 0.5);
  ASSERT_EQ(target.size(), 1u);
  EXPECT_EQ(target[0].shape.cpu_milli, 2000);
  EXPECT_EQ(target[0].shape.memory, 0);
  EXPECT_EQ(typical_workload(pods, 0.5, true)[0].shape.memory, 20);
}

TEST(TypicalWorkload, SqrtGpuWeightingKeepsRareMultiGpuPods) {
  std::vector<PodDemand> pods(20, pod(500));
  pods.push_back(pod(1000, 8));
  EXPECT_EQ(typical_workload(pods, 0.95).size(), 1u);  // 20 of 21 pods cover 95 %
  const TargetWorkload weighted = typical_workload(pods, 0.95, false, ShapeWeighting::kSqrtGpus);
  ASSERT_EQ(weighted.size(), 2u);
  EXPECT_NEAR(weighted[1].weight, std::sqrt(8.0) / (20 + std::sqrt(8.0)), 1e-12);
}

TEST(WorkloadHistogram, StartsFromThePriorAndLearns) {
  WorkloadHistogram::Options options;
  options.half_life_pods = 100;
  options.prior_weight = 10;
  options.refresh_every = 16;
  WorkloadHistogram histogram(options);
  ASSERT_FALSE(histogram.target().empty());
  EXPECT_TRUE(histogram.target().front().shape.relative);
  EXPECT_DOUBLE_EQ(histogram.prior_share(), 1.0);
  const auto initial_version = histogram.version();
  for (int i = 0; i < 64; ++i) histogram.observe(pod(300, 1, 4000));
  EXPECT_GT(histogram.version(), initial_version);
  EXPECT_EQ(histogram.observed(), 64u);
  EXPECT_EQ(histogram.target().front().shape.per_gpu, 300);
  EXPECT_FALSE(histogram.target().front().shape.relative);
  EXPECT_LT(histogram.prior_share(), 0.2);
  // A shift in the workload takes over after a few half-lives.
  for (int i = 0; i < 512; ++i) histogram.observe(pod(700, 1, 2000));
  EXPECT_EQ(histogram.target().front().shape.per_gpu, 700);
  EXPECT_GT(histogram.target().front().weight, 0.9);
  EXPECT_NE(histogram.describe().find("\"observedPods\":576"), std::string::npos);
}

TEST(WorkloadHistogram, RefreshesRarelySoCachesSurvive) {
  WorkloadHistogram::Options options;
  options.refresh_every = 128;
  WorkloadHistogram histogram(options);
  for (int i = 0; i < 128; ++i) histogram.observe(pod(300));
  const auto version = histogram.version();
  for (int i = 0; i < 127; ++i) histogram.observe(pod(300));
  EXPECT_EQ(histogram.version(), version);  // 129..255: no power of two, no multiple of 128
  histogram.observe(pod(300));
  EXPECT_EQ(histogram.version(), version + 1);
}

TEST(WorkloadHistogram, ForgetsTheLightestShapesBeyondTheLimit) {
  WorkloadHistogram::Options options;
  options.max_shapes = 6;  // 4 prior shapes + 2
  options.refresh_every = 1;
  WorkloadHistogram histogram(options);
  for (int i = 1; i <= 20; ++i) histogram.observe(pod(10 * i));
  EXPECT_LE(histogram.target().size(), 6u);
  EXPECT_NE(histogram.describe().find("\"trackedShapes\":6"), std::string::npos);
}

}  // namespace
}  // namespace gpushare::core
