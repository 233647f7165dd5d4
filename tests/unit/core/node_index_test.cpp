// ClusterModel's name index (open addressing, backward-shift deletion) against a std::map, over
// long random sequences of node upserts and removals.

#include <gtest/gtest.h>

#include <map>
#include <random>
#include <string>

#include "gpushare/core/cluster_model.h"

namespace gpushare::core {
namespace {

NodeSpec spec(const std::string& name, int gpus) {
  NodeSpec s;
  s.name = name;
  s.gpu_count = gpus;
  s.memory_per_gpu = 16;
  return s;
}

void expect_matches(const ClusterModel& model, const std::map<std::string, int>& expected,
                    const std::vector<std::string>& pool) {
  ASSERT_EQ(model.node_count(), expected.size());
  for (const auto& name : pool) {
    const NodeState* node = model.find_node(name);
    auto it = expected.find(name);
    if (it == expected.end()) {
      EXPECT_EQ(node, nullptr) << name;
    } else {
      ASSERT_NE(node, nullptr) << name;
      EXPECT_EQ(node->name(), name);
      EXPECT_EQ(node->gpu_count(), it->second) << name;
    }
  }
  for (const NodeState& node : model.nodes()) EXPECT_EQ(model.find_node(node.name()), &node);
}

TEST(NodeIndex, RandomUpsertsAndRemovalsMatchAMap) {
  std::vector<std::string> pool;
  for (int i = 0; i < 600; ++i) {
    // Mixed lengths, shared prefixes, and names that differ only at the end.
    pool.push_back(i % 3 == 0 ? "n" + std::to_string(i)
                              : "gke-ml-prod-a100-pool-" + std::to_string(i % 7) + "-node-" +
                                    std::to_string(i));
  }
  pool.push_back("");
  std::mt19937 rng(7);
  ClusterModel model;
  std::map<std::string, int> expected;
  for (int step = 0; step < 20000; ++step) {
    const std::string& name = pool[rng() % pool.size()];
    if (rng() % 3 == 0) {
      EXPECT_EQ(model.remove_node(name), expected.erase(name) == 1) << name;
    } else {
      const int gpus = 1 + static_cast<int>(rng() % 8);
      model.upsert_node(spec(name, gpus));
      expected[name] = gpus;
    }
    if (step % 997 == 0) expect_matches(model, expected, pool);
  }
  expect_matches(model, expected, pool);
  // Empty it completely, then refill: the table must stay consistent through both.
  for (const auto& name : pool) model.remove_node(name);
  expected.clear();
  expect_matches(model, expected, pool);
  for (const auto& name : pool) {
    model.upsert_node(spec(name, 2));
    expected[name] = 2;
  }
  expect_matches(model, expected, pool);
}

TEST(NodeIndex, CopiesAreIndependent) {
  ClusterModel a;
  a.upsert_node(spec("x", 1));
  a.upsert_node(spec("y", 2));
  ClusterModel b = a;
  b.remove_node("x");
  b.upsert_node(spec("z", 3));
  ASSERT_NE(a.find_node("x"), nullptr);
  EXPECT_EQ(a.find_node("z"), nullptr);
  EXPECT_EQ(b.find_node("x"), nullptr);
  ASSERT_NE(b.find_node("z"), nullptr);
  EXPECT_EQ(b.find_node("y")->gpu_count(), 2);
}

}  // namespace
}  // namespace gpushare::core
