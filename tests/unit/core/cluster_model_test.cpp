#include "gpushare/core/cluster_model.h"

#include <gtest/gtest.h>

#include <set>

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
  EXPECT_EQ(model.pod_count(),
            1u);  // pods outlive a node's removal (watch order is not guaranteed)
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

PodAllocation cpu_only_pod(std::string uid, std::string node, std::int64_t cpu_milli,
                           std::int64_t memory) {
  PodAllocation p = pod(std::move(uid), std::move(node), {}, 0);
  p.cpu_milli = cpu_milli;
  p.memory = memory;
  return p;
}

TEST(ClusterModel, CpuOnlyPodsMoveCpuAndMemoryButNoGpuUsage) {
  ClusterModel model;
  NodeSpec spec = gpu_node("n1", 2, 16);
  spec.cpu_milli = 8000;
  spec.memory = 1000;
  model.upsert_node(spec);
  model.add_pod(pod("gpu", "n1", {0}, 4));
  const NodeState before = *model.find_node("n1");
  model.add_pod(cpu_only_pod("cpu", "n1", 1500, 300));
  const NodeState* node = model.find_node("n1");
  EXPECT_EQ(node->cpu_used(), 1500);
  EXPECT_EQ(node->memory_used(), 300);
  EXPECT_EQ(node->cpu_free(), 6500);
  EXPECT_EQ(node->memory_free(), 700);
  // Nothing about GPUs moved: not a GPU, not the unindexed budget, not the derived figures.
  EXPECT_EQ(node->gpus()[0].used, 4);
  EXPECT_EQ(node->gpus()[1].used, 0);
  EXPECT_EQ(node->unindexed_used(), 0);
  EXPECT_EQ(node->total_used(), before.total_used());
  EXPECT_EQ(node->total_free(), before.total_free());
  EXPECT_EQ(node->largest_free(), before.largest_free());
  EXPECT_EQ(node->wholly_free_gpu_count(), 1);
  EXPECT_GT(node->generation(), before.generation());  // caches keyed on it see the change
  EXPECT_EQ(model.pod_count(), 2u);
  EXPECT_EQ(model.gpu_pod_count(), 1u);
  EXPECT_EQ(model.pods_on("n1").size(), 2u);
  // Gone again: back to where it was.
  EXPECT_TRUE(model.remove_pod("cpu"));
  EXPECT_EQ(model.find_node("n1")->cpu_used(), 0);
  EXPECT_EQ(model.find_node("n1")->memory_used(), 0);
  EXPECT_EQ(model.gpu_pod_count(), 1u);
  EXPECT_EQ(model.find_node("n1")->gpus()[0].used, 4);
}

TEST(ClusterModel, CpuOnlyPodsOnACpuNodeAndAcrossRespec) {
  ClusterModel model;
  model.add_pod(
      cpu_only_pod("early", "cpu-node", 250, 64));  // before its node, as a watch may order it
  NodeSpec spec;
  spec.name = "cpu-node";
  spec.cpu_milli = 4000;
  spec.memory = 4096;
  model.upsert_node(spec);
  EXPECT_EQ(model.find_node("cpu-node")->cpu_used(), 250);
  model.add_pod(cpu_only_pod("late", "cpu-node", 750, 1000));
  EXPECT_EQ(model.find_node("cpu-node")->cpu_used(), 1000);
  EXPECT_EQ(model.find_node("cpu-node")->memory_used(), 1064);
  // A node update rebuilds from its pods: same sums, no double counting.
  spec.cpu_milli = 2000;
  model.upsert_node(spec);
  EXPECT_EQ(model.find_node("cpu-node")->cpu_used(), 1000);
  EXPECT_EQ(model.find_node("cpu-node")->cpu_free(), 1000);
  EXPECT_EQ(model.find_node("cpu-node")->total_used(), 0);
  // Replacing a pod by UID replaces its CPU and memory.
  model.add_pod(cpu_only_pod("late", "cpu-node", 100, 0));
  EXPECT_EQ(model.find_node("cpu-node")->cpu_used(), 350);
  EXPECT_EQ(model.find_node("cpu-node")->memory_used(), 64);
  EXPECT_EQ(model.gpu_pod_count(), 0u);
  EXPECT_EQ(model.total_used(), 0);
}

