// Contract tests: kube-scheduler-shaped JSON over real HTTP, every reply field checked.

#include <gtest/gtest.h>

#include "contract/extender_fixture.h"

namespace gpushare::testing {
namespace {

Json sample_cluster() {
  Json sick = {{"apiVersion", "v1"},
               {"kind", "ConfigMap"},
               {"metadata", {{"name", "unhealthy-gpu-n3"}, {"namespace", "kube-system"}}},
               {"data", {{"gpus", "3"}}}};
  return cluster_list({node_object("n1", 4, 64), node_object("n2", 2, 64, "V100"),
                       node_object("n3", 8, 128), node_object("cpu", -1, -1),
                       node_object("bad-zero", 0, 32), node_object("bad-div", 2, 33), sick,
                       pod_object("a", "uid-a", 10, "n1", 0), pod_object("b", "uid-b", 14, "n1", 1),
                       pod_object("c", "uid-c", 24, "n2", 0)});
}

const std::vector<std::string> kAllNodes{"n1", "n2", "n3", "cpu", "bad-zero", "bad-div", "ghost"};

class FilterContract : public ::testing::Test {
 protected:
  ExtenderUnderTest extender{sample_cluster()};
};

TEST_F(FilterContract, NodeCacheCapableGoFieldNames) {
  const Json args = {
      {"Pod", pod_object("p", "uid-p", 6)}, {"Nodes", nullptr}, {"NodeNames", kAllNodes}};
  const auto [status, reply] = extender.post("filter", args);
  ASSERT_EQ(status, 200);
  EXPECT_EQ(reply["NodeNames"], Json({"n1", "n2", "n3"}));
  EXPECT_TRUE(reply["Nodes"].is_null());
  EXPECT_EQ(reply["Error"], "");
  const Json& unresolvable = reply["FailedAndUnresolvableNodes"];
  ASSERT_EQ(unresolvable.size(), 4u);
  // kube-scheduler <= 1.20 reads only FailedNodes: every unresolvable node is there too.
  EXPECT_EQ(reply["FailedNodes"], unresolvable);
  EXPECT_EQ(unresolvable["cpu"], "node has no GPUs advertising aliyun.com/gpu-mem");
  EXPECT_EQ(unresolvable["bad-zero"],
            "node's GPU resources are unusable: node advertises 32 aliyun.com/gpu-mem but "
            "aliyun.com/gpu-count is 0");
  EXPECT_EQ(unresolvable["bad-div"],
            "node's GPU resources are unusable: aliyun.com/gpu-mem 33 is not divisible by "
            "aliyun.com/gpu-count 2");
  EXPECT_NE(unresolvable["ghost"].get<std::string>().find("not known"), std::string::npos);
}

TEST_F(FilterContract, LowerCaseKeysOfTheOldTaggedTypes) {
  const Json args = {
      {"pod", pod_object("p", "uid-p", 6)}, {"nodes", nullptr}, {"nodenames", {"n1", "n2"}}};
  const auto [status, reply] = extender.post("filter", args);
  ASSERT_EQ(status, 200);
  EXPECT_EQ(reply["NodeNames"], Json({"n1", "n2"}));
}

TEST_F(FilterContract, InsufficientIsResolvableTooLargeIsNot) {
  // 20 fits only on n2's empty 32-unit GPU: n1 and n3 have 16-unit GPUs.
  Json args = {
      {"Pod", pod_object("p", "uid-p", 20)}, {"Nodes", nullptr}, {"NodeNames", {"n1", "n2", "n3"}}};
  auto [status, reply] = extender.post("filter", args);
  ASSERT_EQ(status, 200);
  EXPECT_EQ(reply["NodeNames"], Json({"n2"}));
  EXPECT_EQ(reply["FailedAndUnresolvableNodes"]["n1"],
            "requested 20 aliyun.com/gpu-mem exceeds one GPU's capacity of 16 on this node");
  // 12 on n1: GPUs have 6, 2, 16, 16 free -> fits. 9 on a full n1 would not.
  args["Pod"] = pod_object("p", "uid-p", 12);
  args["NodeNames"] = {"n1"};
  std::tie(status, reply) = extender.post("filter", args);
  EXPECT_EQ(reply["NodeNames"], Json({"n1"}));
}

TEST_F(FilterContract, RejectionWithNumbersAfterBinds) {
  // Fill n2's empty GPU, then ask for more than is left on either GPU.
  ASSERT_EQ(extender
                .post("bind", Json{{"PodName", "fill"},
                                   {"PodNamespace", "default"},
                                   {"PodUID", ""},
                                   {"Node", "n2"}})
                .first,
            500);  // unknown pod
  extender.post("filter", Json{{"Pod", pod_object("fill", "uid-fill", 30)}, {"NodeNames", {"n2"}}});
  ASSERT_EQ(extender
                .post("bind", Json{{"PodName", "fill"},
                                   {"PodNamespace", "default"},
                                   {"PodUID", "uid-fill"},
                                   {"Node", "n2"}})
                .first,
            200);
  const auto [status, reply] =
      extender.post("filter", Json{{"Pod", pod_object("p", "uid-p", 9)}, {"NodeNames", {"n2"}}});
  ASSERT_EQ(status, 200);
  EXPECT_EQ(reply["NodeNames"], Json::array());
  EXPECT_EQ(reply["FailedNodes"]["n2"],
            "insufficient aliyun.com/gpu-mem on any single GPU: largest free 8 of requested 9");
}

TEST_F(FilterContract, FullNodeObjectsWhenNotNodeCacheCapable) {
  Json items = Json::array();
  for (const char* name : {"n1", "n2", "cpu"}) items.push_back(node_object(name, 1, 1));
  const Json args = {{"Pod", pod_object("p", "uid-p", 6)},
                     {"Nodes", {{"apiVersion", "v1"}, {"kind", "NodeList"}, {"items", items}}},
                     {"NodeNames", nullptr}};
  const auto [status, reply] = extender.post("filter", args);
  ASSERT_EQ(status, 200);
  ASSERT_TRUE(reply["Nodes"].is_object());
  ASSERT_EQ(reply["Nodes"]["items"].size(), 2u);
  // Survivors are echoed back as the objects that were sent (the model decides, not the object).
  EXPECT_EQ(reply["Nodes"]["items"][0], items[0]);
  EXPECT_EQ(reply["Nodes"]["items"][1], items[1]);
  EXPECT_EQ(reply["NodeNames"], Json({"n1", "n2"}));
  EXPECT_TRUE(reply["FailedAndUnresolvableNodes"].contains("cpu"));
}

TEST_F(FilterContract, PodsWithoutTheResourcePassEverywhere) {
  const Json args = {{"Pod", pod_object("plain", "uid-plain", 0)}, {"NodeNames", kAllNodes}};
  const auto [status, reply] = extender.post("filter", args);
  ASSERT_EQ(status, 200);
  EXPECT_EQ(reply["NodeNames"], Json(kAllNodes));
  EXPECT_TRUE(reply["FailedNodes"].empty());
  EXPECT_TRUE(reply["FailedAndUnresolvableNodes"].empty());
}

TEST_F(FilterContract, UnhealthyGpuIsNeverOffered) {
  // Fill n3 so that only the unhealthy GPU 3 would be free: 7 binds of 16.
  for (int i = 0; i < 7; ++i) {
    const std::string name = "big-" + std::to_string(i);
    extender.post("filter",
                  Json{{"Pod", pod_object(name, "uid-" + name, 16)}, {"NodeNames", {"n3"}}});
    ASSERT_EQ(extender
                  .post("bind", Json{{"PodName", name},
                                     {"PodNamespace", "default"},
                                     {"PodUID", "uid-" + name},
                                     {"Node", "n3"}})
                  .first,
              200);
  }
  const auto [status, reply] =
      extender.post("filter", Json{{"Pod", pod_object("p", "uid-p", 1)}, {"NodeNames", {"n3"}}});
  EXPECT_EQ(reply["NodeNames"], Json::array());
  const Json node = extender.inspect()["nodes"];
  for (const auto& n : node) {
    if (n["name"] != "n3") continue;
    EXPECT_EQ(n["devs"][3]["usedGPU"], 0);
    EXPECT_EQ(n["devs"][3]["healthy"], false);
  }
}

TEST_F(FilterContract, PrioritizeScalesBestToTenInfeasibleZero) {
  const Json args = {{"Pod", pod_object("p", "uid-p", 6)},
                     {"Nodes", nullptr},
                     {"NodeNames", {"n1", "n2", "n3", "cpu", "ghost"}}};
  const auto [status, reply] = extender.post("prioritize", args);
  ASSERT_EQ(status, 200);
  ASSERT_TRUE(reply.is_array());
  ASSERT_EQ(reply.size(), 5u);
  std::map<std::string, int> scores;
  for (const auto& entry : reply) {
    ASSERT_EQ(entry.size(), 2u);
    scores[entry["Host"]] = entry["Score"];
  }
  // Binpack: n1's GPU 0 has exactly 6 free -> tightest; n3 is empty -> loosest.
  EXPECT_EQ(scores["n1"], 10);
  EXPECT_GT(scores["n2"], scores["n3"]);
  EXPECT_GE(scores["n3"], 1);
  EXPECT_EQ(scores["cpu"], 0);
  EXPECT_EQ(scores["ghost"], 0);
}

TEST_F(FilterContract, PrioritizeAgreesWithBind) {
  const Json args = {{"Pod", pod_object("p", "uid-p", 6)}, {"NodeNames", {"n1", "n2", "n3"}}};
  const auto [status, reply] = extender.post("prioritize", args);
  std::string best;
  for (const auto& entry : reply) {
    if (entry["Score"] == 10) best = entry["Host"];
  }
  extender.post("filter", args);
  ASSERT_EQ(extender
                .post("bind", Json{{"PodName", "p"},
                                   {"PodNamespace", "default"},
                                   {"PodUID", "uid-p"},
                                   {"Node", best}})
                .first,
            200);
  // The GPU bind chose is the one prioritize scored: n1 GPU 0, now exactly full.
  // Named: a range-for over inspect()["nodes"] would iterate a temporary destroyed before the
  // loop body (TSan/ASan: heap-use-after-free).
  const Json inspected = extender.inspect();
  for (const auto& node : inspected.at("nodes")) {
    if (node["name"] == "n1") {
      EXPECT_EQ(node["devs"][0]["usedGPU"], 16);
    }
  }
}

TEST(PrioritizeSpread, SpreadPrefersTheEmptiestNode) {
  ExtenderUnderTest extender(sample_cluster(), "spread");
  const auto [status, reply] = extender.post(
      "prioritize", Json{{"Pod", pod_object("p", "uid-p", 6)}, {"NodeNames", {"n1", "n2", "n3"}}});
  ASSERT_EQ(status, 200);
  std::map<std::string, int> scores;
  for (const auto& entry : reply) scores[entry["Host"]] = entry["Score"];
  EXPECT_EQ(scores["n3"], 10);
  EXPECT_LT(scores["n1"], scores["n3"]);
}

}  // namespace
}  // namespace gpushare::testing
