// Accounting that hostile or stale cluster state must not break, over real HTTP: holders on a
// GPU index the node lacks are shown and counted (/inspect), absurd claims never free a GPU,
// and a victim listed twice is one victim (preempt).

#include <gtest/gtest.h>

#include "contract/extender_fixture.h"
#include "gpushare/inspect/view.h"

namespace gpushare::testing {
namespace {

Json stale_index_cluster() {
  return cluster_list({node_object("n1", 2, 32), pod_object("ok-0", "uid-ok-0", 4, "n1", 0),
                       pod_object("ok-1", "uid-ok-1", 12, "n1", 1),
                       pod_object("stale", "uid-stale", 6, "n1", 7),  // n1 has GPUs 0 and 1
                       pod_object("pending", "uid-pending", 11)});
}

const Json& node_named(const Json& inspect, const std::string& name) {
  for (const Json& node : inspect["nodes"]) {
    if (node["name"] == name) return node;
  }
  throw std::runtime_error("no node " + name);
}

TEST(InspectAccounting, HoldersOnAnIndexTheNodeLacksAreShownAndCounted) {
  ExtenderUnderTest extender(stale_index_cluster());
  const Json inspect = extender.inspect();
  const Json& n1 = node_named(inspect, "n1");
  ASSERT_TRUE(n1.contains("invalidIndexPods")) << n1.dump();
  ASSERT_EQ(n1["invalidIndexPods"].size(), 1u) << n1.dump();
  const Json& stale = n1["invalidIndexPods"][0];
  EXPECT_EQ(stale["name"], "stale");
  EXPECT_EQ(stale["uid"], "uid-stale");
  EXPECT_EQ(stale["gpuIndex"], 7);
  EXPECT_EQ(stale["usedGPU"], 6);
  // Every unit the node counts is listed under some pod.
  long long listed = 0;
  for (const Json& dev : n1["devs"]) {
    for (const Json& pod : dev["pods"]) listed += pod["usedGPU"].get<long long>();
  }
  for (const Json& pod : n1["unindexedPods"]) listed += pod["usedGPU"].get<long long>();
  for (const Json& pod : n1["invalidIndexPods"]) listed += pod["usedGPU"].get<long long>();
  EXPECT_EQ(n1["usedGPU"], 22);
  EXPECT_EQ(listed, 22);
  EXPECT_EQ(inspect["usedGPU"], 22);
  // The per-node view, and the kubectl plugin's reading of it, show the pod too.
  auto one = extender.client().Get("/gpushare-scheduler/inspect/n1");
  ASSERT_TRUE(one);
  EXPECT_EQ(Json::parse(one->body)["nodes"][0]["invalidIndexPods"][0]["name"], "stale");
  const inspect::ClusterView view = inspect::cluster_view(inspect);
  ASSERT_EQ(view.nodes.size(), 1u);
  EXPECT_EQ(view.nodes[0].unindexed_used(), 6);
  // Its memory is held against the node: GPU 0 has 12 free, but the node only 32 - 22 = 10.
  const auto [status, reply] = extender.post(
      "filter", Json{{"Pod", pod_object("pending", "uid-pending", 11)}, {"NodeNames", {"n1"}}});
  ASSERT_EQ(status, 200);
  EXPECT_TRUE(reply["NodeNames"].empty()) << reply.dump();
}

Json absurd_claim(const std::string& name, const std::string& uid, const std::string& claim) {
  Json pod = pod_object(name, uid, 4, "n1", 0);
  pod["metadata"]["annotations"]["ALIYUN_COM_GPU_MEM_POD"] = claim;
  return pod;
}

// Two pods annotated with int64's maximum on GPU 0 must not sum to a negative "used" that would
// offer GPU 0 to a 16-unit pod and oversubscribe it.
TEST(InspectAccounting, AbsurdClaimsNeverMakeAGpuLookFree) {
  ExtenderUnderTest extender(cluster_list(
      {node_object("n1", 2, 32), absurd_claim("huge-a", "uid-huge-a", "9223372036854775807"),
       absurd_claim("huge-b", "uid-huge-b", "9223372036854775807"),
       pod_object("pending", "uid-pending", 16)}));
  const Json inspect = extender.inspect();
  const Json& n1 = node_named(inspect, "n1");
  EXPECT_GE(n1["devs"][0]["usedGPU"].get<long long>(), 16) << n1.dump();
  EXPECT_GE(n1["usedGPU"].get<long long>(), 16);
  EXPECT_GE(inspect["usedGPU"].get<long long>(), 16);
  const auto [status, reply] = extender.post("bind", Json{{"PodName", "pending"},
                                                          {"PodNamespace", "default"},
                                                          {"PodUID", "uid-pending"},
                                                          {"Node", "n1"}});
  ASSERT_EQ(status, 200) << reply.dump();
  // Placed on the empty GPU 1, never on the "free" GPU 0.
  EXPECT_EQ(
      extender.cluster().bound_annotations().at("default/pending").at("ALIYUN_COM_GPU_MEM_IDX"),
      "1");
  const Json after = node_named(extender.inspect(), "n1");
  EXPECT_EQ(after["devs"][1]["usedGPU"], 16);
  EXPECT_GE(after["devs"][0]["usedGPU"].get<long long>(), 16);
}

Json preempt_cluster() {
  return cluster_list({node_object("n1", 2, 32), node_object("n2", 1, 16),
                       pod_object("held-0", "uid-held-0", 10, "n1", 0),
                       pod_object("held-1a", "uid-held-1a", 4, "n1", 1),
                       pod_object("held-1b", "uid-held-1b", 6, "n1", 1),
                       pod_object("held-n2", "uid-held-n2", 12, "n2", 0),
                       pod_object("nogpu", "uid-nogpu", 0, "n2")});
}

Json victims(std::initializer_list<const char*> uids) {
  Json pods = Json::array();
  for (const char* uid : uids) pods.push_back({{"UID", uid}});
  return {{"Pods", pods}, {"NumPDBViolations", 0}};
}

// held-1b (6 of GPU 1's 10) listed twice freed 12 in the trial: GPU 1 looked empty and n1 was
// offered for a 16-unit pod although held-1a would still be there.
TEST(PreemptAccounting, AVictimListedTwiceIsFreedOnce) {
  ExtenderUnderTest extender(preempt_cluster());
  const Json args = {{"Pod", pod_object("big", "uid-big", 16)},
                     {"NodeNameToMetaVictims", {{"n1", victims({"uid-held-1b", "uid-held-1b"})}}}};
  const auto [status, reply] = extender.post("preempt", args);
  ASSERT_EQ(status, 200);
  EXPECT_EQ(reply["NodeNameToMetaVictims"], Json::object()) << reply.dump();
}

TEST(PreemptAccounting, DuplicateVictimsAreAnsweredOnce) {
  ExtenderUnderTest extender(preempt_cluster());
  const Json args = {
      {"Pod", pod_object("big", "uid-big", 16)},
      {"NodeNameToMetaVictims",
       {{"n1", victims({"uid-held-1b", "uid-held-1a", "uid-held-1b", "uid-held-1a"})},
        {"n2", victims({"uid-nogpu", "uid-held-n2", "uid-nogpu", "uid-held-n2"})}}}};
  const auto [status, reply] = extender.post("preempt", args);
  ASSERT_EQ(status, 200);
  const Json& result = reply["NodeNameToMetaVictims"];
  EXPECT_EQ(result["n1"]["Pods"],
            Json::array({{{"UID", "uid-held-1b"}}, {{"UID", "uid-held-1a"}}}));
  EXPECT_EQ(result["n2"]["Pods"], Json::array({{{"UID", "uid-nogpu"}}, {{"UID", "uid-held-n2"}}}));
  // A pod without GPU demand gets kube-scheduler's victims back, each once.
  const Json cpu_only = {{"Pod", pod_object("cpu", "uid-cpu", 0)},
                         {"NodeNameToMetaVictims", {{"n2", victims({"uid-nogpu", "uid-nogpu"})}}}};
  const auto [cpu_status, cpu_reply] = extender.post("preempt", cpu_only);
  ASSERT_EQ(cpu_status, 200);
  EXPECT_EQ(cpu_reply["NodeNameToMetaVictims"]["n2"]["Pods"],
            Json::array({{{"UID", "uid-nogpu"}}}));
}

}  // namespace
}  // namespace gpushare::testing
