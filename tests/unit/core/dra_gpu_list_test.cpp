// The DRA GPU list each node keeps between changes: prioritize's prediction of kube's allocator
// reads it, so every change of the slices it depends on must show there at once.

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <string>

#include "gpushare/core/cluster_model.h"
#include "gpushare/kube/dra_objects.h"

namespace gpushare {
namespace {

using core::GpuTake;

// Slice `name` of pool `pool` (generation `generation`) on `node`, shareable devices of
// `memories`.
core::DraSlice pool_slice(const std::string& name, const std::string& node, const std::string& pool,
                          int generation, const std::vector<std::string>& memories) {
  std::string devices;
  for (const auto& memory : memories) {
    devices += fmt::format(
        R"({}{{"name":"{}-d{}","allowMultipleAllocations":true,"capacity":{{"memory":{{"value":"{}"}}}}}})",
        devices.empty() ? "" : ",", name, devices.size(), memory);
  }
  return kube::parse_resource_slice(fmt::format(
      R"({{"metadata":{{"name":"{}"}},"spec":{{"driver":"gpu.nvidia.com","nodeName":"{}","pool":{{"name":"{}","generation":{},"resourceSliceCount":1}},"devices":[{}]}}}})",
      name, node, pool, generation, devices));
}

class DraGpuList : public ::testing::Test {
 protected:
  DraGpuList() {
    core::NodeSpec spec;
    spec.name = "n1";
    model.upsert_node(spec);
    request.device_class = "gpu.nvidia.com";
    request.memory_bytes = 20 * core::kGiB;
  }
  std::optional<std::vector<GpuTake>> fit() const {
    return model.dra().first_fit(*model.find_node("n1"), std::span(&request, 1));
  }
  core::ClusterModel model;
  core::DraRequest request;
};

TEST_F(DraGpuList, FollowsEachChangeOfTheNodesSlices) {
  request.count = 2;
  model.update_dra(
      [](core::DraState& dra) { dra.upsert_slice(pool_slice("s", "n1", "p", 1, {"40Gi"})); });
  EXPECT_FALSE(fit()) << "one device for two";
  // The slice republished with a second device: both take 20 GiB.
  model.update_dra([](core::DraState& dra) {
    dra.upsert_slice(pool_slice("s", "n1", "p", 1, {"40Gi", "40Gi"}));
  });
  EXPECT_EQ(fit(), (std::vector<GpuTake>{{0, 20}, {1, 20}}));
  EXPECT_EQ(model.dra().gpus_of("n1").size(), 2u);
  model.update_dra([](core::DraState& dra) { dra.remove_slice("s"); });
  EXPECT_FALSE(fit());
  EXPECT_TRUE(model.dra().gpus_of("n1").empty());
}

TEST_F(DraGpuList, ANewerGenerationPublishedForAnotherNodeRetiresThisOnesDevices) {
  model.update_dra(
      [](core::DraState& dra) { dra.upsert_slice(pool_slice("s1", "n1", "p", 1, {"40Gi"})); });
  ASSERT_TRUE(fit());
  model.update_dra(
      [](core::DraState& dra) { dra.upsert_slice(pool_slice("s2", "n2", "p", 2, {"40Gi"})); });
  EXPECT_FALSE(fit());
  model.update_dra([](core::DraState& dra) { dra.remove_slice("s2"); });
  EXPECT_TRUE(fit());
}

TEST_F(DraGpuList, AnotherDriverOrUnitRebuildsIt) {
  model.update_dra(
      [](core::DraState& dra) { dra.upsert_slice(pool_slice("s", "n1", "p", 1, {"40Gi"})); });
  ASSERT_TRUE(fit());
  model.update_dra([](core::DraState& dra) { dra.set_config({"gpu.amd.com", core::kGiB}); });
  EXPECT_TRUE(model.dra().gpus_of("n1").empty());
  model.update_dra([](core::DraState& dra) { dra.set_config({"gpu.nvidia.com", core::kGiB / 2}); });
  EXPECT_EQ(fit(), (std::vector<GpuTake>{{0, 40}})) << "20 GiB in half-GiB units";
}

}  // namespace
}  // namespace gpushare
