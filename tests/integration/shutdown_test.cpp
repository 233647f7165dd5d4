// Graceful shutdown (what main does on SIGTERM): stop accepting, finish the binds in flight and
// send their replies, then give the lease up, and only then.

#include <gtest/gtest.h>

#include <atomic>
#include <future>

#include "integration/live_fixture.h"

namespace gpushare::testing {
namespace {

std::string uid_of(FakeApiServer& fake, const std::string& name) {
  return fake.get(Resource::Pods, "default", name)->at("metadata").at("uid");
}

std::uint64_t rv_of(const Json& object) {
  return std::stoull(object["metadata"]["resourceVersion"].get<std::string>());
}

class Shutdown : public ::testing::Test {
 protected:
  void SetUp() override {
    fake.create(Resource::Nodes, gpu_node("n1", 2, 32));
    fake.create(Resource::Pods, gpu_pod("p", 6));
    fake.create(Resource::Pods, gpu_pod("q", 6));
  }
  // Starts a bind of `name` that the API server answers only after `delay`, and waits until the
  // extender is inside it.
  std::future<std::pair<int, Json>> slow_bind(LiveExtender& extender, const std::string& name,
                                              std::chrono::milliseconds delay) {
    fake.inject_fault(binding_fault(0, delay));  // no error: just slow, then applied
    const std::string uid = uid_of(fake, name);
    auto reply = std::async(std::launch::async, [&extender, name, uid] {
      return extender.post(
          "bind",
          Json{{"PodName", name}, {"PodNamespace", "default"}, {"PodUID", uid}, {"Node", "n1"}});
    });
    EXPECT_TRUE(eventually([&] { return extender.server().binds_in_flight() == 1; }));
    EXPECT_TRUE(fake.wait_for_request_count(Verb::Bind, Resource::Pods, 1, 10s));
    return reply;
  }
  FakeApiServer fake;
};

TEST_F(Shutdown, ABindInFlightFinishesAndItsReplyIsSent) {
  LiveExtender extender(fake);
  ASSERT_TRUE(extender.wait_for_sync());
  auto reply = slow_bind(extender, "p", 1500ms);
  // stop() returns only once the bind is done; by then the binding has landed.
  EXPECT_TRUE(extender.server().stop());
  EXPECT_EQ(extender.server().binds_in_flight(), 0);
  EXPECT_EQ(fake.get(Resource::Pods, "default", "p")->at("spec").value("nodeName", ""), "n1");
  ASSERT_EQ(reply.wait_for(10s), std::future_status::ready);
  const auto [code, body] = reply.get();
  EXPECT_EQ(code, 200);
  EXPECT_EQ(body["Error"], "");
  // No longer accepting: a new connection is refused.
  EXPECT_EQ(extender.bind("q", uid_of(fake, "q"), "n1"), -1);
  EXPECT_FALSE(fake.get(Resource::Pods, "default", "q")->at("spec").contains("nodeName"));
}

TEST_F(Shutdown, TheWaitIsBounded) {
  LiveExtender extender(fake, live_options([](LiveOptions& o) {
                          o.shutdown_grace = 200ms;
                          o.bind_timeout = 5s;
                        }));
  ASSERT_TRUE(extender.wait_for_sync());
  auto reply = slow_bind(extender, "p", 2000ms);
  // The grace period runs out first: stop() says so rather than waiting for ever.
  EXPECT_FALSE(extender.server().stop());
  EXPECT_EQ(extender.server().binds_in_flight(), 1);
  // The bind still completes and is answered while the server winds down.
  ASSERT_EQ(reply.wait_for(10s), std::future_status::ready);
  EXPECT_EQ(reply.get().first, 200);
}

TEST_F(Shutdown, TheLeaderReleasesTheLeaseOnlyAfterItsBindsLanded) {
  const apiclient::LeaderElectionConfig election = test_election("replica-a");
  LiveExtender extender(fake, live_options([&](LiveOptions& o) { o.leader_election = election; }));
  ASSERT_TRUE(extender.wait_for_sync());
  ASSERT_TRUE(eventually([&] { return extender.readyz() == 200; }));
  auto reply = slow_bind(extender, "p", 500ms);  // well within the lease
  EXPECT_TRUE(extender.shutdown());
  ASSERT_EQ(reply.wait_for(10s), std::future_status::ready);
  EXPECT_EQ(reply.get().first, 200);
  // Released (holder ""), and after the binding: its resourceVersion is newer.
  const Json lease = *fake.get(Resource::Leases, "kube-system", "gpushare-extender");
  EXPECT_EQ(lease["spec"]["holderIdentity"], "");
  const Json pod = *fake.get(Resource::Pods, "default", "p");
  EXPECT_EQ(pod["spec"]["nodeName"], "n1");
  EXPECT_GT(rv_of(lease), rv_of(pod));
  EXPECT_EQ(extender.gate()->elector().counters().releases, 1u);
}

TEST_F(Shutdown, ALeaderWhoseBindsDidNotFinishLeavesTheLeaseToExpire) {
  const apiclient::LeaderElectionConfig election = test_election("replica-a");
  LiveExtender extender(fake, live_options([&](LiveOptions& o) {
                          o.leader_election = election;
                          o.shutdown_grace = 100ms;
                        }));
  ASSERT_TRUE(extender.wait_for_sync());
  ASSERT_TRUE(eventually([&] { return extender.readyz() == 200; }));
  auto reply = slow_bind(extender, "p", 500ms);
  EXPECT_FALSE(extender.shutdown());
  ASSERT_EQ(reply.wait_for(10s), std::future_status::ready);
  // A follower could otherwise take over before that bind lands and not see it.
  EXPECT_EQ(
      fake.get(Resource::Leases, "kube-system", "gpushare-extender")->at("spec")["holderIdentity"],
      "replica-a");
  EXPECT_EQ(extender.gate()->elector().counters().releases, 0u);
}

}  // namespace
}  // namespace gpushare::testing
