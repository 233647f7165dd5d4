// ScoreCache keeps one table of raw scores (and bounds of scores, apart) per demand, for the
// last few demands, and drops them all when the policy's version moves; StateMemo and
// state_hash/same_state tell nodes in the same state apart from nodes that differ in anything
// a policy may read.

#include "gpushare/core/score_cache.h"

#include <gtest/gtest.h>

#include "gpushare/core/node_state_key.h"
#include "gpushare/core/state_memo.h"

namespace gpushare::core {
namespace {

PodDemand demand_of(Units per_gpu, std::int64_t cpu_milli = 0) {
  PodDemand demand;
  demand.per_gpu = per_gpu;
  demand.cpu_milli = cpu_milli;
  return demand;
}

TEST(ScoreCache, KeepsATablePerDemandAndForgetsTheLeastRecentlyUsed) {
  ScoreCache cache(2);
  cache.begin(demand_of(4), 7, 3);
  EXPECT_FALSE(cache.find(0, 1));
  cache.store(0, 1, 0.5);
  cache.store(1, 2, std::nullopt);
  cache.begin(demand_of(8), 7, 3);
  EXPECT_FALSE(cache.find(0, 1));  // another demand's table
  cache.store(0, 1, 0.25);
  cache.begin(demand_of(4), 7, 3);
  ASSERT_TRUE(cache.find(0, 1));
  EXPECT_EQ(*cache.find(0, 1), std::optional<double>(0.5));
  ASSERT_TRUE(cache.find(1, 2));
  EXPECT_EQ(*cache.find(1, 2), std::nullopt);  // remembered as infeasible
  EXPECT_FALSE(cache.find(0, 9));              // the node's stamp moved
  EXPECT_FALSE(cache.find(2, 1));
  // A third demand replaces the least recently used table: 8's, not 4's.
  cache.begin(demand_of(4, 100), 7, 3);
  EXPECT_EQ(cache.tables(), 2u);
  cache.begin(demand_of(4), 7, 3);
  EXPECT_TRUE(cache.find(0, 1));
  cache.begin(demand_of(8), 7, 3);
  EXPECT_FALSE(cache.find(0, 1));
  cache.begin(demand_of(4), 7, 3);  // 8's fresh table replaced (4, 100)'s, not 4's
  EXPECT_TRUE(cache.find(0, 1));
  // A new policy version drops every table.
  cache.begin(demand_of(4), 8, 3);
  EXPECT_FALSE(cache.find(0, 1));
  EXPECT_EQ(cache.tables(), 1u);
  // More positions: the new ones start empty, the old ones stay.
  cache.store(0, 1, 1.0);
  cache.begin(demand_of(4), 8, 5);
  EXPECT_TRUE(cache.find(0, 1));
  EXPECT_FALSE(cache.find(4, 1));
}

// A bound is kept apart from a score: find() never returns it, read() names it, and a score
// stored over it (or a bound over a score) replaces it.
TEST(ScoreCache, KeepsBoundsApartFromScores) {
  using Held = ScoreCache::Held;
  const auto held = [](const ScoreCache& cache, std::size_t position, std::uint64_t stamp) {
    return cache.read(position, stamp).held;
  };
  ScoreCache cache;
  cache.begin(demand_of(4), 1, 2);
  EXPECT_EQ(held(cache, 0, 5), Held::kNothing);
  cache.store_bound(0, 5, 2.5);
  EXPECT_FALSE(cache.find(0, 5));
  ASSERT_EQ(held(cache, 0, 5), Held::kBound);
  EXPECT_EQ(cache.read(0, 5).value, 2.5);
  EXPECT_EQ(held(cache, 0, 6), Held::kNothing);  // the node's stamp moved
  cache.store(0, 5, 1.5);
  ASSERT_EQ(held(cache, 0, 5), Held::kScore);
  EXPECT_EQ(cache.read(0, 5).value, 1.5);
  ASSERT_TRUE(cache.find(0, 5));
  EXPECT_EQ(*cache.find(0, 5), std::optional<double>(1.5));
  cache.store(1, 5, std::nullopt);
  EXPECT_EQ(held(cache, 1, 5), Held::kInfeasible);
  cache.store_bound(1, 5, -3.0);
  EXPECT_FALSE(cache.find(1, 5));
  EXPECT_EQ(held(cache, 1, 5), Held::kBound);
  EXPECT_EQ(cache.read(1, 5).value, -3.0);
  // Kept per demand and dropped with the policy's version, as scores are.
  cache.begin(demand_of(8), 1, 2);
  EXPECT_EQ(held(cache, 1, 5), Held::kNothing);
  cache.begin(demand_of(4), 1, 2);
  EXPECT_EQ(held(cache, 1, 5), Held::kBound);
  cache.begin(demand_of(4), 2, 2);
  EXPECT_EQ(held(cache, 1, 5), Held::kNothing);
}

NodeState node(const std::string& name, const std::string& model = "A100") {
  NodeSpec spec;
  spec.name = name;
  spec.address = name + ".local";
  spec.gpu_count = 4;
  spec.memory_per_gpu = 32;
  spec.gpu_model = model;
  spec.cpu_milli = 64000;
  spec.memory = 1 << 30;
  return NodeState(spec);
}

// begin() tells a kept table from a fresh one, and holds_bounds() whether the selected table
// got a bound since it was made (Scorer::score_top goes the way the demand's last request went).
TEST(ScoreCache, TellsKeptTablesAndTablesHoldingBounds) {
  ScoreCache cache(2);
  EXPECT_FALSE(cache.begin(demand_of(4), 7, 3));  // fresh
  EXPECT_FALSE(cache.holds_bounds());
  cache.store(0, 1, 0.5);
  EXPECT_FALSE(cache.holds_bounds());
  EXPECT_FALSE(cache.begin(demand_of(8), 7, 3));
  cache.store_bound(1, 1, 0.75);
  EXPECT_TRUE(cache.holds_bounds());
  EXPECT_TRUE(cache.begin(demand_of(4), 7, 3));  // kept, scores only
  EXPECT_FALSE(cache.holds_bounds());
  EXPECT_TRUE(cache.begin(demand_of(8), 7, 3));  // kept, with a bound
  EXPECT_TRUE(cache.holds_bounds());
  // A third demand takes the least recently used table (4's): fresh, without bounds.
  EXPECT_FALSE(cache.begin(demand_of(2), 7, 3));
  EXPECT_FALSE(cache.holds_bounds());
  // A move of the policy's version drops every table.
  EXPECT_FALSE(cache.begin(demand_of(8), 8, 3));
  EXPECT_FALSE(cache.holds_bounds());
}

TEST(NodeStateKey, NodesDifferingOnlyInIdentityShareAState) {
  NodeState a = node("a");
  NodeState b = node("b");
  a.add_usage(1, 8);
  b.add_usage(1, 8);
  b.add_usage(2, 4);
  b.remove_usage(2, 4);  // the same state reached another way: another generation
  EXPECT_TRUE(same_state(a, b));
  EXPECT_EQ(state_hash(a), state_hash(b));

  // Each thing a policy may read makes a different state.
  std::vector<NodeState> others;
  others.push_back(node("c", "A100-80GB"));
  others.back().add_usage(1, 8);
  others.push_back(node("d"));
  others.back().add_usage(2, 8);  // same amount, another GPU
  others.push_back(node("e"));
  others.back().add_usage(1, 8);
  others.back().set_unhealthy({3});
  others.push_back(node("f"));
  others.back().add_usage(1, 8);
  others.back().add_cpu_mem(1000, 0);
  others.push_back(node("g"));
  others.back().add_usage(1, 8);
  others.back().add_cpu_mem(0, 1 << 20);
  others.push_back(node("h"));
  others.back().add_usage(1, 8);
  others.back().add_usage(-1, 1);  // unindexed usage
  NodeSpec respec = a.spec();
  respec.memory_per_gpu = 40;
  others.emplace_back(respec);
  others.back().add_usage(1, 8);
  respec = a.spec();
  respec.cpu_milli = 32000;
  others.emplace_back(respec);
  others.back().add_usage(1, 8);
  respec = a.spec();
  respec.misconfiguration = "broken";
  others.emplace_back(respec);
  for (const NodeState& other : others) {
    EXPECT_FALSE(same_state(a, other)) << other.name();
    EXPECT_NE(state_hash(a), state_hash(other)) << other.name();  // not required, but expected
  }
}

TEST(StateMemo, FindsOnlyTheStatesOfThisRequest) {
  StateMemo memo;
  NodeState a = node("a");
  NodeState b = node("b");
  NodeState c = node("c");
  c.add_usage(0, 4);
  memo.begin(3);
  EXPECT_FALSE(memo.find(b, state_hash(b)));
  memo.remember(a, state_hash(a), 2.5);
  memo.remember(c, state_hash(c), std::nullopt);
  ASSERT_TRUE(memo.find(b, state_hash(b)));
  EXPECT_EQ(memo.find(b, state_hash(b))->score, std::optional<double>(2.5));
  EXPECT_FALSE(memo.find(b, state_hash(b))->bounded);
  ASSERT_TRUE(memo.find(c, state_hash(c)));
  EXPECT_EQ(memo.find(c, state_hash(c))->score, std::nullopt);
  // A colliding hash is not enough: the states are compared.
  EXPECT_FALSE(memo.find(c, state_hash(a)));
  memo.begin(3);
  EXPECT_FALSE(memo.find(b, state_hash(b)));
}

TEST(StateMemo, ABoundIsRememberedAsABound) {
  StateMemo memo;
  NodeState a = node("a");
  NodeState b = node("b");
  memo.begin(2);
  memo.remember(a, state_hash(a), -3.0, /*bounded=*/true);
  memo.remember(a, state_hash(a), -3.5, /*bounded=*/true);  // a state is remembered once
  auto found = memo.find(b, state_hash(b));
  ASSERT_TRUE(found);
  EXPECT_EQ(found->score, std::optional<double>(-3.0));
  EXPECT_TRUE(found->bounded);
  // A score replaces the bound, and stays.
  memo.remember(b, state_hash(b), -4.0);
  memo.remember(a, state_hash(a), -3.0, /*bounded=*/true);
  found = memo.find(a, state_hash(a));
  ASSERT_TRUE(found);
  EXPECT_EQ(found->score, std::optional<double>(-4.0));
  EXPECT_FALSE(found->bounded);
}

}  // namespace
}  // namespace gpushare::core
