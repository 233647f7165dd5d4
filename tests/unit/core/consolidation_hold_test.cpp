// Consolidation's holds (include/gpushare/core/consolidation_hold.h): memory kept on one GPU for
// one owner's replacement pod, against every other pod, until released or expired.
#include "gpushare/core/consolidation_hold.h"

#include <gtest/gtest.h>

#include "gpushare/core/fit.h"

namespace gpushare::core {
namespace {

constexpr std::int64_t kSecond = 1'000'000'000;

class Holds : public ::testing::Test {
 protected:
  Holds() {
    NodeSpec spec;
    spec.name = "n1";
    spec.gpu_count = 2;
    spec.memory_per_gpu = 16;
    model.upsert_node(spec);
    PodAllocation pod;
    pod.uid = "a";
    pod.namespace_name = "default";
    pod.name = "a";
    pod.node = "n1";
    pod.gpus = {0};
    pod.per_gpu = 8;
    model.add_pod(pod);  // n1 GPU 0: 8 of 16 used
  }

  static ConsolidationHold hold(const std::string& owner, Units memory, int gpu = 0,
                                std::int64_t expires_ns = 100 * kSecond) {
    ConsolidationHold h;
    h.node = "n1";
    h.gpu = gpu;
    h.memory = memory;
    h.owner_uid = owner;
    h.owner = "ReplicaSet/" + owner;
    h.evicted = "default/old-" + owner;
    h.created_ns = 10 * kSecond;
    h.expires_ns = expires_ns;
    return h;
  }

  const NodeState& node() const { return *model.find_node("n1"); }

  ClusterModel model;
  HoldBook book;
};

TEST_F(Holds, AHoldCountsAgainstOtherPodsOnly) {
  ASSERT_EQ(book.place(model, hold("rs-1", 6), 10 * kSecond), "");
  EXPECT_EQ(book.held_against("n1", 0, "other", 20 * kSecond), 6);
  EXPECT_EQ(book.held_against("n1", 0, "", 20 * kSecond), 6);  // a pod without an owner
  EXPECT_EQ(book.held_against("n1", 0, "rs-1", 20 * kSecond), 0);
  EXPECT_EQ(book.held_against("n1", 1, "other", 20 * kSecond), 0);
  // Another pod sees 8 - 6 = 2 free on GPU 0: a pod of 4 fits only on GPU 1.
  const std::optional<NodeState> view = book.view_for(node(), "other", 20 * kSecond);
  ASSERT_TRUE(view);
  EXPECT_EQ(view->gpus()[0].free(), 2);
  EXPECT_EQ(view->gpus()[1].free(), 16);
  EXPECT_EQ(node().gpus()[0].free(), 8);  // the model itself is untouched
  PodDemand four;
  four.per_gpu = 4;
  EXPECT_TRUE(check_fit(*view, four).fits());
  PodDemand ten;
  ten.per_gpu = 10;
  EXPECT_TRUE(check_fit(node(), ten).fits());  // GPU 1 has 16
  // The owner's pod sees the node as it is.
  EXPECT_FALSE(book.view_for(node(), "rs-1", 20 * kSecond));
  ASSERT_NE(book.for_owner("rs-1", 20 * kSecond), nullptr);
  EXPECT_EQ(book.for_owner("rs-1", 20 * kSecond)->memory, 6);
  EXPECT_EQ(book.for_owner("other", 20 * kSecond), nullptr);
  EXPECT_EQ(book.for_owner("", 20 * kSecond), nullptr);
}

TEST_F(Holds, AHoldNeedsRoomNotHeldByAnother) {
  EXPECT_NE(book.place(model, hold("rs-1", 9), 10 * kSecond), "");  // 8 free
  ASSERT_EQ(book.place(model, hold("rs-1", 5), 10 * kSecond), "");
  const std::string refused = book.place(model, hold("rs-2", 4), 10 * kSecond);
  EXPECT_NE(refused.find("less 5 held"), std::string::npos) << refused;
  EXPECT_EQ(book.place(model, hold("rs-2", 3), 10 * kSecond), "");
  EXPECT_EQ(book.held_against("n1", 0, "", 20 * kSecond), 8);
  // The same owner's new hold replaces its old one rather than adding to it.
  EXPECT_EQ(book.place(model, hold("rs-1", 5), 10 * kSecond), "");
  EXPECT_EQ(book.size(), 2u);
  EXPECT_EQ(book.held_against("n1", 0, "", 20 * kSecond), 8);
}

TEST_F(Holds, BadHoldsArePlacedNowhere) {
  ConsolidationHold no_owner = hold("", 2);
  EXPECT_NE(book.place(model, no_owner, 10 * kSecond), "");
  EXPECT_NE(book.place(model, hold("rs-1", 0), 10 * kSecond), "");
  EXPECT_NE(book.place(model, hold("rs-1", 2, 2), 10 * kSecond), "");   // no GPU 2
  EXPECT_NE(book.place(model, hold("rs-1", 2, -1), 10 * kSecond), "");  // nor GPU -1
  ConsolidationHold elsewhere = hold("rs-1", 2);
  elsewhere.node = "n9";
  EXPECT_NE(book.place(model, elsewhere, 10 * kSecond), "");
  EXPECT_NE(book.place(model, hold("rs-1", 2, 0, 5 * kSecond), 10 * kSecond), "");  // expired
  model.set_unhealthy("n1", {1});
  EXPECT_NE(book.place(model, hold("rs-1", 2, 1), 10 * kSecond), "");
  EXPECT_TRUE(book.empty());
}

TEST_F(Holds, AnExpiredHoldIsNotInForceAndIsTakenOutOnce) {
  ASSERT_EQ(book.place(model, hold("rs-1", 6, 0, 30 * kSecond), 10 * kSecond), "");
  EXPECT_EQ(book.held_against("n1", 0, "", 29 * kSecond), 6);
  EXPECT_EQ(book.held_against("n1", 0, "", 30 * kSecond), 0);
  EXPECT_FALSE(book.view_for(node(), "other", 30 * kSecond));
  EXPECT_EQ(book.for_owner("rs-1", 30 * kSecond), nullptr);
  EXPECT_TRUE(book.release_expired(29 * kSecond).empty());
  const auto expired = book.release_expired(31 * kSecond);
  ASSERT_EQ(expired.size(), 1u);
  EXPECT_EQ(expired[0].owner_uid, "rs-1");
  EXPECT_TRUE(book.release_expired(31 * kSecond).empty());
  EXPECT_TRUE(book.empty());
  // Room it held is room again.
  EXPECT_EQ(book.place(model, hold("rs-2", 8, 0, 60 * kSecond), 31 * kSecond), "");
}

TEST_F(Holds, ReleaseTakesOutTheOwnersHoldOnly) {
  ASSERT_EQ(book.place(model, hold("rs-1", 2), 10 * kSecond), "");
  ASSERT_EQ(book.place(model, hold("rs-2", 2, 1), 10 * kSecond), "");
  EXPECT_FALSE(book.release("rs-3"));
  const auto released = book.release("rs-1");
  ASSERT_TRUE(released);
  EXPECT_EQ(released->gpu, 0);
  EXPECT_FALSE(book.release("rs-1"));
  EXPECT_EQ(book.size(), 1u);
  EXPECT_EQ(book.held_against("n1", 0, "", 20 * kSecond), 0);
  EXPECT_EQ(book.held_against("n1", 1, "", 20 * kSecond), 2);
}

}  // namespace
}  // namespace gpushare::core
