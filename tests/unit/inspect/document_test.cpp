// inspect::Document: the /inspect document's sections, the model's and those from outside it,
// for the whole cluster and for one node.

#include "gpushare/inspect/document.h"

#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

#include "gpushare/core/cluster_model.h"
#include "gpushare/core/policy_registry.h"

namespace gpushare::inspect {
namespace {

using kube::Json;

class DocumentTest : public ::testing::Test {
 protected:
  DocumentTest() {
    core::NodeSpec n1;
    n1.name = "n1";
    n1.gpu_count = 2;
    n1.memory_per_gpu = 16;
    model.upsert_node(n1);
    core::NodeSpec n2 = n1;
    n2.name = "n2";
    model.upsert_node(n2);
    model.add_pod({.uid = "u1",
                   .namespace_name = "ml",
                   .name = "trainer",
                   .node = "n1",
                   .gpus = {1},
                   .per_gpu = 4,
                   .model_pin = {}});
  }
  static std::vector<ConfigWarning> warnings() {
    return {{"kube-system/unhealthy-gpu-n1", "bad_value", "gpus", "x", "about n1", "n1"},
            {"kube-system/unhealthy-gpu-n2", "unknown_key", "extra", "", "about n2", "n2"}};
  }
  core::ClusterModel model;
};

TEST_F(DocumentTest, TheClusterWithAPolicyNamesItAndMeasuresFragmentation) {
  const auto policy = core::make_policy("binpack");
  const Document document = Document::cluster(model, policy.get());
  const Json& json = document.json();
  ASSERT_EQ(json["nodes"].size(), 2u);
  EXPECT_EQ(json["nodes"][0]["name"], "n1");
  EXPECT_EQ(json["totalGPU"], 64);
  EXPECT_EQ(json["usedGPU"], 4);
  EXPECT_EQ(json["policy"]["name"], "binpack");
  EXPECT_TRUE(json.contains("fragmentation"));
  EXPECT_TRUE(json["nodes"][0].contains("fragmentedGPU"));
  // Nothing from outside the model until it is added.
  EXPECT_FALSE(json.contains("recentRejections"));
  EXPECT_FALSE(json.contains("configWarnings"));
}

TEST_F(DocumentTest, TheClusterWithoutAPolicyHasNeitherPolicyNorFragmentation) {
  const Document document = Document::cluster(model, nullptr);
  EXPECT_FALSE(document.json().contains("policy"));
  EXPECT_FALSE(document.json().contains("fragmentation"));
  EXPECT_EQ(document.json()["pods"], 1);
}

TEST_F(DocumentTest, SourcesAddTheirSectionsAndUnsetOnesAreLeftOut) {
  Document document = Document::cluster(model, nullptr);
  document.add({[](std::string_view uid, std::string_view, std::string_view) {
                  return uid == "u1" ? std::optional<std::string>("Running") : std::nullopt;
                },
                std::vector<Rejection>{{7, "ml/big", "n2", "no GPU with 32 free"}}, warnings(),
                std::nullopt});
  const Json& json = document.json();
  EXPECT_EQ(json["nodes"][0]["devs"][1]["pods"][0]["phase"], "Running");
  ASSERT_EQ(json["recentRejections"].size(), 1u);
  EXPECT_EQ(json["recentRejections"][0], Json({{"timeUnixNano", 7},
                                               {"pod", "ml/big"},
                                               {"node", "n2"},
                                               {"reason", "no GPU with 32 free"}}));
  ASSERT_EQ(json["configWarnings"].size(), 2u);
  EXPECT_EQ(json["configWarnings"][1]["key"], "extra");

  Document bare = Document::cluster(model, nullptr);
  bare.add({});
  EXPECT_FALSE(bare.json().contains("recentRejections"));
  EXPECT_FALSE(bare.json().contains("configWarnings"));
  EXPECT_FALSE(bare.json().contains("consolidation"));
}

TEST_F(DocumentTest, TheConsolidationSectionShowsThePlanAndTheHolds) {
  const Json report = Json::parse(R"({
    "mode": "evict", "acting": true, "waiting": "", "error": "", "optedInPods": 3,
    "plan": {"moves": [{"pod": "ml/b", "uid": "u-b", "from": {"node": "n1", "gpu": 0},
                        "to": {"node": "n2", "gpu": 1}, "memory": 4}, 7],
             "podsMoved": 1, "gpusFreed": 1},
    "inFlight": {"pod": "ml/b", "phase": "awaiting_replacement"},
    "holds": [{"node": "n2", "gpu": 1, "memory": 4, "owner": "ReplicaSet/web", "ownerUid": "rs",
               "replacing": "ml/b", "expiresAt": "2026-11-28T10:05:00Z"}, "junk"],
    "lastStop": null})");
  Document document = Document::cluster(model, nullptr);
  document.add({nullptr, std::nullopt, std::nullopt, report});
  const Json& section = document.json()["consolidation"];
  EXPECT_EQ(section["mode"], "evict");
  EXPECT_EQ(section["acting"], true);
  EXPECT_FALSE(section.contains("optedInPods"));
  ASSERT_EQ(section["plan"]["moves"].size(), 1u);  // the entry that is no object is left out
  EXPECT_EQ(section["plan"]["moves"][0], Json({{"pod", "ml/b"},
                                               {"from", {{"node", "n1"}, {"gpu", 0}}},
                                               {"to", {{"node", "n2"}, {"gpu", 1}}},
                                               {"memory", 4}}));
  EXPECT_EQ(section["plan"]["gpusFreed"], 1);
  EXPECT_EQ(section["inFlight"]["phase"], "awaiting_replacement");
  ASSERT_EQ(section["holds"].size(), 1u);
  EXPECT_EQ(section["holds"][0]["replacing"], "ml/b");
  EXPECT_FALSE(section["holds"][0].contains("ownerUid"));
  // A node's document has no such section; nor does an unreadable report break the cluster's.
  std::optional<Document> node = Document::node(model, "n2");
  ASSERT_TRUE(node);
  node->add({nullptr, std::nullopt, std::nullopt, report});
  EXPECT_FALSE(node->json().contains("consolidation"));
  Document broken = Document::cluster(model, nullptr);
  broken.add({nullptr, std::nullopt, std::nullopt, Json::parse("{", nullptr, false)});
  const Json& empty = broken.json()["consolidation"];
  EXPECT_EQ(empty, Json({{"plan", nullptr}, {"holds", Json::array()}})) << empty.dump();
}

TEST_F(DocumentTest, ANodesDocumentHoldsThatNodeAndTheWarningsAboutIt) {
  EXPECT_FALSE(Document::node(model, "absent").has_value());
  std::optional<Document> document = Document::node(model, "n2");
  ASSERT_TRUE(document.has_value());
  document->add({nullptr, std::nullopt, warnings(), std::nullopt});
  const Json& json = document->json();
  ASSERT_EQ(json["nodes"].size(), 1u);
  EXPECT_EQ(json["nodes"][0]["name"], "n2");
  ASSERT_EQ(json["configWarnings"].size(), 1u);
  EXPECT_EQ(json["configWarnings"][0]["message"], "about n2");
}

}  // namespace
}  // namespace gpushare::inspect
