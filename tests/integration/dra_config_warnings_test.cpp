// Live mode: DRA objects the model cannot use are listed in /inspect's configWarnings, naming
// the object (and on /inspect/{node} of their node), for as long as they stand.

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "integration/live_fixture.h"

namespace gpushare::testing {
namespace {

// A slice of node `node`, pool `pool`, with one device per memory ("forty" cannot be read).
Json slice(const std::string& name, const std::string& node, const std::string& pool,
           const std::vector<std::string>& memories, int slice_count = 1) {
  Json devices = Json::array();
  for (const auto& memory : memories) {
    devices.push_back({{"name", fmt::format("gpu-{}", devices.size())},
                       {"capacity", {{"memory", {{"value", memory}}}}}});
  }
  return Json::parse(fmt::format(
      R"({{"apiVersion":"resource.k8s.io/v1","kind":"ResourceSlice","metadata":{{"name":"{}"}},"spec":{{"driver":"gpu.nvidia.com","nodeName":"{}","pool":{{"name":"{}","generation":1,"resourceSliceCount":{}}},"devices":{}}}}})",
      name, node, pool, slice_count, devices.dump()));
}

// A claim allocated device `device` of pool `pool`, the whole device.
Json claim_on(const std::string& name, const std::string& pool, const std::string& device) {
  return Json::parse(fmt::format(
      R"({{"apiVersion":"resource.k8s.io/v1","kind":"ResourceClaim","metadata":{{"name":"{}","namespace":"ml"}},"spec":{{}},"status":{{"allocation":{{"devices":{{"results":[{{"request":"gpu","driver":"gpu.nvidia.com","pool":"{}","device":"{}"}}]}}}}}}}})",
      name, pool, device));
}

Json inspect(const LiveExtender& extender, const std::string& node = "") {
  auto result =
      extender.http().Get("/gpushare-scheduler/inspect" + (node.empty() ? "" : "/" + node));
  if (!result || result->status != 200) return nullptr;
  return Json::parse(result->body, nullptr, false);
}

// The DRA entries of /inspect's configWarnings, by object.
std::map<std::string, Json> dra_warnings(const LiveExtender& extender,
                                         const std::string& node = "") {
  std::map<std::string, Json> result;
  const Json document = inspect(extender, node);
  if (!document.is_object()) return result;
  for (const Json& warning : document["configWarnings"]) {
    if (warning["kind"] == "dra_object") result[warning["object"]] = warning;
  }
  return result;
}

class DraConfigWarnings : public ::testing::Test {
 protected:
  void SetUp() override {
    fake.create(Resource::Nodes, gpu_node("a", -1, -1));
    fake.create(Resource::ResourceSlices, slice("a-gpus", "a", "a", {"40Gi"}));
  }
  LiveExtender start() {
    return LiveExtender(fake, live_options([](LiveOptions& o) { o.dra = true; }));
  }
  FakeApiServer fake;
};

TEST_F(DraConfigWarnings, UnusableObjectsAreListedUntilFixedOrDeleted) {
  fake.create(Resource::ResourceSlices, slice("a-bad", "a", "a-bad", {"forty"}));
  fake.create(Resource::ResourceClaims, claim_on("ghost", "a", "gpu-9"));
  fake.create(Resource::ResourceSlices, slice("gone-gpus", "gone", "gone", {"40Gi"}));
  fake.create(Resource::ResourceClaims, claim_on("orphan", "gone", "gpu-0"));
  fake.create(Resource::ResourceSlices, slice("split-1", "a", "split", {"40Gi"}, 2));
  fake.create(Resource::ResourceSlices, slice("split-2", "a", "split", {"40Gi"}, 3));
  LiveExtender extender = start();
  ASSERT_TRUE(extender.wait_for_sync());
  ASSERT_TRUE(eventually([&] { return dra_warnings(extender).size() == 4; }))
      << inspect(extender).dump();
  auto warnings = dra_warnings(extender);
  ASSERT_TRUE(warnings.contains("ResourceSlice a-bad"));
  EXPECT_EQ(warnings["ResourceSlice a-bad"]["node"], "a");
  EXPECT_NE(warnings["ResourceSlice a-bad"]["message"].get<std::string>().find("device gpu-0"),
            std::string::npos);
  ASSERT_TRUE(warnings.contains("ResourceClaim ml/ghost"));
  EXPECT_NE(warnings["ResourceClaim ml/ghost"]["message"].get<std::string>().find("a/gpu-9"),
            std::string::npos);
  ASSERT_TRUE(warnings.contains("ResourceClaim ml/orphan"));
  EXPECT_EQ(warnings["ResourceClaim ml/orphan"]["node"], "gone");
  ASSERT_TRUE(warnings.contains("ResourceSlice split-2") ||
              warnings.contains("ResourceSlice split-1"));
  // Node a's page lists what is about a only.
  const auto on_a = dra_warnings(extender, "a");
  EXPECT_TRUE(on_a.contains("ResourceSlice a-bad"));
  EXPECT_FALSE(on_a.contains("ResourceClaim ml/orphan"));

  // Fixed, deleted, or the node arriving: each warning goes with its cause.
  fake.replace(Resource::ResourceSlices, slice("a-bad", "a", "a-bad", {"40Gi"}));
  fake.remove(Resource::ResourceClaims, "ml", "ghost");
  fake.create(Resource::Nodes, gpu_node("gone", -1, -1));
  fake.remove(Resource::ResourceSlices, "", "split-2");
  fake.replace(Resource::ResourceSlices, slice("split-1", "a", "split", {"40Gi"}, 1));
  EXPECT_TRUE(eventually([&] { return dra_warnings(extender).empty(); }))
      << inspect(extender).dump();
  EXPECT_TRUE(eventually([&] {
    return extender.read(
               [](const core::ClusterModel& m) { return m.find_node("a")->gpu_count(); }) == 3;
  }));
}

TEST_F(DraConfigWarnings, TheListIsBounded) {
  for (int i = 0; i < 30; ++i)
    fake.create(Resource::ResourceClaims, claim_on(fmt::format("ghost-{:02}", i), "a", "gpu-9"));
  LiveExtender extender = start();
  ASSERT_TRUE(extender.wait_for_sync());
  Json listed;
  ASSERT_TRUE(eventually([&] {
    listed = inspect(extender)["configWarnings"];
    return listed.is_array() && listed.size() == sync::DraSync::kMaxConfigWarnings + 1;
  })) << listed.dump();
  EXPECT_EQ(listed.back()["object"], "");
  EXPECT_NE(listed.back()["message"].get<std::string>().find("10 more DRA problems"),
            std::string::npos)
      << listed.back().dump();
}

}  // namespace
}  // namespace gpushare::testing
