// PlacementPolicy::score() is place()'s score, bit for bit, for every policy (prioritize uses
// score(); bind uses place()), on random nodes and pods, including pods that do not fit.

#include <gtest/gtest.h>

#include <random>

#include "gpushare/core/placement_policy.h"
#include "gpushare/core/policy_registry.h"

namespace gpushare::core {
namespace {

TEST(PolicyScore, EqualsPlaceScore) {
  std::mt19937 rng(11);
  for (const std::string& name : policy_names()) {
    auto policy = make_policy(name);
    ASSERT_TRUE(policy) << name;
    for (int round = 0; round < 3000; ++round) {
      NodeSpec spec;
      spec.name = "n" + std::to_string(round);
      spec.gpu_count = static_cast<int>(rng() % 9);
      spec.memory_per_gpu = 8 + static_cast<Units>(rng() % 3) * 8;
      spec.cpu_milli = rng() % 2 ? 64000 : 0;
      NodeState node(spec);
      for (int pods = static_cast<int>(rng() % 12); pods > 0; --pods) {
        node.add_usage(static_cast<int>(rng() % 10) - 1, 1 + static_cast<Units>(rng() % 8));
      }
      if (rng() % 5 == 0) node.set_unhealthy({static_cast<int>(rng() % 8)});
      PodDemand pod;
      pod.per_gpu = static_cast<Units>(rng() % 20);
      pod.gpu_count = rng() % 4 == 0 ? 1 + static_cast<int>(rng() % 3) : 1;
      pod.cpu_milli = static_cast<std::int64_t>(rng() % 4000);
      const auto placement = policy->place(node, pod);
      const auto score = policy->score(node, pod);
      ASSERT_EQ(placement.has_value(), score.has_value()) << name << " round " << round;
      if (placement) {
        EXPECT_EQ(placement->score, *score) << name << " round " << round;  // exact, not near
      }
      if (round % 7 == 0) policy->observe(pod);  // learning policies change as pods are seen
    }
  }
}

}  // namespace
}  // namespace gpushare::core
