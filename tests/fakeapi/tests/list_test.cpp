// List semantics: paging, continue tokens, resourceVersion rules, selectors, list shape.

#include <gtest/gtest.h>

#include "fakeapi/fake_apiserver.h"
#include "test_helpers.h"

namespace gpushare::testing {
namespace {

using namespace fakeapi_test;

std::vector<std::string> item_names(const Json& list) {
  std::vector<std::string> names;
  for (const Json& item : list["items"])
    names.push_back(item["metadata"]["name"].get<std::string>());
  return names;
}

std::string query_escape(std::string_view text) {
  std::string out;
  for (unsigned char c : text) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out += static_cast<char>(c);
    } else {
      char hex[4];
      std::snprintf(hex, sizeof hex, "%%%02X", c);
      out += hex;
    }
  }
  return out;
}

class ListTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* name : {"p1", "p2", "p3", "p4", "p5"})
      server.create(Resource::Pods, make_pod("ns", name));
  }
  FakeApiServer server;
  ApiClient client{server};
};

TEST_F(ListTest, ListHasKindApiVersionMetadataAndBareItems) {
  server.create(Resource::Pods, make_pod("other", "q1"));
  const Reply all = client.get("/api/v1/pods");
  ASSERT_EQ(all.status, 200);
  EXPECT_EQ(all.json["kind"], "PodList");
  EXPECT_EQ(all.json["apiVersion"], "v1");
  EXPECT_EQ(all.json["metadata"]["resourceVersion"], server.resource_version());
  EXPECT_FALSE(all.json["metadata"].contains("continue"));
  EXPECT_EQ(item_names(all.json), (std::vector<std::string>{"p1", "p2", "p3", "p4", "p5", "q1"}));
  EXPECT_FALSE(all.json["items"][0].contains("kind"));
  EXPECT_FALSE(all.json["items"][0].contains("apiVersion"));

  EXPECT_EQ(item_names(client.get("/api/v1/namespaces/other/pods").json),
            std::vector<std::string>{"q1"});

  server.create(Resource::ConfigMaps, make_configmap("kube-system", "unhealthy-gpu-n1"));
  server.create(Resource::Leases, make_lease("kube-system", "gpushare"));
  const Reply configmaps = client.get("/api/v1/configmaps");
  EXPECT_EQ(configmaps.json["kind"], "ConfigMapList");
  EXPECT_EQ(item_names(configmaps.json), std::vector<std::string>{"unhealthy-gpu-n1"});
  const Reply leases = client.get("/apis/coordination.k8s.io/v1/namespaces/kube-system/leases");
  EXPECT_EQ(leases.json["kind"], "LeaseList");
  EXPECT_EQ(leases.json["apiVersion"], "coordination.k8s.io/v1");
  EXPECT_EQ(item_names(leases.json), std::vector<std::string>{"gpushare"});
}

TEST_F(ListTest, LaterPagesKeepTheFirstPagesResourceVersion) {
  const Reply page1 = client.get("/api/v1/namespaces/ns/pods?limit=2");
  ASSERT_EQ(page1.status, 200);
  EXPECT_EQ(item_names(page1.json), (std::vector<std::string>{"p1", "p2"}));
  const std::string rv1 = page1.json["metadata"]["resourceVersion"];
  const std::string token1 = page1.json["metadata"]["continue"];
  EXPECT_EQ(page1.json["metadata"]["remainingItemCount"], 3);

  // Changes after page 1 must not show in later pages.
  server.mutate(Resource::Pods, "ns", "p3",
                [](Json& pod) { pod["metadata"]["labels"]["changed"] = "yes"; });
  server.create(Resource::Pods, make_pod("ns", "p6"));
  server.remove(Resource::Pods, "ns", "p5");

  const Reply page2 =
      client.get("/api/v1/namespaces/ns/pods?limit=2&continue=" + query_escape(token1));
  ASSERT_EQ(page2.status, 200) << page2.body;
  EXPECT_EQ(item_names(page2.json), (std::vector<std::string>{"p3", "p4"}));
  EXPECT_EQ(page2.json["metadata"]["resourceVersion"], rv1);
  EXPECT_FALSE(page2.json["items"][0]["metadata"].contains("labels"));

  const Reply page3 =
      client.get("/api/v1/namespaces/ns/pods?limit=2&continue=" +
                 query_escape(page2.json["metadata"]["continue"].get<std::string>()));
  EXPECT_EQ(item_names(page3.json), std::vector<std::string>{"p5"});
  EXPECT_EQ(page3.json["metadata"]["resourceVersion"], rv1);
  EXPECT_FALSE(page3.json["metadata"].contains("continue"));

  // A fresh list sees the new state.
  EXPECT_EQ(item_names(client.get("/api/v1/namespaces/ns/pods").json),
            (std::vector<std::string>{"p1", "p2", "p3", "p4", "p6"}));
}

