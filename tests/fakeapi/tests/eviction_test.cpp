// pods/eviction and PodDisruptionBudgets: the answers and Status bodies of the real registry
// (201 and the pod deleted; 429 from a budget with no disruption allowed; 404; 409 on a UID
// precondition that does not match; 500 with two budgets), and Events.

#include <gtest/gtest.h>

#include "fakeapi/fake_apiserver.h"
#include "test_helpers.h"

namespace gpushare::testing {
namespace {

using namespace fakeapi_test;

constexpr const char* kEvictPath = "/api/v1/namespaces/ns/pods/p1/eviction";

Json eviction(const std::string& name, const std::string& uid = "") {
  Json body = {{"apiVersion", "policy/v1"},
               {"kind", "Eviction"},
               {"metadata", {{"name", name}, {"namespace", "ns"}}}};
  if (!uid.empty()) body["deleteOptions"] = {{"preconditions", {{"uid", uid}}}};
  return body;
}

Json budget(const std::string& name, int allowed, const Json& selector) {
  return {{"apiVersion", "policy/v1"},
          {"kind", "PodDisruptionBudget"},
          {"metadata", {{"name", name}, {"namespace", "ns"}, {"generation", 1}}},
          {"spec", {{"selector", selector}, {"minAvailable", 1}}},
          {"status",
           {{"observedGeneration", 1},
            {"disruptionsAllowed", allowed},
            {"currentHealthy", 2},
            {"desiredHealthy", 2},
            {"expectedPods", 2}}}};
}

class EvictionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Json pod = make_pod("ns", "p1", "n1", "Running");
    pod["metadata"]["labels"] = {{"app", "web"}};
    created = server.create(Resource::Pods, pod);
    uid = created["metadata"]["uid"];
  }
  FakeApiServer server;
  ApiClient client{server};
  Json created;
  std::string uid;
};

TEST_F(EvictionTest, WithoutABudgetThePodIsDeletedGracefully) {
  const Reply reply = client.post(kEvictPath, eviction("p1", uid));
  ASSERT_EQ(reply.status, 201) << reply.body;
  EXPECT_EQ(reply.json["kind"], "Status");
  EXPECT_EQ(reply.json["status"], "Success");
  EXPECT_EQ(reply.json["code"], 201);
  // Bound and running: a graceful deletion, as DELETE would make it.
  const auto pod = server.get(Resource::Pods, "ns", "p1");
  ASSERT_TRUE(pod);
  EXPECT_TRUE((*pod)["metadata"].contains("deletionTimestamp"));
  server.finalize_pod_deletion("ns", "p1");
  EXPECT_FALSE(server.get(Resource::Pods, "ns", "p1"));
  EXPECT_EQ(server.request_count(Verb::Evict, Resource::Pods), 1u);
}

TEST_F(EvictionTest, ABudgetWithNoDisruptionAllowedRefusesWith429) {
  server.create(Resource::PodDisruptionBudgets,
                budget("web", 0, {{"matchLabels", {{"app", "web"}}}}));
  const Reply reply = client.post(kEvictPath, eviction("p1", uid));
  ASSERT_EQ(reply.status, 429) << reply.body;
  EXPECT_EQ(reply.json["reason"], "TooManyRequests");
  EXPECT_EQ(reply.json["message"],
            "Cannot evict pod as it would violate the pod's disruption budget.");
  ASSERT_EQ(reply.json["details"]["causes"].size(), 1u);
  EXPECT_EQ(reply.json["details"]["causes"][0]["reason"], "DisruptionBudget");
  EXPECT_EQ(reply.json["details"]["causes"][0]["message"],
            "The disruption budget web needs 2 healthy pods and has 2 currently");
  const auto pod = server.get(Resource::Pods, "ns", "p1");
  ASSERT_TRUE(pod);
  EXPECT_FALSE((*pod)["metadata"].contains("deletionTimestamp"));
}

TEST_F(EvictionTest, AnAllowedDisruptionIsSpentAndThePodRecorded) {
  server.create(
      Resource::PodDisruptionBudgets,
      budget("web", 1,
             {{"matchExpressions", Json::array({{{"key", "app"},
                                                 {"operator", "In"},
                                                 {"values", Json::array({"web", "api"})}}})}}));
  ASSERT_EQ(client.post(kEvictPath, eviction("p1", uid)).status, 201);
  const auto pdb = server.get(Resource::PodDisruptionBudgets, "ns", "web");
  ASSERT_TRUE(pdb);
  EXPECT_EQ((*pdb)["status"]["disruptionsAllowed"], 0);
  EXPECT_TRUE((*pdb)["status"]["disruptedPods"].contains("p1"));
  // A second pod of the same budget is now refused.
  Json other = make_pod("ns", "p2", "n1", "Running");
  other["metadata"]["labels"] = {{"app", "api"}};
  server.create(Resource::Pods, other);
  EXPECT_EQ(client.post("/api/v1/namespaces/ns/pods/p2/eviction", eviction("p2")).status, 429);
}

