// Live mode with Dynamic Resource Allocation: resource.k8s.io/v1 objects from the (fake) API
// server become GPUs and their holders in the model and in /inspect; DRA pods are scored where
// kube's allocator will put them; bad objects are named and change nothing else.

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <gtest/gtest.h>

#include "integration/live_fixture.h"
#include "support/log_capture.h"

namespace gpushare::testing {
namespace {

Json dra_node(const std::string& name) {
  Json node = gpu_node(name, -1, -1);  // no device-plugin resources
  return node;
}

Json resource_slice(const std::string& node, const std::vector<std::string>& memories) {
  Json devices = Json::array();
  for (std::size_t i = 0; i < memories.size(); ++i) {
    devices.push_back({{"name", "gpu-" + std::to_string(i)},
                       {"allowMultipleAllocations", true},
                       {"attributes", {{"productName", {{"string", "NVIDIA A100-SXM4-40GB"}}}}},
                       {"capacity", {{"memory", {{"value", memories[i]}}}}}});
  }
  return {{"apiVersion", "resource.k8s.io/v1"},
          {"kind", "ResourceSlice"},
          {"metadata", {{"name", node + "-gpu.nvidia.com"}}},
          {"spec",
           {{"driver", "gpu.nvidia.com"},
            {"nodeName", node},
            {"pool", {{"name", node}, {"generation", 1}, {"resourceSliceCount", 1}}},
            {"devices", devices}}}};
}

Json allocated_claim(const std::string& name, const std::string& node, const std::string& device,
                     const std::string& consumed, const std::string& pod) {
  return {
      {"apiVersion", "resource.k8s.io/v1"},
      {"kind", "ResourceClaim"},
      {"metadata", {{"name", name}, {"namespace", "ml"}}},
      {"spec",
       {{"devices",
         {{"requests", Json::array({{{"name", "gpu"},
                                     {"exactly", {{"deviceClassName", "gpu.nvidia.com"}}}}})}}}}},
      {"status",
       {{"allocation",
         {{"devices",
           {{"results", Json::array({{{"request", "gpu"},
                                      {"driver", "gpu.nvidia.com"},
                                      {"pool", node},
                                      {"device", device},
                                      {"consumedCapacity", {{"memory", consumed}}}}})}}},
          {"nodeSelector",
           {{"nodeSelectorTerms",
             Json::array({{{"matchFields", Json::array({{{"key", "metadata.name"},
                                                         {"operator", "In"},
                                                         {"values", {node}}}})}}})}}}}},
        {"reservedFor",
         Json::array({{{"resource", "pods"}, {"name", pod}, {"uid", "u-" + pod}}})}}}};
}

Json claim_template(const std::string& name, const std::string& memory) {
  return {{"apiVersion", "resource.k8s.io/v1"},
          {"kind", "ResourceClaimTemplate"},
          {"metadata", {{"name", name}, {"namespace", "ml"}}},
          {"spec",
           {{"spec",
             {{"devices",
               {{"requests",
                 Json::array({{{"name", "gpu"},
                               {"exactly",
                                {{"deviceClassName", "gpu.nvidia.com"},
                                 {"capacity", {{"requests", {{"memory", memory}}}}}}}}})}}}}}}}};
}

Json device_class() {
  return {{"apiVersion", "resource.k8s.io/v1"},
          {"kind", "DeviceClass"},
          {"metadata", {{"name", "gpu.nvidia.com"}}},
          {"spec",
           {{"selectors",
             Json::array({{{"cel", {{"expression", "device.driver == 'gpu.nvidia.com'"}}}}})}}}};
}

// The /inspect entry of `node`'s GPU `gpu`, or null.
Json inspected_gpu(LiveExtender& extender, const std::string& node, int gpu) {
  auto result = extender.http().Get("/gpushare-scheduler/inspect/" + node);
  if (!result || result->status != 200) return nullptr;
  const Json document = Json::parse(result->body, nullptr, false);
  if (!document.contains("nodes") || document["nodes"].size() != 1) return nullptr;
  const Json& devs = document["nodes"][0]["devs"];
  if (!devs.is_array() || devs.size() <= static_cast<std::size_t>(gpu)) return nullptr;
  return devs[static_cast<std::size_t>(gpu)];
}

class DraSync : public ::testing::Test {
 protected:
  void SetUp() override {
    fake.create(Resource::Nodes, dra_node("a"));
    fake.create(Resource::Nodes, dra_node("b"));
    fake.create(Resource::Nodes, gpu_node("plugin", 2, 32));  // a device-plugin node beside them
    fake.create(Resource::DeviceClasses, device_class());
    fake.create(Resource::ResourceSlices, resource_slice("a", {"40Gi"}));
    fake.create(Resource::ResourceSlices, resource_slice("b", {"40Gi"}));
    fake.create(Resource::ResourceClaims, allocated_claim("held-a", "a", "gpu-0", "30Gi", "pa"));
    fake.create(Resource::ResourceClaimTemplates, claim_template("shared-20g", "20Gi"));
  }
  FakeApiServer fake;
};

TEST_F(DraSync, DraGpusAndTheirClaimsAppearInInspect) {
  LiveExtender extender(fake, live_options([](LiveOptions& o) { o.dra = true; }));
  ASSERT_TRUE(extender.wait_for_sync());
  ASSERT_TRUE(extender.dra()->enabled());
  // The DRA objects have reflectors of their own, which wait_for_sync does not wait for; the
  // prioritize below needs the claim template listed.
  ASSERT_TRUE(eventually([&] { return extender.dra()->synced(); }));
  EXPECT_TRUE(eventually([&] {
    const Json gpu = inspected_gpu(extender, "a", 0);
    return gpu.is_object() && gpu["usedGPU"] == 30 && gpu["totalGPU"] == 40 &&
           gpu["draClaims"].size() == 1 && gpu["draClaims"][0]["claim"] == "ml/held-a" &&
           gpu["draClaims"][0]["pod"] == "ml/pa";
  })) << inspected_gpu(extender, "a", 0).dump();
  // A watch event: a new claim on b shows up.
  fake.create(Resource::ResourceClaims, allocated_claim("held-b", "b", "gpu-0", "15Gi", "pb"));
  EXPECT_TRUE(eventually([&] {
    const Json gpu = inspected_gpu(extender, "b", 0);
    return gpu.is_object() && gpu["usedGPU"] == 15 && gpu["draClaims"].size() == 1;
  }));
  EXPECT_EQ(extender.used_on("plugin", 0), 0);
  EXPECT_EQ(extender.readyz(), 200);

  // A pod asking 20 GiB through the template: a has 10 free, b 25: b first.
  Json pod = make_pod("ml", "trainer", "", "Pending");
  pod["spec"]["resourceClaims"] =
      Json::array({{{"name", "gpu"}, {"resourceClaimTemplateName", "shared-20g"}}});
  const auto [status, reply] = extender.post(
      "prioritize", Json{{"Pod", pod}, {"Nodes", nullptr}, {"NodeNames", {"a", "b", "plugin"}}});
  ASSERT_EQ(status, 200);
  std::map<std::string, int> scores;
  for (const auto& entry : reply) scores[entry["Host"]] = entry["Score"];
  EXPECT_EQ(scores["b"], 10);
  EXPECT_EQ(scores["a"], 0);
  EXPECT_EQ(scores["plugin"], 0);

  // The claim deleted: its memory is free again.
  fake.remove(Resource::ResourceClaims, "ml", "held-a");
  EXPECT_TRUE(eventually([&] { return extender.used_on("a", 0) == 0; }));
}

TEST_F(DraSync, BadObjectsAreNamedAndTheRestStands) {
  Json bad_slice = resource_slice("b", {"forty", "40Gi"});
  bad_slice["metadata"]["name"] = "b-bad";
  bad_slice["spec"]["pool"]["name"] = "b-bad";
  fake.create(Resource::ResourceSlices, bad_slice);
  fake.create(Resource::ResourceClaims, allocated_claim("ghost", "a", "gpu-9", "1Gi", "px"));
  fake.create(Resource::ResourceSlices, resource_slice("gone", {"40Gi"}));
  fake.create(Resource::ResourceClaims, allocated_claim("orphan", "gone", "gpu-0", "1Gi", "py"));
  LiveExtender extender(fake, live_options([](LiveOptions& o) { o.dra = true; }));
  ASSERT_TRUE(extender.wait_for_sync());
  EXPECT_TRUE(eventually([&] { return extender.used_on("a", 0) == 30; }));
  EXPECT_TRUE(eventually([&] { return extender.dra()->warnings().size() == 3; }));
  const std::string all = fmt::format("{}", fmt::join(extender.dra()->warnings(), "\n"));
  EXPECT_NE(all.find("b-bad"), std::string::npos) << all;
  EXPECT_NE(all.find("ml/ghost"), std::string::npos) << all;
  EXPECT_NE(all.find("ml/orphan"), std::string::npos) << all;
  // b's good slice and its bad sibling pool: b has the good device and the bad pool's good one.
  EXPECT_EQ(
      extender.read([](const core::ClusterModel& m) { return m.find_node("b")->gpu_count(); }), 2);
  EXPECT_EQ(extender.readyz(), 200);
}

// The DRA objects listed before the nodes: a claim's node that is merely not listed yet is no
// problem, neither logged nor kept; once the nodes are listed only the real problems remain.
TEST_F(DraSync, NodesListedAfterTheClaimsAreNotReportedGone) {
  fake.create(Resource::ResourceClaims, allocated_claim("orphan", "gone", "gpu-0", "1Gi", "py"));
  RequestFault slow_nodes;
  slow_nodes.verb = Verb::List;
  slow_nodes.resource = Resource::Nodes;
  slow_nodes.status = 0;
  slow_nodes.delay = std::chrono::milliseconds(500);
  fake.inject_fault(slow_nodes);
  LogCapture log;
  LiveExtender extender(fake, live_options([](LiveOptions& o) { o.dra = true; }));
  ASSERT_TRUE(extender.wait_for_sync());
  EXPECT_TRUE(eventually([&] { return extender.used_on("a", 0) == 30; }));
  EXPECT_TRUE(eventually([&] { return extender.dra()->warnings().size() == 1; }));
  const std::string all = fmt::format("{}", fmt::join(extender.dra()->warnings(), "\n"));
  EXPECT_NE(all.find("ml/orphan"), std::string::npos) << all;
  EXPECT_EQ(log.text().find("ml/held-a"), std::string::npos) << log.text();
}

TEST(DraSyncOff, AServerWithoutResourceK8sIoTurnsDraOff) {
  FakeApiServer::Options options;
  options.serve_dra = false;
  FakeApiServer fake(options);
  fake.create(Resource::Nodes, gpu_node("plugin", 2, 32));
  LiveExtender extender(fake, live_options([](LiveOptions& o) { o.dra = true; }));
  ASSERT_TRUE(extender.wait_for_sync());
  EXPECT_FALSE(extender.dra()->enabled());
  EXPECT_EQ(extender.readyz(), 200);
  EXPECT_EQ(fake.request_count(Verb::List, Resource::ResourceSlices), 0u);
}

}  // namespace
}  // namespace gpushare::testing
