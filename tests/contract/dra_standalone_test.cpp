// Standalone mode on a cluster file with DRA objects (deploy/samples/dra-cluster.yaml): the
// file's ResourceSlices and ResourceClaims become GPUs and holders, as live mode's watches make
// them, and prioritize scores a pod using the file's claim template.

#include <gtest/gtest.h>

#include "extender_fixture.h"
#include "gpushare/standalone/cluster_file_check.h"
#include "gpushare/standalone/standalone_cluster.h"

namespace gpushare::testing {
namespace {

Json sample_dra_cluster() {
  return standalone::load_cluster_file(
      std::string(GPUSHARE_SOURCE_DIR) + "/deploy/samples/dra-cluster.yaml", kube::ResourceNames{});
}

Json pod_with_template(const std::string& template_name) {
  return {{"metadata", {{"name", "t"}, {"namespace", "ml"}, {"uid", "u"}}},
          {"spec",
           {{"containers", Json::array({{{"name", "c"}}})},
            {"resourceClaims",
             Json::array({{{"name", "gpu"}, {"resourceClaimTemplateName", template_name}}})}}}};
}

TEST(DraStandalone, TheFilesSlicesAndClaimsAreGpusAndHolders) {
  ExtenderUnderTest extender(sample_dra_cluster(), "fgd-plus");
  const Json inspect = extender.inspect();
  std::map<std::string, Json> nodes;
  for (const Json& node : inspect["nodes"]) nodes[node["name"]] = node;
  ASSERT_TRUE(nodes.contains("dra-node-a"));
  // dra-node-a: two 40 GiB A100s from its slice; the notebook's claim holds 30 GiB of gpu-0.
  const Json& a = nodes["dra-node-a"];
  ASSERT_EQ(a["devs"].size(), 2u) << a.dump();
  EXPECT_EQ(a["devs"][0]["totalGPU"], 40);
  EXPECT_EQ(a["devs"][0]["usedGPU"], 30);
  EXPECT_EQ(a["devs"][0]["draDevice"], "dra-node-a/gpu-0");
  ASSERT_EQ(a["devs"][0]["draClaims"].size(), 1u);
  EXPECT_EQ(a["devs"][0]["draClaims"][0]["claim"], "ml/notebook-gpu");
  EXPECT_EQ(a["devs"][1]["usedGPU"], 0);
}

TEST(DraStandalone, APodUsingTheFilesTemplateIsScoredWhereItsClaimFits) {
  // 20 GiB: kube's allocator tries dra-node-a's gpu-0 first (10 GiB free) and takes gpu-1, a
  // whole free GPU; on dra-node-b it fits on gpu-0 beside the 15 GiB claim (25 GiB free).
  ExtenderUnderTest extender(sample_dra_cluster(), "fgd-plus");
  const auto [status, reply] =
      extender.post("prioritize", Json{{"Pod", pod_with_template("gpu-20gi")},
                                       {"Nodes", nullptr},
                                       {"NodeNames", {"dra-node-a", "dra-node-b"}}});
  ASSERT_EQ(status, 200) << reply.dump();
  std::map<std::string, int> scores;
  for (const Json& entry : reply) scores[entry["Host"]] = entry["Score"];
  EXPECT_GT(scores.at("dra-node-b"), scores.at("dra-node-a")) << reply.dump();
}

TEST(DraStandalone, WithDraOffTheObjectsAreIgnored) {
  const Json list = sample_dra_cluster();
  standalone::StandaloneCluster cluster(list, kube::ResourceNames{}, std::nullopt);
  core::ClusterModel model;
  cluster.populate(model);
  EXPECT_TRUE(model.dra().slices().empty());
  EXPECT_TRUE(model.dra().claims().empty());
  const core::NodeState* a = model.find_node("dra-node-a");
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->gpu_count(), 0);
}

TEST(DraStandalone, ATypoInADraKindIsNamed) {
  Json list = sample_dra_cluster();
  for (Json& item : list["items"]) {
    if (item["kind"] == "ResourceSlice") {
      item["kind"] = "ResourceSlices";
      break;
    }
  }
  const auto problems = standalone::check_cluster_list(list, kube::ResourceNames{});
  ASSERT_FALSE(problems.empty());
  EXPECT_NE(problems.front().message.find("did you mean \"ResourceSlice\""), std::string::npos)
      << problems.front().message;
}

}  // namespace
}  // namespace gpushare::testing
