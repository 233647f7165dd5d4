#include "gpushare/core/cluster_model.h"

#include <gtest/gtest.h>

namespace gpushare::core {
namespace {

NodeSpec gpu_node(std::string name, int gpus, Units per_gpu) {
  NodeSpec spec;
  spec.name = std::move(name);
  spec.gpu_count = gpus;
  spec.memory_per_gpu = per_gpu;
  return spec;
}

PodAllocation pod(std::string uid, std::string node, std::vector<int> gpus, Units amount) {
  PodAllocation p;
  p.uid = uid;
  p.name = "pod-" + uid;
  p.namespace_name = "default";
  p.node = std::move(node);
  p.gpus = std::move(gpus);
  p.per_gpu = amount;
  return p;
}

TEST(ClusterModel, TracksUsagePerGpu) {
  ClusterModel model;
  model.upsert_node(gpu_node("n1", 2, 16));
  model.add_pod(pod("a", "n1", {0}, 4));
  model.add_pod(pod("b", "n1", {0}, 8));
  model.add_pod(pod("c", "n1", {1}, 2));
  const NodeState* node = model.find_node("n1");
  ASSERT_NE(node, nullptr);
  EXPECT_EQ(node->gpus()[0].used, 12);
  EXPECT_EQ(node->gpus()[1].used, 2);
  EXPECT_EQ(node->total_used(), 14);
  EXPECT_EQ(node->total_free(), 18);
  EXPECT_EQ(node->largest_free(), 14);
  EXPECT_EQ(model.total_used(), 14);
  EXPECT_EQ(model.total_capacity(), 32);
  EXPECT_EQ(model.pods_on("n1").size(), 3u);
}

TEST(ClusterModel, ReplacingAPodByUidDoesNotDoubleCount) {
  ClusterModel model;
  model.upsert_node(gpu_node("n1", 1, 16));
  model.add_pod(pod("a", "n1", {0}, 4));
  model.add_pod(pod("a", "n1", {0}, 6));
  EXPECT_EQ(model.find_node("n1")->gpus()[0].used, 6);
  EXPECT_EQ(model.pod_count(), 1u);
  EXPECT_TRUE(model.remove_pod("a"));
  EXPECT_FALSE(model.remove_pod("a"));
  EXPECT_EQ(model.find_node("n1")->gpus()[0].used, 0);
}

TEST(ClusterModel, PodsBeforeTheirNodeAttachWhenTheNodeArrives) {
  ClusterModel model;
  model.add_pod(pod("a", "late", {1}, 5));
  EXPECT_EQ(model.total_used(), 0);
  model.upsert_node(gpu_node("late", 2, 8));
  EXPECT_EQ(model.find_node("late")->gpus()[1].used, 5);
  model.remove_node("late");
  EXPECT_EQ(model.find_node("late"), nullptr);
  EXPECT_EQ(model.pod_count(), 1u);  // pods outlive a node's removal (watch order is not guaranteed)
  model.upsert_node(gpu_node("late", 2, 8));
  EXPECT_EQ(model.find_node("late")->gpus()[1].used, 5);
}

TEST(ClusterModel, CapacityChangeRederivesUsage) {
  ClusterModel model;
  model.upsert_node(gpu_node("n1", 4, 10));
  model.add_pod(pod("a", "n1", {3}, 7));
  model.add_pod(pod("b", "n1", {0}, 2));
  const auto generation = model.find_node("n1")->generation();
  model.upsert_node(gpu_node("n1", 2, 10));  // GPUs 2 and 3 went away
  const NodeState* node = model.find_node("n1");
  EXPECT_GT(node->generation(), generation);
  EXPECT_EQ(node->gpu_count(), 2);
  EXPECT_EQ(node->gpus()[0].used, 2);
  EXPECT_EQ(node->unindexed_used(), 7);  // a pod on a vanished GPU still counts on the node
  EXPECT_EQ(node->total_free(), 11);
  model.upsert_node(gpu_node("n1", 4, 10));  // and it comes back
  EXPECT_EQ(model.find_node("n1")->gpus()[3].used, 7);
  EXPECT_EQ(model.find_node("n1")->unindexed_used(), 0);
}

TEST(ClusterModel, UnindexedPodsReduceTheNodesBudget) {
  ClusterModel model;
  model.upsert_node(gpu_node("n1", 2, 8));
  model.add_pod(pod("a", "n1", {}, 12));
  const NodeState* node = model.find_node("n1");
  EXPECT_EQ(node->total_free(), 4);
  EXPECT_EQ(node->largest_free(), 4);  // capped by the node budget, not the emptiest GPU
}

TEST(ClusterModel, UnhealthyGpusSurviveRespecAndAreExcluded) {
  ClusterModel model;
  model.set_unhealthy("n1", {1, 1, 5});
  model.upsert_node(gpu_node("n1", 2, 8));
  const NodeState* node = model.find_node("n1");
  EXPECT_FALSE(node->gpus()[1].healthy);
  EXPECT_TRUE(node->gpus()[0].healthy);
  EXPECT_EQ(node->healthy_gpu_count(), 1);
  EXPECT_EQ(node->total_free(), 8);
  EXPECT_EQ(model.unhealthy("n1"), (std::vector<int>{1, 5}));
  model.set_unhealthy("n1", {});
  EXPECT_EQ(model.find_node("n1")->healthy_gpu_count(), 2);
}

TEST(ClusterModel, RemovingANodeKeepsOthersIndexed) {
  ClusterModel model;
  for (const char* name : {"a", "b", "c"}) model.upsert_node(gpu_node(name, 1, 4));
  model.remove_node("a");
  ASSERT_NE(model.find_node("c"), nullptr);
  EXPECT_EQ(model.find_node("c")->name(), "c");
  EXPECT_EQ(model.find_node("b")->name(), "b");
  EXPECT_EQ(model.node_count(), 2u);
}

TEST(ClusterModel, AssumedPodsConfirmAndExpire) {
  ClusterModel model;
  model.upsert_node(gpu_node("n1", 1, 16));
  auto a = pod("a", "n1", {0}, 4);
  a.assumed = true;
  a.assume_time_ns = 100;
  auto b = pod("b", "n1", {0}, 4);
  b.assumed = true;
  b.assume_time_ns = 200;
  model.add_pod(a);
  model.add_pod(b);
  EXPECT_EQ(model.assumed_count(), 2u);
  EXPECT_TRUE(model.confirm("b"));
  EXPECT_EQ(model.expire_assumed(1000), std::vector<std::string>{"a"});
  EXPECT_EQ(model.find_node("n1")->gpus()[0].used, 4);
  EXPECT_EQ(model.assumed_count(), 0u);
}

TEST(ClusterModel, SameAllocationComparesUsageAndPods) {
  ClusterModel a;
  ClusterModel b;
  for (auto* m : {&a, &b}) {
    m->upsert_node(gpu_node("n1", 2, 8));
    m->add_pod(pod("x", "n1", {1}, 3));
  }
  EXPECT_TRUE(a.same_allocation_as(b));
  b.add_pod(pod("y", "n1", {0}, 1));
  EXPECT_FALSE(a.same_allocation_as(b));
}

}  // namespace
}  // namespace gpushare::core
