// Prioritize for a DRA pod whose claim lists prioritised alternatives (firstAvailable): each node
// is scored by the alternative kube's allocator takes there, the first that fits.

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "extender_fixture.h"
#include "gpushare/kube/dra_objects.h"

namespace gpushare::testing {
namespace {

// Node `name` with one shareable 40 GiB DRA GPU of which `held` is taken.
void gpu_node(core::DraState& state, const std::string& name, const std::string& held) {
  state.upsert_slice(kube::parse_resource_slice(fmt::format(
      R"({{"metadata":{{"name":"{0}-slice"}},"spec":{{"driver":"gpu.nvidia.com","nodeName":"{0}","pool":{{"name":"{0}","generation":1,"resourceSliceCount":1}},"devices":[{{"name":"gpu-0","allowMultipleAllocations":true,"capacity":{{"memory":{{"value":"40Gi"}}}}}}]}}}})",
      name)));
  state.upsert_claim(kube::parse_resource_claim(fmt::format(
      R"({{"metadata":{{"name":"{0}-held","namespace":"ml"}},"spec":{{}},"status":{{"allocation":{{"devices":{{"results":[{{"request":"gpu","driver":"gpu.nvidia.com","pool":"{0}","device":"gpu-0","consumedCapacity":{{"memory":"{1}"}}}}]}}}}}}}})",
      name, held)));
}

// Template `name` asking the subrequests' memories in order (one: an exact request; "": a
// whole device).
void claim_template(core::DraState& state, const std::string& name,
                    const std::vector<std::string>& memories) {
  std::string asks;
  for (const auto& memory : memories) {
    asks += fmt::format(
        R"({}{{"name":"m{}","deviceClassName":"gpu.nvidia.com"{}}})", asks.empty() ? "" : ",",
        memory,
        memory.empty() ? ""
                       : fmt::format(R"(,"capacity":{{"requests":{{"memory":"{}"}}}})", memory));
  }
  const std::string request = memories.size() == 1
                                  ? fmt::format(R"({{"name":"gpu","exactly":{}}})", asks)
                                  : fmt::format(R"({{"name":"gpu","firstAvailable":[{}]}})", asks);
  state.upsert_template(kube::parse_claim_template(fmt::format(
      R"({{"metadata":{{"name":"{}","namespace":"ml"}},"spec":{{"spec":{{"devices":{{"requests":[{}]}}}}}}}})",
      name, request)));
}

class DraFirstAvailablePrioritize : public ::testing::Test {
 protected:
  DraFirstAvailablePrioritize() : extender_(cluster_list({node("a"), node("b")}), "fgd-plus") {
    dra([](core::DraState& state) {
      claim_template(state, "big-else-small", {"30Gi", "10Gi"});
      claim_template(state, "big", {"30Gi"});
      claim_template(state, "small", {"10Gi"});
      claim_template(state, "big-else-whole", {"30Gi", ""});
      claim_template(state, "whole", {""});
    });
  }
  static Json node(const std::string& name) {
    return {{"apiVersion", "v1"},
            {"kind", "Node"},
            {"metadata", {{"name", name}}},
            {"status", {{"capacity", {{"cpu", "8"}}}, {"allocatable", {{"cpu", "8"}}}}}};
  }
  void dra(const std::function<void(core::DraState&)>& change) {
    extender_.store().write(
        [&](core::ClusterModel& model, core::PlacementPolicy&) { model.update_dra(change); });
  }
  // Nodes a and b, each with one 40 GiB GPU of which `a_held` and `b_held` are taken.
  void held(const std::string& a_held, const std::string& b_held) {
    dra([&](core::DraState& state) {
      gpu_node(state, "a", a_held);
      gpu_node(state, "b", b_held);
    });
  }
  std::map<std::string, int> scores(const std::string& template_name) {
    const Json pod = {
        {"metadata", {{"name", "p"}, {"namespace", "ml"}, {"uid", "uid-p"}}},
        {"spec",
         {{"containers", Json::array({{{"name", "main"}}})},
          {"resourceClaims",
           Json::array({{{"name", "gpu"}, {"resourceClaimTemplateName", template_name}}})}}},
        {"status", {{"phase", "Pending"}}}};
    auto result = extender_.prioritize_scores(pod, {"a", "b"});
    EXPECT_EQ(result.size(), 2u);
    return result;
  }
  ExtenderUnderTest extender_;
};

TEST_F(DraFirstAvailablePrioritize, ANodeWhereOnlyTheSecondAlternativeFitsIsScoredAsThat) {
  // a has 12 GiB free: 30 does not fit, 10 does. b has 5 GiB free: neither fits.
  held("28Gi", "35Gi");
  const auto result = scores("big-else-small");
  EXPECT_GT(result.at("a"), 0);
  EXPECT_EQ(result.at("b"), 0);
  EXPECT_EQ(result, scores("small"));
}

TEST_F(DraFirstAvailablePrioritize, WhereTheFirstAlternativeFitsItIsTheOneScored) {
  // Both nodes have room for 30 GiB: scored as the 30 GiB pod, not as one taking the whole
  // device, which only a has room for.
  held("0", "6Gi");
  EXPECT_EQ(scores("big-else-whole"), scores("big"));
  EXPECT_EQ(scores("whole").at("b"), 0) << "the second alternative alone does not fit on b";
  EXPECT_GT(scores("big").at("b"), 0);
}

TEST_F(DraFirstAvailablePrioritize, NodesTakingDifferentAlternativesAreBothFeasible) {
  held("0", "28Gi");
  const auto result = scores("big-else-small");
  EXPECT_GT(result.at("a"), 0);
  EXPECT_GT(result.at("b"), 0);
  EXPECT_EQ(scores("big").at("b"), 0) << "the first alternative alone does not fit on b";
}

}  // namespace
}  // namespace gpushare::testing