TEST_F(ListTest, ContinueWithResourceVersionIsRejected) {
  const std::string token = client.get("/api/v1/pods?limit=1").json["metadata"]["continue"];
  const Reply both =
      client.get("/api/v1/pods?limit=1&resourceVersion=" + server.resource_version() +
                 "&continue=" + query_escape(token));
  EXPECT_EQ(both.status, 400);
  EXPECT_EQ(both.json["reason"], "BadRequest");
  EXPECT_EQ(both.json["message"], "specifying resource version is not allowed when using continue");
  // "0" counts as unset with continue.
  EXPECT_EQ(
      client.get("/api/v1/pods?limit=1&resourceVersion=0&continue=" + query_escape(token)).status,
      200);
  EXPECT_EQ(client.get("/api/v1/pods?limit=1&continue=not-a-token").status, 400);
}

TEST_F(ListTest, ExpiredContinueTokensGet410) {
  const std::string token = client.get("/api/v1/pods?limit=2").json["metadata"]["continue"];
  server.expire_continue_tokens();
  const Reply expired = client.get("/api/v1/pods?limit=2&continue=" + query_escape(token));
  EXPECT_EQ(expired.status, 410);
  EXPECT_EQ(expired.json["reason"], "Expired");
  EXPECT_EQ(expired.json["kind"], "Status");
  // Like etcd, the Status offers a token that continues inconsistently.
  ASSERT_TRUE(expired.json["metadata"].contains("continue"));
  const Reply inconsistent =
      client.get("/api/v1/pods?limit=2&continue=" +
                 query_escape(expired.json["metadata"]["continue"].get<std::string>()));
  EXPECT_EQ(item_names(inconsistent.json), (std::vector<std::string>{"p3", "p4"}));

  // Compaction past page 1's RV expires tokens too.
  const std::string fresh = client.get("/api/v1/pods?limit=2").json["metadata"]["continue"];
  server.create(Resource::Pods, make_pod("ns", "p9"));
  server.compact_to_current();
  EXPECT_EQ(client.get("/api/v1/pods?limit=2&continue=" + query_escape(fresh)).status, 410);
}

