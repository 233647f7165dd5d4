#include "gpushare/core/preemption.h"

#include <gtest/gtest.h>

namespace gpushare::core {
namespace {

// Two 16-unit GPUs: GPU 0 holds a (10) and b (4), GPU 1 holds c (12); d holds no GPU.
NodeState node() {
  NodeSpec spec;
  spec.name = "n";
  spec.gpu_count = 2;
  spec.memory_per_gpu = 16;
  NodeState state(spec);
  state.add_usage(0, 10);
  state.add_usage(0, 4);
  state.add_usage(1, 12);
  return state;
}

PreemptionVictim on_gpu(std::string uid, int gpu, Units amount) {
  PodAllocation allocation;
  allocation.node = "n";
  allocation.gpus = {gpu};
  allocation.per_gpu = amount;
  return {std::move(uid), allocation};
}

PodDemand wants(Units amount) {
  PodDemand demand;
  demand.per_gpu = amount;
  return demand;
}

TEST(Preemption, FewestGpuVictimsThenLeastMemoryKeepingTheOthers) {
  const std::vector<PreemptionVictim> victims = {
      on_gpu("a", 0, 10), on_gpu("b", 0, 4), on_gpu("c", 1, 12), {"d", std::nullopt}};
  // 12 free on one GPU: evicting a (10) or c (12) both take one victim; a frees less.
  EXPECT_EQ(choose_victims(node(), wants(12), victims), (std::vector<std::string>{"d", "a"}));
}

TEST(Preemption, NoFitEvenWithEveryVictimIsNullopt) {
  EXPECT_EQ(choose_victims(node(), wants(17), {on_gpu("a", 0, 10)}), std::nullopt);
}

TEST(Preemption, AVictimListedTwiceCountsOnce) {
  // Counted twice, a's 10 would be freed twice and GPU 0 would seem to offer 16.
  EXPECT_EQ(choose_victims(node(), wants(16), {on_gpu("a", 0, 10), on_gpu("a", 0, 10)}),
            std::nullopt);
}

TEST(Preemption, APodWithoutGpuDemandKeepsEveryVictim) {
  EXPECT_EQ(choose_victims(node(), wants(0),
                           {on_gpu("a", 0, 10), {"d", std::nullopt}, on_gpu("a", 0, 10)}),
            (std::vector<std::string>{"a", "d"}));
}

}  // namespace
}  // namespace gpushare::core