TEST(ClusterModel, GpuPodCountFollowsAddsRemovesAndReplacements) {
  ClusterModel model;
  model.upsert_node(gpu_node("n1", 1, 16));
  model.add_pod(pod("a", "n1", {0}, 4));
  model.add_pod(cpu_only_pod("b", "n1", 100, 100));
  EXPECT_EQ(model.gpu_pod_count(), 1u);
  model.add_pod(cpu_only_pod("a", "n1", 100, 100));  // the same UID, now without GPU memory
  EXPECT_EQ(model.gpu_pod_count(), 0u);
  EXPECT_EQ(model.find_node("n1")->gpus()[0].used, 0);
  PodAllocation assumed = pod("c", "n1", {0}, 2);
  assumed.assumed = true;
  assumed.assume_time_ns = 10;
  model.add_pod(assumed);
  EXPECT_EQ(model.gpu_pod_count(), 1u);
  model.remove_pod("c");
  EXPECT_EQ(model.gpu_pod_count(), 0u);
  EXPECT_EQ(model.pod_count(), 2u);
}

TEST(ClusterModel, SameAllocationSeesCpuAndMemory) {
  ClusterModel a;
  ClusterModel b;
  for (auto* m : {&a, &b}) {
    m->upsert_node(gpu_node("n1", 2, 8));
    m->add_pod(cpu_only_pod("x", "n1", 100, 10));
  }
  EXPECT_TRUE(a.same_allocation_as(b));
  b.add_pod(cpu_only_pod("x", "n1", 200, 10));
  EXPECT_FALSE(a.same_allocation_as(b));
}

TEST(NodeState, CpuAndMemoryUsedSaturateInsteadOfOverflowing) {
  NodeSpec spec;
  spec.name = "n";
  spec.cpu_milli = 1000;
  NodeState node(spec);
  node.add_cpu_mem(INT64_MAX - 5, 1);
  node.add_cpu_mem(10, 1);
  EXPECT_EQ(node.cpu_used(), INT64_MAX);
  EXPECT_EQ(node.cpu_free(), 0);
  EXPECT_EQ(node.memory_used(), 2);
  node.remove_cpu_mem(10, 5);
  EXPECT_EQ(node.cpu_used(), INT64_MAX - 10);
  EXPECT_EQ(node.memory_used(), 0);  // never below zero
}

// ClusterModel::stamp: a node position's stamp moves with every change of the node there (pods,
// CPU and memory, health, respec, another node moved in by a removal) and never repeats, so a
// cache keyed on (position, stamp) cannot return a result computed for another state.
TEST(NodeStamp, MovesWithEveryChangeAndNeverRepeats) {
  ClusterModel model;
  for (const char* name : {"a", "b", "c"}) model.upsert_node(gpu_node(name, 4, 16));
  std::set<std::uint64_t> seen;
  const auto stamp_of = [&](std::string_view name) {
    return model.stamp(model.position_of(*model.find_node(name)));
  };
  for (const char* name : {"a", "b", "c"}) EXPECT_TRUE(seen.insert(stamp_of(name)).second);
  const auto changed = [&](std::string_view name) {
    const std::uint64_t now = stamp_of(name);
    return seen.insert(now).second;  // new, never seen before
  };

  model.add_pod(pod("uid-1", "b", {1}, 4));
  EXPECT_TRUE(changed("b"));
  model.remove_pod("uid-1");
  EXPECT_TRUE(changed("b"));
  PodAllocation cpu_only = pod("uid-2", "b", {}, 0);
  cpu_only.cpu_milli = 500;
  model.add_pod(cpu_only);
  EXPECT_TRUE(changed("b"));
  model.set_unhealthy("b", {2});
  EXPECT_TRUE(changed("b"));
  model.upsert_node(gpu_node("b", 8, 16));
  EXPECT_TRUE(changed("b"));
  const std::uint64_t c_before = stamp_of("c");
  model.remove_node("a");  // c moves into a's position
  EXPECT_TRUE(changed("c"));
  EXPECT_NE(stamp_of("c"), c_before);
  model.upsert_node(gpu_node("a", 4, 16));  // back, at a new position
  EXPECT_TRUE(changed("a"));
}

}  // namespace
}  // namespace gpushare::core