TEST_F(ListTest, ResourceVersionRulesFollowTheTable) {
  const std::string rv_with_p5 = server.resource_version();
  server.remove(Resource::Pods, "ns", "p5");
  const std::string current = server.resource_version();

  // "0": any state, limit ignored (served from the watch cache).
  const Reply any = client.get("/api/v1/pods?resourceVersion=0&limit=2");
  EXPECT_EQ(item_names(any.json).size(), 4u);
  EXPECT_FALSE(any.json["metadata"].contains("continue"));

  // "n" with limit: exactly n.
  const Reply exact = client.get("/api/v1/pods?resourceVersion=" + rv_with_p5 + "&limit=10");
  EXPECT_EQ(item_names(exact.json).size(), 5u);
  EXPECT_EQ(exact.json["metadata"]["resourceVersion"], rv_with_p5);
  // resourceVersionMatch=Exact without limit: exactly n too.
  EXPECT_EQ(
      item_names(
          client.get("/api/v1/pods?resourceVersionMatch=Exact&resourceVersion=" + rv_with_p5).json)
          .size(),
      5u);
  // "n" without limit: not older than n, i.e. the current state.
  const Reply not_older = client.get("/api/v1/pods?resourceVersion=" + rv_with_p5);
  EXPECT_EQ(item_names(not_older.json).size(), 4u);
  EXPECT_EQ(not_older.json["metadata"]["resourceVersion"], current);

  // Exact n after compaction: 410 Expired as an HTTP status.
  server.compact_to_current();
  const Reply compacted = client.get("/api/v1/pods?resourceVersion=" + rv_with_p5 + "&limit=10");
  EXPECT_EQ(compacted.status, 410);
  EXPECT_EQ(compacted.json["reason"], "Expired");
  EXPECT_EQ(compacted.json["message"], "The resourceVersion for the provided list is too old.");

  // Ahead of the server: 504 Timeout, ResourceVersionTooLarge.
  const std::uint64_t future = std::stoull(current) + 10;
  const Reply ahead = client.get("/api/v1/pods?resourceVersion=" + std::to_string(future));
  EXPECT_EQ(ahead.status, 504);
  EXPECT_EQ(ahead.json["reason"], "Timeout");
  EXPECT_EQ(ahead.json["details"]["causes"][0]["reason"], "ResourceVersionTooLarge");
  EXPECT_EQ(ahead.json["details"]["retryAfterSeconds"], 1);
  EXPECT_EQ(ahead.json["message"],
            "Too large resource version: " + std::to_string(future) + ", current: " + current);

  EXPECT_EQ(client.get("/api/v1/pods?resourceVersion=abc").status, 400);
}

TEST_F(ListTest, InvalidResourceVersionMatchCombinationsAre422) {
  const Reply no_rv = client.get("/api/v1/pods?resourceVersionMatch=NotOlderThan");
  EXPECT_EQ(no_rv.status, 422);
  EXPECT_EQ(no_rv.json["reason"], "Invalid");
  EXPECT_EQ(no_rv.json["details"]["kind"], "ListOptions");
  EXPECT_EQ(no_rv.json["details"]["group"], "meta.k8s.io");
  EXPECT_EQ(no_rv.json["details"]["causes"][0]["field"], "resourceVersionMatch");
  EXPECT_EQ(no_rv.json["message"],
            "ListOptions.meta.k8s.io \"\" is invalid: resourceVersionMatch: Forbidden: "
            "resourceVersionMatch is forbidden unless resourceVersion is provided");
  EXPECT_EQ(client.get("/api/v1/pods?resourceVersionMatch=Exact&resourceVersion=0").status, 422);
  EXPECT_EQ(client.get("/api/v1/pods?resourceVersionMatch=Exact").status, 422);
  EXPECT_EQ(client.get("/api/v1/pods?resourceVersionMatch=Sometimes&resourceVersion=1").status,
            422);
  EXPECT_EQ(client.get("/api/v1/pods?resourceVersionMatch=NotOlderThan&resourceVersion=0").status,
            200);
}

