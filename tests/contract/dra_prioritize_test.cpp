// Prioritize for pods with DRA claims (resource.k8s.io): scored where kube's first-fit allocator
// will put their claims; filter never refuses them.

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "extender_fixture.h"
#include "gpushare/kube/dra_objects.h"
#include "support/log_capture.h"

namespace gpushare::testing {
namespace {

// A DRA node: no device-plugin resources.
Json dra_node(const std::string& name) {
  return {{"apiVersion", "v1"},
          {"kind", "Node"},
          {"metadata", {{"name", name}}},
          {"status", {{"capacity", {{"cpu", "32"}}}, {"allocatable", {{"cpu", "32"}}}}}};
}

std::string slice(const std::string& node, const std::vector<std::string>& memories) {
  std::string devices;
  for (std::size_t i = 0; i < memories.size(); ++i) {
    if (!devices.empty()) devices += ",";
    devices += fmt::format(
        R"({{"name":"gpu-{}","allowMultipleAllocations":true,"capacity":{{"memory":{{"value":"{}"}}}}}})",
        i, memories[i]);
  }
  return fmt::format(
      R"({{"metadata":{{"name":"{}-gpu"}},"spec":{{"driver":"gpu.nvidia.com","nodeName":"{}","pool":{{"name":"{}","generation":1,"resourceSliceCount":1}},"devices":[{}]}}}})",
      node, node, node, devices);
}

std::string held(const std::string& name, const std::string& node, const std::string& device,
                 const std::string& consumed) {
  return fmt::format(
      R"({{"metadata":{{"name":"{}","namespace":"ml"}},"spec":{{}},"status":{{"allocation":{{"devices":{{"results":[{{"request":"gpu","driver":"gpu.nvidia.com","pool":"{}","device":"{}","consumedCapacity":{{"memory":"{}"}}}}]}}}}}}}})",
      name, node, device, consumed);
}

Json dra_pod(const std::string& template_name) {
  return {{"metadata", {{"name", "trainer"}, {"namespace", "ml"}, {"uid", "uid-trainer"}}},
          {"spec",
           {{"containers", Json::array({{{"name", "main"}}})},
            {"resourceClaims",
             Json::array({{{"name", "gpu"}, {"resourceClaimTemplateName", template_name}}})}}},
          {"status", {{"phase", "Pending"}}}};
}

class DraPrioritize : public ::testing::Test {
 protected:
  DraPrioritize() : extender_(cluster_list({dra_node("a"), dra_node("b")}), "fgd-plus") {
    dra([](core::DraState& state) {
      state.upsert_template(kube::parse_claim_template(
          R"({"metadata":{"name":"shared-20g","namespace":"ml"},"spec":{"spec":{"devices":{"requests":[{"name":"gpu","exactly":{"deviceClassName":"gpu.nvidia.com","capacity":{"requests":{"memory":"20Gi"}}}}]}}}})"));
    });
  }
  void dra(const std::function<void(core::DraState&)>& change) {
    extender_.store().write(
        [&](core::ClusterModel& model, core::PlacementPolicy&) { model.update_dra(change); });
  }
  std::map<std::string, int> scores(const Json& pod) {
    const auto [status, reply] = extender_.post(
        "prioritize", Json{{"Pod", pod}, {"Nodes", nullptr}, {"NodeNames", {"a", "b"}}});
    EXPECT_EQ(status, 200);
    std::map<std::string, int> result;
    for (const auto& entry : reply) result[entry["Host"]] = entry["Score"];
    return result;
  }
  ExtenderUnderTest extender_;
};

TEST_F(DraPrioritize, TheNodeWhoseFirstDeviceFitsWins) {
  // a's only device has 10 GiB free, b's has 25 GiB: a 20 GiB claim fits on b alone.
  dra([](core::DraState& state) {
    state.upsert_slice(kube::parse_resource_slice(slice("a", {"40Gi"})));
    state.upsert_slice(kube::parse_resource_slice(slice("b", {"40Gi"})));
    state.upsert_claim(kube::parse_resource_claim(held("x", "a", "gpu-0", "30Gi")));
    state.upsert_claim(kube::parse_resource_claim(held("y", "b", "gpu-0", "15Gi")));
  });
  const auto result = scores(dra_pod("shared-20g"));
  EXPECT_EQ(result.at("a"), 0);
  EXPECT_EQ(result.at("b"), 10);
}

TEST_F(DraPrioritize, TheTightestFitRanksFirst) {
  // Both fit; b's device is the fuller one, so taking 20 GiB there leaves no hole.
  dra([](core::DraState& state) {
    state.upsert_slice(kube::parse_resource_slice(slice("a", {"40Gi"})));
    state.upsert_slice(kube::parse_resource_slice(slice("b", {"40Gi"})));
    state.upsert_claim(kube::parse_resource_claim(held("y", "b", "gpu-0", "20Gi")));
  });
  const auto result = scores(dra_pod("shared-20g"));
  EXPECT_GT(result.at("b"), result.at("a"));
}

TEST_F(DraPrioritize, ScoresTheDeviceKubeTakesNotTheBestOne) {
  // a: gpu-0 has 25 GiB free, gpu-1 exactly 20. gpushare would pick gpu-1, but kube's
  // allocator takes gpu-0 (first fit), leaving 5 GiB stranded there. b: one device with exactly
  // 20 free. On a's own best pick the two would tie; on what kube will do, b wins.
  dra([](core::DraState& state) {
    state.upsert_slice(kube::parse_resource_slice(slice("a", {"40Gi", "40Gi"})));
    state.upsert_slice(kube::parse_resource_slice(slice("b", {"40Gi", "40Gi"})));
    state.upsert_claim(kube::parse_resource_claim(held("a0", "a", "gpu-0", "15Gi")));
    state.upsert_claim(kube::parse_resource_claim(held("a1", "a", "gpu-1", "20Gi")));
    state.upsert_claim(kube::parse_resource_claim(held("b0", "b", "gpu-0", "20Gi")));
    state.upsert_claim(kube::parse_resource_claim(held("b1", "b", "gpu-1", "15Gi")));
  });
  const auto result = scores(dra_pod("shared-20g"));
  EXPECT_GT(result.at("b"), result.at("a"));
}

TEST_F(DraPrioritize, FilterNeverRefusesADraPod) {
  dra([](core::DraState& state) {
    state.upsert_slice(kube::parse_resource_slice(slice("a", {"8Gi"})));
  });
  const auto [status, reply] = extender_.post(
      "filter",
      Json{{"Pod", dra_pod("shared-20g")}, {"Nodes", nullptr}, {"NodeNames", {"a", "b"}}});
  ASSERT_EQ(status, 200);
  EXPECT_EQ(reply["NodeNames"], Json({"a", "b"}));
  EXPECT_TRUE(reply["FailedNodes"].empty());
}

TEST_F(DraPrioritize, APodWithoutClaimsOfTheDriverIsScoredAsBefore) {
  dra([](core::DraState& state) {
    state.upsert_slice(kube::parse_resource_slice(slice("a", {"40Gi"})));
    state.upsert_template(kube::parse_claim_template(
        R"({"metadata":{"name":"fpga","namespace":"ml"},"spec":{"spec":{"devices":{"requests":[{"name":"fpga","exactly":{"deviceClassName":"fpga.example.com"}}]}}}})"));
  });
  // The same scores as the pod without its claims: a pod without GPU memory.
  Json plain = dra_pod("fpga");
  plain["spec"].erase("resourceClaims");
  LogCapture log;
  const auto result = scores(dra_pod("fpga"));
  EXPECT_EQ(result.size(), 2u);
  EXPECT_EQ(result, scores(plain));
  EXPECT_EQ(log.text().find("not known to the extender"), std::string::npos) << log.text();
}

TEST_F(DraPrioritize, AClaimTheModelLacksIsLoggedAndThePodScoredWithoutGpuMemory) {
  dra([](core::DraState& state) {
    state.upsert_slice(kube::parse_resource_slice(slice("a", {"40Gi"})));
  });
  Json plain = dra_pod("late-template");
  plain["spec"].erase("resourceClaims");
  const auto without_claims = scores(plain);
  LogCapture log;
  EXPECT_EQ(scores(dra_pod("late-template")), without_claims);
  EXPECT_NE(log.text().find("prioritize ml/trainer: ResourceClaimTemplate ml/late-template is not "
                            "known to the extender"),
            std::string::npos)
      << log.text();
  // Anyone can send such pods: the lines are throttled.
  for (int i = 0; i < 50; ++i) scores(dra_pod("late-template"));
  std::size_t lines = 0;
  for (std::size_t at = 0;
       (at = log.text().find("is not known to the extender", at)) != std::string::npos; ++at)
    ++lines;
  EXPECT_LE(lines, 6u) << log.text();
  // Once the template is listed, the pod is scored by its claim and nothing more is logged.
  dra([](core::DraState& state) {
    state.upsert_template(kube::parse_claim_template(
        R"({"metadata":{"name":"late-template","namespace":"ml"},"spec":{"spec":{"devices":{"requests":[{"name":"gpu","exactly":{"deviceClassName":"gpu.nvidia.com","capacity":{"requests":{"memory":"20Gi"}}}}]}}}})"));
  });
  const std::string before = log.text();
  const auto scored = scores(dra_pod("late-template"));
  EXPECT_EQ(scored.at("b"), 0);  // b has no DRA GPU
  EXPECT_GT(scored.at("a"), 0);
  EXPECT_EQ(log.text(), before);
}

}  // namespace
}  // namespace gpushare::testing
