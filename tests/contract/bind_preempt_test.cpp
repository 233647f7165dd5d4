#include <gtest/gtest.h>

#include <sstream>

#include "contract/extender_fixture.h"
#include "support/log_capture.h"

namespace gpushare::testing {
namespace {

Json binding(const std::string& name, const std::string& uid, const std::string& node) {
  return {{"PodName", name}, {"PodNamespace", "default"}, {"PodUID", uid}, {"Node", node}};
}

Json small_cluster() {
  return cluster_list({node_object("n1", 2, 32), node_object("n2", 1, 16),
                       pod_object("pending", "uid-pending", 5),
                       pod_object("held-0", "uid-held-0", 10, "n1", 0),
                       pod_object("held-1a", "uid-held-1a", 4, "n1", 1),
                       pod_object("held-1b", "uid-held-1b", 6, "n1", 1),
                       pod_object("held-n2", "uid-held-n2", 12, "n2", 0),
                       pod_object("nogpu", "uid-nogpu", 0, "n2")});
}

TEST(BindContract, WritesTheDevicePluginAnnotationsAndAssumes) {
  ExtenderUnderTest extender(small_cluster());
  const auto [status, reply] = extender.post("bind", binding("pending", "uid-pending", "n1"));
  ASSERT_EQ(status, 200);
  EXPECT_EQ(reply, Json({{"Error", ""}}));
  const auto annotations = extender.cluster().bound_annotations().at("default/pending");
  EXPECT_EQ(annotations.size(), 5u);
  EXPECT_EQ(annotations.at("ALIYUN_COM_GPU_MEM_IDX"), "0");  // both GPUs have 6 free: lowest index
  EXPECT_EQ(annotations.at("ALIYUN_COM_GPU_MEM_POD"), "5");
  EXPECT_EQ(annotations.at("ALIYUN_COM_GPU_MEM_DEV"), "16");
  EXPECT_EQ(annotations.at("ALIYUN_COM_GPU_MEM_ASSIGNED"), "false");
  EXPECT_GT(std::stoll(annotations.at("ALIYUN_COM_GPU_MEM_ASSUME_TIME")),
            1'700'000'000'000'000'000);
  const Json inspect = extender.inspect();
  for (const auto& node : inspect["nodes"]) {
    if (node["name"] != "n1") continue;
    EXPECT_EQ(node["devs"][0]["usedGPU"], 15);
    EXPECT_EQ(node["usedGPU"], 25);
  }
  // Standalone binds are final, so nothing stays assumed.
  EXPECT_EQ(inspect["assumedPods"], 0);
  EXPECT_EQ(inspect["pods"], 5);
}

TEST(BindContract, FailuresLeaveTheModelUnchanged) {
  ExtenderUnderTest extender(small_cluster());
  const Json before = extender.inspect();
  struct Case {
    Json args;
    std::string expected;
  };
  const std::vector<Case> cases = {
      {binding("missing", "uid-x", "n1"), "pod default/missing not found"},
      {binding("pending", "uid-other", "n1"), "has UID uid-pending, bind was for UID uid-other"},
      {binding("pending", "uid-pending", "ghost"), "node ghost: node is not known"},
      {binding("held-0", "uid-held-0", "n1"), "already bound to node n1"},
  };
  for (const auto& c : cases) {
    const auto [status, reply] = extender.post("bind", c.args);
    EXPECT_EQ(status, 500) << c.args;
    EXPECT_NE(reply["Error"].get<std::string>().find(c.expected), std::string::npos) << reply;
  }
  // No room: 5 does not fit on n2 (4 free).
  const auto [status, reply] = extender.post("bind", binding("pending", "uid-pending", "n2"));
  EXPECT_EQ(status, 500);
  EXPECT_EQ(
      reply["Error"],
      "node n2: insufficient aliyun.com/gpu-mem on any single GPU: largest free 4 of requested 5");
  EXPECT_EQ(extender.inspect(), before);
}

TEST(BindContract, PodWithoutTheResourceBindsWithoutAnnotations) {
  ExtenderUnderTest extender(
      cluster_list({node_object("n1", 1, 8), pod_object("cpu-only", "u1", 0)}));
  ASSERT_EQ(extender.post("bind", binding("cpu-only", "u1", "n1")).first, 200);
  EXPECT_TRUE(extender.cluster().bound_annotations().at("default/cpu-only").empty());
  EXPECT_EQ(extender.inspect()["pods"], 0);
}

TEST(BindContract, LowerCaseBindingKeys) {
  ExtenderUnderTest extender(small_cluster());
  const Json args = {{"podName", "pending"},
                     {"podNamespace", "default"},
                     {"podUID", "uid-pending"},
                     {"node", "n1"}};
  EXPECT_EQ(extender.post("bind", args).first, 200);
}

TEST(PreemptContract, MinimalVictimsOnOneGpu) {
  ExtenderUnderTest extender(small_cluster());
  // A 12-unit pod on n1: GPU 0 has 6 free (evict held-0: 1 victim); GPU 1 has 6 free (evicting
  // held-1b frees 12: 1 victim, and 6 units < 10 evicted). kube-scheduler offers all three.
  const Json args = {{"Pod", pod_object("big", "uid-big", 12)},
                     {"NodeNameToMetaVictims",
                      {{"n1",
                        {{"Pods", Json::array({{{"UID", "uid-held-0"}},
                                               {{"UID", "uid-held-1a"}},
                                               {{"UID", "uid-held-1b"}}})},
                         {"NumPDBViolations", 0}}},
                       {"n2",
                        {{"Pods", Json::array({{{"UID", "uid-held-n2"}}, {{"UID", "uid-nogpu"}}})},
                         {"NumPDBViolations", 1}}},
                       {"ghost", {{"Pods", Json::array()}, {"NumPDBViolations", 0}}}}}};
  const auto [status, reply] = extender.post("preempt", args);
  ASSERT_EQ(status, 200);
  const Json& result = reply["NodeNameToMetaVictims"];
  ASSERT_TRUE(result.contains("n1"));
  EXPECT_EQ(result["n1"]["Pods"], Json::array({{{"UID", "uid-held-1b"}}}));
  EXPECT_EQ(result["n1"]["NumPDBViolations"], 0);
  // n2: evicting held-n2 frees the GPU; the pod without GPU memory stays a victim because
  // kube-scheduler chose it for other resources.
  ASSERT_TRUE(result.contains("n2"));
  EXPECT_EQ(result["n2"]["Pods"], Json::array({{{"UID", "uid-nogpu"}}, {{"UID", "uid-held-n2"}}}));
  EXPECT_EQ(result["n2"]["NumPDBViolations"], 1);
  EXPECT_FALSE(result.contains("ghost"));
}

// 76 163 failed binds in 45 s wrote 86 946 warning lines: anyone reaching /bind could fill the
// log pipeline. The lines are throttled; every failure is still counted.
TEST(BindContract, FailedBindsAreLoggedThrottledAndAllCounted) {
  ExtenderUnderTest extender(small_cluster());
  LogCapture log;
  constexpr int kFailures = 60;
  for (int i = 0; i < kFailures; ++i) {
    EXPECT_EQ(extender.post("bind", binding("no-such-pod", "uid-x", "n1")).first, 500);
  }
  std::size_t lines = 0;
  std::istringstream text(log.text());
  for (std::string line; std::getline(text, line);) {
    if (line.find("bind default/no-such-pod to n1 failed") != std::string::npos) ++lines;
  }
  EXPECT_GE(lines, 1u);
  EXPECT_LE(lines, 20u);
  auto scrape = extender.client().Get("/metrics");
  ASSERT_TRUE(scrape);
  EXPECT_NE(scrape->body.find("gpushare_binds_total{outcome=\"pod_not_found\"} " +
                              std::to_string(kFailures)),
            std::string::npos);
}

// Go's decoder refuses a number beyond the int64 field; a cast echoed 2^64-1 as -1.
TEST(PreemptContract, AnOutOfRangeNumPDBViolationsIsRefused) {
  ExtenderUnderTest extender(small_cluster());
  for (const char* count : {"18446744073709551615", "9223372036854775808"}) {
    const std::string args =
        R"({"Pod":)" + pod_object("big", "uid-big", 12).dump() +
        R"(,"NodeNameToMetaVictims":{"n1":{"Pods":[{"UID":"uid-held-0"}],"NumPDBViolations":)" +
        count + "}}}";
    const auto [status, reply] = extender.post("preempt", args);
    EXPECT_EQ(status, 400) << count;
    EXPECT_NE(reply.value("Error", "").find("NumPDBViolations"), std::string::npos) << count;
  }
  const auto [status, reply] = extender.post(
      "preempt", R"({"Pod":)" + pod_object("big", "uid-big", 12).dump() +
                     R"(,"NodeNameToMetaVictims":{"n1":{"Pods":[{"UID":"uid-held-1b"}],)"
                     R"("NumPDBViolations":9223372036854775807}}})");
  ASSERT_EQ(status, 200);
  EXPECT_EQ(reply["NodeNameToMetaVictims"]["n1"]["NumPDBViolations"], 9223372036854775807LL);
}

TEST(PreemptContract, NodesThatCannotFitEvenAfterEvictionAreDropped) {
  ExtenderUnderTest extender(small_cluster());
  // 16 on n1: only GPU 1 could be emptied, but only held-1a is offered (frees 4 -> 10 free).
  const Json args = {
      {"Pod", pod_object("big", "uid-big", 16)},
      {"NodeNameToMetaVictims",
       {{"n1", {{"Pods", Json::array({{{"UID", "uid-held-1a"}}})}, {"NumPDBViolations", 0}}}}}};
  const auto [status, reply] = extender.post("preempt", args);
  ASSERT_EQ(status, 200);
  EXPECT_EQ(reply["NodeNameToMetaVictims"], Json::object());
}

TEST(PreemptContract, FullVictimPodsWhenNotNodeCacheCapable) {
  ExtenderUnderTest extender(small_cluster());
  const Json args = {{"Pod", pod_object("big", "uid-big", 12)},
                     {"NodeNameToVictims",
                      {{"n1",
                        {{"Pods", Json::array({pod_object("held-0", "uid-held-0", 10, "n1", 0)})},
                         {"NumPDBViolations", 0}}}}}};
  const auto [status, reply] = extender.post("preempt", args);
  ASSERT_EQ(status, 200);
  EXPECT_EQ(reply["NodeNameToMetaVictims"]["n1"]["Pods"], Json::array({{{"UID", "uid-held-0"}}}));
}

}  // namespace
}  // namespace gpushare::testing