TEST(ListSelectors, PodFieldSelectors) {
  FakeApiServer server;
  server.create(Resource::Pods, make_pod("a", "bound-running", "n1", "Running"));
  server.create(Resource::Pods, make_pod("a", "bound-done", "n1", "Succeeded"));
  server.create(Resource::Pods, make_pod("b", "other-node", "n2", "Pending"));
  server.create(Resource::Pods, make_pod("b", "unbound", "", "Pending"));
  ApiClient client(server);
  auto names = [&](std::string_view selector) {
    const Reply reply = client.get("/api/v1/pods?fieldSelector=" + query_escape(selector));
    EXPECT_EQ(reply.status, 200) << selector << ": " << reply.body;
    return item_names(reply.json);
  };
  using Names = std::vector<std::string>;
  EXPECT_EQ(names("spec.nodeName=n1"), (Names{"bound-done", "bound-running"}));
  EXPECT_EQ(names("spec.nodeName==n2"), Names{"other-node"});
  EXPECT_EQ(names("spec.nodeName="), Names{"unbound"});
  EXPECT_EQ(names("status.phase!=Succeeded,status.phase!=Failed"),
            (Names{"bound-running", "other-node", "unbound"}));
  EXPECT_EQ(names("spec.nodeName=n1,status.phase=Running"), Names{"bound-running"});
  EXPECT_EQ(names("metadata.name=unbound"), Names{"unbound"});
  EXPECT_EQ(names("metadata.namespace=a"), (Names{"bound-done", "bound-running"}));

  const Reply unsupported = client.get("/api/v1/pods?fieldSelector=spec.foo%3Dbar");
  EXPECT_EQ(unsupported.status, 400);
  EXPECT_EQ(unsupported.json["message"], "field label not supported: spec.foo");
  EXPECT_EQ(client.get("/api/v1/pods?fieldSelector=justaword").status, 400);
}

TEST(ListSelectors, NodeFieldSelectorsAndLabelSelectors) {
  FakeApiServer server;
  Json cordoned = make_node("n1");
  cordoned["spec"]["unschedulable"] = true;
  cordoned["metadata"]["labels"] = {{"gpu", "v100"}};
  server.create(Resource::Nodes, cordoned);
  Json plain = make_node("n2");
  plain["metadata"]["labels"] = {{"gpu", "t4"}, {"zone", "z1"}};
  server.create(Resource::Nodes, plain);
  ApiClient client(server);
  using Names = std::vector<std::string>;
  EXPECT_EQ(item_names(client.get("/api/v1/nodes?fieldSelector=spec.unschedulable%3Dtrue").json),
            Names{"n1"});
  EXPECT_EQ(item_names(client.get("/api/v1/nodes?fieldSelector=spec.unschedulable%3Dfalse").json),
            Names{"n2"});
  EXPECT_EQ(client.get("/api/v1/nodes?fieldSelector=status.phase%3DRunning").status, 400);
  EXPECT_EQ(item_names(client.get("/api/v1/nodes?labelSelector=gpu%3Dt4").json), Names{"n2"});
  EXPECT_EQ(
      item_names(
          client.get("/api/v1/nodes?labelSelector=" + query_escape("gpu in (v100,a100)")).json),
      Names{"n1"});
  EXPECT_EQ(item_names(client.get("/api/v1/nodes?labelSelector=" + query_escape("!zone")).json),
            Names{"n1"});
  EXPECT_EQ(item_names(client.get("/api/v1/nodes?labelSelector=" + query_escape("gpu,zone")).json),
            Names{"n2"});
}

TEST(ListSelectors, PagingWithASelectorReturnsEveryMatchOnce) {
  FakeApiServer server;
  for (int i = 0; i < 7; ++i) {
    server.create(Resource::Pods,
                  make_pod("ns", "p" + std::to_string(i), i % 2 == 0 ? "n1" : "n2"));
  }
  ApiClient client(server);
  std::vector<std::string> seen;
  std::string token;
  for (int page = 0; page < 10; ++page) {
    std::string path = "/api/v1/pods?limit=2&fieldSelector=spec.nodeName%3Dn1";
    if (!token.empty()) path += "&continue=" + query_escape(token);
    const Reply reply = client.get(path);
    ASSERT_EQ(reply.status, 200);
    EXPECT_LE(reply.json["items"].size(), 2u);
    for (const std::string& name : item_names(reply.json)) seen.push_back(name);
    token = reply.json["metadata"].value("continue", "");
    if (token.empty()) break;
  }
  EXPECT_EQ(seen, (std::vector<std::string>{"p0", "p2", "p4", "p6"}));
}

}  // namespace
}  // namespace gpushare::testing
