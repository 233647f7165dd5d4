// Which pods consolidation may move, from Pod and PodDisruptionBudget objects.

#include "gpushare/consolidation/mobility.h"

#include <gtest/gtest.h>

namespace gpushare::consolidation {
namespace {

Json pod(const std::string& name, const Json& labels, bool owned = true) {
  Json object = {
      {"metadata",
       {{"name", name}, {"namespace", "ml"}, {"uid", name + "-uid"}, {"labels", labels}}},
      {"spec", {{"nodeName", "n1"}}},
      {"status", {{"phase", "Running"}}}};
  if (owned) {
    object["metadata"]["ownerReferences"] =
        Json::array({{{"kind", "Job"}, {"uid", "job-uid"}},
                     {{"kind", "ReplicaSet"}, {"uid", "rs-uid"}, {"controller", true}}});
  }
  return object;
}

Json pdb(const std::string& name, const Json& selector, int allowed, int generation = 1,
         int observed = 1) {
  return {{"metadata", {{"name", name}, {"namespace", "ml"}, {"generation", generation}}},
          {"spec", {{"selector", selector}}},
          {"status", {{"observedGeneration", observed}, {"disruptionsAllowed", allowed}}}};
}

TEST(Mobility, TheLabelOrTheNamespaceOptsIn) {
  const OptInRule none;
  const OptInRule ml{{"ml"}};
  const Json in = {{std::string(kOptInLabel), "true"}};
  const Json out = {{std::string(kOptInLabel), "false"}};
  EXPECT_TRUE(pod_facts(pod("a", in), none)->opted_in);
  EXPECT_FALSE(pod_facts(pod("a", Json::object()), none)->opted_in);
  EXPECT_TRUE(pod_facts(pod("a", Json::object()), ml)->opted_in);
  EXPECT_FALSE(pod_facts(pod("a", out), ml)->opted_in);  // the label opts out of the namespace
}

TEST(Mobility, TheControllerIsTheOwner) {
  const auto facts = pod_facts(pod("a", Json::object()), {});
  ASSERT_TRUE(facts);
  EXPECT_EQ(facts->owner_uid, "rs-uid");
  EXPECT_EQ(facts->owner_kind, "ReplicaSet");
  EXPECT_TRUE(facts->bound);
  EXPECT_FALSE(pod_facts(Json{{"metadata", {{"name", "x"}}}}, {}));  // no uid, no namespace
}

TEST(Mobility, SelectorsAsTheEvictionApiReadsThem) {
  const std::map<std::string, std::string> labels = {{"app", "web"}, {"tier", "gpu"}};
  EXPECT_FALSE(*selects(Json::object(), labels));  // empty selects nothing
  EXPECT_FALSE(*selects(Json(), labels));
  EXPECT_TRUE(*selects({{"matchLabels", {{"app", "web"}}}}, labels));
  EXPECT_FALSE(*selects({{"matchLabels", {{"app", "db"}}}}, labels));
  const auto expression = [](const std::string& op, Json values) {
    Json e = {{"key", "tier"}, {"operator", op}};
    if (!values.is_null()) e["values"] = values;
    return Json{{"matchExpressions", Json::array({e})}};
  };
  EXPECT_TRUE(*selects(expression("In", Json::array({"gpu", "cpu"})), labels));
  EXPECT_FALSE(*selects(expression("NotIn", Json::array({"gpu"})), labels));
  EXPECT_TRUE(*selects(expression("Exists", nullptr), labels));
  EXPECT_FALSE(*selects(expression("DoesNotExist", nullptr), labels));
  EXPECT_EQ(selects(expression("In", Json::array()), labels), std::nullopt);  // invalid
  EXPECT_EQ(selects(expression("Near", Json::array({"gpu"})), labels), std::nullopt);
}

TEST(Mobility, TheTableSaysWhyAPodCannotMove) {
  const OptInRule rule{{"ml"}};
  std::vector<PodFacts> pods;
  pods.push_back(*pod_facts(pod("movable", {{"app", "web"}}), rule));
  pods.push_back(*pod_facts(pod("bare", {{"app", "web"}}, /*owned=*/false), rule));
  pods.push_back(*pod_facts(pod("out", {{std::string(kOptInLabel), "false"}}), rule));
  Json deleting = pod("deleting", Json::object());
  deleting["metadata"]["deletionTimestamp"] = "2026-11-28T06:00:00Z";
  pods.push_back(*pod_facts(deleting, rule));
  pods.push_back(*pod_facts(pod("guarded", {{"app", "db"}}), rule));
  pods.push_back(*pod_facts(pod("twice", {{"app", "api"}}), rule));
  std::vector<DisruptionBudget> budgets = {
      *disruption_budget(pdb("web", {{"matchLabels", {{"app", "web"}}}}, 2)),
      *disruption_budget(pdb("db", {{"matchLabels", {{"app", "db"}}}}, 0)),
      *disruption_budget(pdb("api-1", {{"matchLabels", {{"app", "api"}}}}, 1)),
      *disruption_budget(pdb("api-2", {{"matchLabels", {{"app", "api"}}}}, 1))};
  const MobilityTable table = mobility_table(pods, budgets);
  ASSERT_EQ(table.movable.size(), 1u);
  const core::PodMobility& movable = table.movable.at("movable-uid");
  EXPECT_TRUE(movable.opted_in);
  EXPECT_TRUE(movable.has_owner);
  EXPECT_EQ(movable.disruption_budget, "ml/web");
  EXPECT_EQ(movable.disruptions_allowed, 2);
  EXPECT_EQ(table.immobile.at("bare-uid"), Immobile::kNoOwner);
  EXPECT_EQ(table.immobile.at("out-uid"), Immobile::kNotOptedIn);
  EXPECT_EQ(table.immobile.at("deleting-uid"), Immobile::kTerminating);
  EXPECT_EQ(table.immobile.at("guarded-uid"), Immobile::kNoDisruptionAllowed);
  EXPECT_EQ(table.immobile.at("twice-uid"), Immobile::kTwoBudgets);
  EXPECT_EQ(table.pods.size(), 6u);
}

TEST(Mobility, ABudgetNotYetObservedAllowsNothing) {
  EXPECT_EQ(disruption_budget(pdb("web", Json::object(), 3, 2, 1))->disruptions_allowed, 0);
  EXPECT_EQ(disruption_budget(pdb("web", Json::object(), 3, 2, 2))->disruptions_allowed, 3);
  EXPECT_FALSE(disruption_budget(Json{{"metadata", {{"name", "x"}}}}));
}

}  // namespace
}  // namespace gpushare::consolidation
