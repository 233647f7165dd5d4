#include "gpushare/core/consolidation_planner.h"

#include <gtest/gtest.h>

#include <map>
#include <set>

namespace gpushare::core {
namespace {

NodeSpec gpu_node(std::string name, int gpus, Units per_gpu = 100) {
  NodeSpec spec;
  spec.name = std::move(name);
  spec.gpu_count = gpus;
  spec.memory_per_gpu = per_gpu;
  return spec;
}

void add(ClusterModel& model, std::string uid, std::string node, int gpu, Units amount) {
  PodAllocation pod;
  pod.uid = uid;
  pod.name = uid;
  pod.node = std::move(node);
  pod.gpus = {gpu};
  pod.per_gpu = amount;
  model.add_pod(std::move(pod));
}

PodMobility movable() {
  PodMobility m;
  m.opted_in = true;
  m.has_owner = true;
  return m;
}

MobilityLookup everyone() {
  return [](const PodAllocation&) { return std::optional<PodMobility>(movable()); };
}

// Carries the plan out on a copy of the model, move by move, checking every GPU after each
// step with the moved pod counted on both GPUs (its new copy starts before the old one stops).
ClusterModel carry_out(const ClusterModel& model, const ConsolidationPlan& plan) {
  ClusterModel after = model;
  for (const auto& move : plan.moves) {
    const PodAllocation* pod = after.find_pod(move.pod_uid);
    EXPECT_NE(pod, nullptr) << move.pod_uid;
    if (pod == nullptr) continue;
    EXPECT_EQ(pod->node, move.from_node);
    EXPECT_EQ(pod->gpus, std::vector<int>{move.from_gpu});
    PodAllocation copy = *pod;
    // Both copies counted: the target GPU must have room while the old one still runs.
    const NodeState* to = after.find_node(move.to_node);
    EXPECT_GE(to->gpus()[static_cast<std::size_t>(move.to_gpu)].free(), copy.per_gpu)
        << move.pod_uid << " -> " << move.to_node << "/" << move.to_gpu;
    copy.node = move.to_node;
    copy.gpus = {move.to_gpu};
    after.add_pod(std::move(copy));
    for (const auto& node : after.nodes()) {
      for (const auto& gpu : node.gpus()) EXPECT_LE(gpu.used, gpu.capacity) << node.name();
    }
  }
  return after;
}

int wholly_free(const ClusterModel& model) {
  int count = 0;
  for (const auto& node : model.nodes()) count += node.wholly_free_gpu_count();
  return count;
}

// n0: GPU0 a(30), GPU1 b(30); n1: GPU0 c(60), GPU1 d(50). Moving a onto b's GPU frees one.
ClusterModel two_half_used_gpus() {
  ClusterModel model;
  model.upsert_node(gpu_node("n0", 2));
  model.upsert_node(gpu_node("n1", 2));
  add(model, "a", "n0", 0, 30);
  add(model, "b", "n0", 1, 40);
  add(model, "c", "n1", 0, 60);
  add(model, "d", "n1", 1, 50);
  return model;
}

TEST(ConsolidationPlanner, FreesAGpuWithOneMove) {
  const ClusterModel model = two_half_used_gpus();
  const auto plan = plan_free_gpus(model, everyone(), {});
  ASSERT_TRUE(plan.has_value());
  EXPECT_GE(plan->gpus_freed, 1);
  EXPECT_LE(plan->cost(), 2.0);
  const ClusterModel after = carry_out(model, *plan);
  EXPECT_EQ(wholly_free(after) - wholly_free(model), plan->gpus_freed);
  EXPECT_EQ(after.total_used(), model.total_used());
  // The smallest pod moves first (a, 30) to the fullest GPU with room (c's, 60 used).
  EXPECT_EQ(plan->moves.front().pod_uid, "a");
  EXPECT_EQ(plan->moves.front().to_node, "n1");
  EXPECT_EQ(plan->moves.front().to_gpu, 0);
}

TEST(ConsolidationPlanner, NoRoomNoPlan) {
  // Every GPU 60 % full: no pod fits beside another.
  ClusterModel model;
  model.upsert_node(gpu_node("n0", 2));
  add(model, "a", "n0", 0, 60);
  add(model, "b", "n0", 1, 60);
  EXPECT_EQ(plan_free_gpus(model, everyone(), {}), std::nullopt);
}

TEST(ConsolidationPlanner, NeverMovesAPodOntoAnIdleGpu) {
  // Moving a to the idle GPU would free nothing.
  ClusterModel model;
  model.upsert_node(gpu_node("n0", 2));
  add(model, "a", "n0", 0, 60);
  EXPECT_EQ(plan_free_gpus(model, everyone(), {}), std::nullopt);
}

TEST(ConsolidationPlanner, RefusesPodsThatDidNotOptIn) {
  const ClusterModel model = two_half_used_gpus();
  const MobilityLookup none = [](const PodAllocation&) {
    PodMobility m = movable();
    m.opted_in = false;
    return std::optional<PodMobility>(m);
  };
  EXPECT_EQ(plan_free_gpus(model, none, {}), std::nullopt);
  const MobilityLookup unknown = [](const PodAllocation&) { return std::optional<PodMobility>(); };
  EXPECT_EQ(plan_free_gpus(model, unknown, {}), std::nullopt);
}

TEST(ConsolidationPlanner, RefusesBarePods) {
  const ClusterModel model = two_half_used_gpus();
  const MobilityLookup bare = [](const PodAllocation&) {
    PodMobility m = movable();
    m.has_owner = false;
    return std::optional<PodMobility>(m);
  };
  EXPECT_EQ(plan_free_gpus(model, bare, {}), std::nullopt);
}

TEST(ConsolidationPlanner, RefusesPodsWhoseBudgetAllowsNoDisruption) {
  const ClusterModel model = two_half_used_gpus();
  const MobilityLookup zero = [](const PodAllocation&) {
    PodMobility m = movable();
    m.disruption_budget = "ns/pdb";
    m.disruptions_allowed = 0;
    return std::optional<PodMobility>(m);
  };
  EXPECT_EQ(plan_free_gpus(model, zero, {}), std::nullopt);
}

TEST(ConsolidationPlanner, ABudgetOfOneMovesOnePodOfItsPods) {
  // Four GPUs each 20 % used (pods a..d under one budget) and one 30 % used (e, no budget):
  // without the budget three GPUs could be emptied into others.
  ClusterModel model;
  model.upsert_node(gpu_node("n0", 5));
  add(model, "a", "n0", 0, 20);
  add(model, "b", "n0", 1, 20);
  add(model, "c", "n0", 2, 20);
  add(model, "d", "n0", 3, 20);
  add(model, "e", "n0", 4, 30);
  const MobilityLookup one = [](const PodAllocation& pod) {
    PodMobility m = movable();
    if (pod.uid != "e") {
      m.disruption_budget = "ns/pdb";
      m.disruptions_allowed = 1;
    }
    return std::optional<PodMobility>(m);
  };
  ConsolidationLimits limits;
  limits.max_moves = 10;
  const auto plan = plan_free_gpus(model, one, limits);
  ASSERT_TRUE(plan.has_value());
  int under_budget = 0;
  for (const auto& move : plan->moves) under_budget += move.pod_uid != "e" ? 1 : 0;
  EXPECT_EQ(under_budget, 1);
  const auto free_all = plan_free_gpus(model, everyone(), limits);
  ASSERT_TRUE(free_all.has_value());
  EXPECT_GT(free_all->gpus_freed, plan->gpus_freed);
}

TEST(ConsolidationPlanner, BoundedByMovesPerPlanAndPerGpu) {
  // Eight GPUs with one 10 % pod each: seven could be emptied.
  ClusterModel model;
  model.upsert_node(gpu_node("n0", 8));
  for (int g = 0; g < 8; ++g) add(model, "p" + std::to_string(g), "n0", g, 10);
  ConsolidationLimits limits;
  limits.max_moves = 3;
  const auto plan = plan_free_gpus(model, everyone(), limits);
  ASSERT_TRUE(plan.has_value());
  EXPECT_EQ(plan->moves.size(), 3u);
  EXPECT_EQ(plan->gpus_freed, 3);
  carry_out(model, *plan);
  limits.max_moves = 0;
  EXPECT_EQ(plan_free_gpus(model, everyone(), limits), std::nullopt);

  // Two pods on every GPU: emptying one costs two moves, refused at one per GPU.
  ClusterModel pairs;
  pairs.upsert_node(gpu_node("n0", 4));
  for (int g = 0; g < 4; ++g) {
    add(pairs, "p" + std::to_string(g), "n0", g, 10);
    add(pairs, "q" + std::to_string(g), "n0", g, 10);
  }
  limits.max_moves = 10;
  limits.max_moves_per_gpu_freed = 1;
  EXPECT_EQ(plan_free_gpus(pairs, everyone(), limits), std::nullopt);
  limits.max_moves_per_gpu_freed = 2;
  const auto two = plan_free_gpus(pairs, everyone(), limits);
  ASSERT_TRUE(two.has_value());
  EXPECT_LE(two->cost(), 2.0);
}

TEST(ConsolidationPlanner, NeverOversubscribesManyRandomClusters) {
  // Deterministic pseudo-random clusters: every plan carried out keeps every GPU within
  // capacity at every step, moves only movable pods, and frees what it says.
  std::uint64_t state = 12345;
  const auto next = [&state](std::uint64_t bound) {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    return (state >> 33) % bound;
  };
  int plans = 0;
  for (int round = 0; round < 40; ++round) {
    ClusterModel model;
    const int nodes = 2 + static_cast<int>(next(4));
    for (int n = 0; n < nodes; ++n) model.upsert_node(gpu_node("n" + std::to_string(n), 4));
    int uid = 0;
    for (int n = 0; n < nodes; ++n) {
      for (int g = 0; g < 4; ++g) {
        Units used = 0;
        const int pods = static_cast<int>(next(4));
        for (int p = 0; p < pods; ++p) {
          const Units amount = 5 + static_cast<Units>(next(50));
          if (used + amount > 100) break;
          used += amount;
          add(model, "u" + std::to_string(uid++), "n" + std::to_string(n), g, amount);
        }
      }
    }
    const MobilityLookup some = [](const PodAllocation& pod) {
      PodMobility m = movable();
      m.opted_in = pod.uid.back() != '3';
      return std::optional<PodMobility>(m);
    };
    ConsolidationLimits limits;
    limits.max_moves = 1 + static_cast<int>(next(6));
    const auto plan = plan_free_gpus(model, some, limits);
    if (!plan) continue;
    ++plans;
    EXPECT_LE(plan->moves.size(), static_cast<std::size_t>(limits.max_moves));
    std::set<std::string> moved;
    for (const auto& move : plan->moves) {
      EXPECT_NE(move.pod_uid.back(), '3');
      EXPECT_TRUE(moved.insert(move.pod_uid).second) << "moved twice: " << move.pod_uid;
    }
    const ClusterModel after = carry_out(model, *plan);
    EXPECT_EQ(wholly_free(after) - wholly_free(model), plan->gpus_freed);
    EXPECT_GE(plan->gpus_freed, 1);
  }
  EXPECT_GT(plans, 10);
}

TEST(ConsolidationPlanner, MakesRoomForAPendingWholeGpuPod) {
  // Every GPU partly used; a whole-GPU pod fits nowhere until c (20) joins a.
  ClusterModel model;
  model.upsert_node(gpu_node("n0", 2));
  model.upsert_node(gpu_node("n1", 2));
  add(model, "a", "n0", 0, 70);
  add(model, "b", "n0", 1, 50);
  add(model, "c", "n1", 0, 20);
  add(model, "d", "n1", 1, 90);
  PodDemand whole;
  whole.per_gpu = 100;
  const auto plan = plan_for_pending(model, whole, everyone(), {});
  ASSERT_TRUE(plan.has_value());
  ASSERT_EQ(plan->moves.size(), 1u);
  EXPECT_EQ(plan->moves[0].pod_uid, "c");
  EXPECT_EQ(plan->pending_node, "n1");
  EXPECT_EQ(plan->pending_gpus, std::vector<int>{0});
  const ClusterModel after = carry_out(model, *plan);
  EXPECT_EQ(after.find_node("n1")->gpus()[0].used, 0);

  // A pod that fits already needs no plan; one too big for any GPU gets none.
  PodDemand small;
  small.per_gpu = 10;
  EXPECT_EQ(plan_for_pending(model, small, everyone(), {}), std::nullopt);
  PodDemand huge;
  huge.per_gpu = 100;
  huge.gpu_count = 5;
  EXPECT_EQ(plan_for_pending(model, huge, everyone(), {}), std::nullopt);
  // Nothing may move: no plan.
  const MobilityLookup none = [](const PodAllocation&) { return std::optional<PodMobility>(); };
  EXPECT_EQ(plan_for_pending(model, whole, none, {}), std::nullopt);
}

TEST(ConsolidationPlanner, MakesRoomForAPendingMultiGpuPod) {
  ClusterModel model;
  model.upsert_node(gpu_node("n0", 2));
  model.upsert_node(gpu_node("n1", 2));
  add(model, "a", "n0", 0, 10);
  add(model, "b", "n0", 1, 10);
  add(model, "c", "n1", 0, 50);
  PodDemand two;
  two.per_gpu = 100;
  two.gpu_count = 2;
  const auto plan = plan_for_pending(model, two, everyone(), {});
  ASSERT_TRUE(plan.has_value());
  EXPECT_EQ(plan->moves.size(), 1u);
  EXPECT_EQ(plan->pending_node, "n1");
  carry_out(model, *plan);
  ConsolidationLimits limits;
  limits.max_moves = 0;
  EXPECT_EQ(plan_for_pending(model, two, everyone(), limits), std::nullopt);
}

TEST(ConsolidationPlanner, MultiGpuPodsStayPut) {
  // p holds GPUs 0 and 1 at 10 each; q holds GPU 2 at 50: only q could move, and to nowhere
  // but an idle GPU or p's (whose pod cannot leave): p's GPUs take q, freeing GPU 2.
  ClusterModel model;
  model.upsert_node(gpu_node("n0", 3));
  PodAllocation p;
  p.uid = "p";
  p.node = "n0";
  p.gpus = {0, 1};
  p.per_gpu = 10;
  model.add_pod(p);
  add(model, "q", "n0", 2, 50);
  const auto plan = plan_free_gpus(model, everyone(), {});
  ASSERT_TRUE(plan.has_value());
  for (const auto& move : plan->moves) EXPECT_EQ(move.pod_uid, "q");
  carry_out(model, *plan);
}

TEST(MoveBudget, CountsTheLastHour) {
  MoveBudget budget(5);
  EXPECT_EQ(budget.left(0), 5);
  budget.record(10, 3);
  EXPECT_EQ(budget.left(20), 2);
  budget.record(1000, 2);
  EXPECT_EQ(budget.left(1001), 0);
  EXPECT_EQ(budget.left(3610), 3);  // the moves at 10 s have aged out
  EXPECT_EQ(budget.left(4600), 5);
}

}  // namespace
}  // namespace gpushare::core