TEST_F(EvictionTest, BudgetsThatDoNotSelectThePodAreIgnored) {
  server.create(Resource::PodDisruptionBudgets,
                budget("other", 0, {{"matchLabels", {{"app", "db"}}}}));
  server.create(Resource::PodDisruptionBudgets, budget("empty", 0, Json::object()));
  EXPECT_EQ(client.post(kEvictPath, eviction("p1", uid)).status, 201);
}

TEST_F(EvictionTest, TwoMatchingBudgetsAre500) {
  server.create(Resource::PodDisruptionBudgets,
                budget("a", 1, {{"matchLabels", {{"app", "web"}}}}));
  server.create(Resource::PodDisruptionBudgets,
                budget("b", 1, {{"matchLabels", {{"app", "web"}}}}));
  const Reply reply = client.post(kEvictPath, eviction("p1", uid));
  EXPECT_EQ(reply.status, 500) << reply.body;
  EXPECT_TRUE(server.get(Resource::Pods, "ns", "p1"));
}

TEST_F(EvictionTest, ABudgetNotYetObservedIs429) {
  Json pdb = budget("web", 1, {{"matchLabels", {{"app", "web"}}}});
  pdb["metadata"]["generation"] = 2;
  server.create(Resource::PodDisruptionBudgets, pdb);
  const Reply reply = client.post(kEvictPath, eviction("p1", uid));
  ASSERT_EQ(reply.status, 429) << reply.body;
  EXPECT_EQ(reply.json["details"]["causes"][0]["message"],
            "The disruption budget web is still being processed by the server.");
}

TEST_F(EvictionTest, AMissingPodIs404) {
  const Reply reply = client.post("/api/v1/namespaces/ns/pods/gone/eviction", eviction("gone"));
  EXPECT_EQ(reply.status, 404) << reply.body;
  EXPECT_EQ(reply.json["reason"], "NotFound");
}

TEST_F(EvictionTest, AUidPreconditionThatDoesNotMatchIs409AndDeletesNothing) {
  const Reply reply = client.post(kEvictPath, eviction("p1", "another-uid"));
  ASSERT_EQ(reply.status, 409) << reply.body;
  EXPECT_EQ(reply.json["reason"], "Conflict");
  const auto pod = server.get(Resource::Pods, "ns", "p1");
  ASSERT_TRUE(pod);
  EXPECT_FALSE((*pod)["metadata"].contains("deletionTimestamp"));
}

TEST_F(EvictionTest, ANameThatDoesNotMatchTheUrlIs400) {
  EXPECT_EQ(client.post(kEvictPath, eviction("p2")).status, 400);
}

TEST_F(EvictionTest, AFinishedPodIsDeletedWithoutTheBudget) {
  server.mutate(Resource::Pods, "ns", "p1", [](Json& pod) { pod["status"]["phase"] = "Failed"; });
  server.create(Resource::PodDisruptionBudgets,
                budget("web", 0, {{"matchLabels", {{"app", "web"}}}}));
  EXPECT_EQ(client.post(kEvictPath, eviction("p1", uid)).status, 201);
  EXPECT_FALSE(server.get(Resource::Pods, "ns", "p1"));
}

TEST_F(EvictionTest, EventsAndBudgetsAreServedOverHttp) {
  const Json event = {{"apiVersion", "v1"},
                      {"kind", "Event"},
                      {"metadata", {{"name", "p1.consolidation"}, {"namespace", "ns"}}},
                      {"involvedObject", {{"kind", "Pod"}, {"name", "p1"}, {"namespace", "ns"}}},
                      {"reason", "Consolidation"},
                      {"message", "moved"},
                      {"type", "Normal"}};
  const Reply created_event = client.post("/api/v1/namespaces/ns/events", event);
  ASSERT_EQ(created_event.status, 201) << created_event.body;
  EXPECT_EQ(server.list(Resource::Events, "ns").size(), 1u);
  server.create(Resource::PodDisruptionBudgets,
                budget("web", 1, {{"matchLabels", {{"app", "web"}}}}));
  const Reply list = client.get("/apis/policy/v1/poddisruptionbudgets");
  ASSERT_EQ(list.status, 200) << list.body;
  EXPECT_EQ(list.json["kind"], "PodDisruptionBudgetList");
  EXPECT_EQ(list.json["items"].size(), 1u);
}

}  // namespace
}  // namespace gpushare::testing
