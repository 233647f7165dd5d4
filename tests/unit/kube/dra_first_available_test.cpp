// DRA prioritised alternatives (firstAvailable): decoded in order, and kube's allocator predicted
// to take, on each node, the first alternative that fits there.

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <string>

#include "gpushare/core/cluster_model.h"
#include "gpushare/kube/dra_objects.h"
#include "gpushare/kube/pod_dra_demand.h"
#include "gpushare/kube/pod_info.h"

namespace gpushare {
namespace {

using core::GpuTake;
using core::kGiB;

// A request `name` whose alternatives ask `memories` of a shareable GPU each ("" asks a whole
// device), in that order; a class name may precede a memory as "class:memory".
std::string first_available(std::string_view name, const std::vector<std::string>& memories) {
  std::string subrequests;
  for (std::size_t i = 0; i < memories.size(); ++i) {
    std::string device_class = "gpu.nvidia.com";
    std::string memory = memories[i];
    if (const auto colon = memory.find(':'); colon != std::string::npos) {
      device_class = memory.substr(0, colon);
      memory.erase(0, colon + 1);
    }
    if (!subrequests.empty()) subrequests += ",";
    subrequests += fmt::format(
        R"({{"name":"alt{}","deviceClassName":"{}"{}}})", i, device_class,
        memory.empty() ? std::string()
                       : fmt::format(R"(,"capacity":{{"requests":{{"memory":"{}"}}}})", memory));
  }
  return fmt::format(R"({{"name":"{}","firstAvailable":[{}]}})", name, subrequests);
}

std::string exactly(std::string_view name, std::string_view memory) {
  return fmt::format(
      R"({{"name":"{}","exactly":{{"deviceClassName":"gpu.nvidia.com","capacity":{{"requests":{{"memory":"{}"}}}}}}}})",
      name, memory);
}

core::DraClaim pending_claim(std::string_view name, const std::vector<std::string>& requests) {
  std::string list;
  for (const auto& request : requests) list += (list.empty() ? "" : ",") + request;
  return kube::parse_resource_claim(fmt::format(
      R"({{"metadata":{{"name":"{}","namespace":"ml"}},"spec":{{"devices":{{"requests":[{}]}}}}}})",
      name, list));
}

TEST(DraFirstAvailableDecode, KeepsEveryAlternativeInOrder) {
  const core::DraClaim claim =
      pending_claim("c", {first_available("gpu", {"40Gi", "nic.example.com:", "10Gi"})});
  ASSERT_EQ(claim.requests.size(), 1u);
  const core::DraRequest& request = claim.requests[0];
  EXPECT_EQ(request.name, "gpu");
  ASSERT_EQ(request.first_available.size(), 3u);
  EXPECT_EQ(request.first_available[0].name, "gpu/alt0");
  EXPECT_EQ(request.first_available[0].memory_bytes, 40 * kGiB);
  EXPECT_EQ(request.first_available[1].device_class, "nic.example.com");
  EXPECT_FALSE(request.first_available[1].memory_bytes);
  EXPECT_EQ(request.first_available[2].memory_bytes, 10 * kGiB);
  EXPECT_EQ(request.ways().size(), 3u);
  // The request's own ask is the first alternative's.
  EXPECT_EQ(request.memory_bytes, 40 * kGiB);
  EXPECT_EQ(request.device_class, "gpu.nvidia.com");
}

TEST(DraFirstAvailableDecode, AnExactRequestIsItsOnlyWay) {
  const core::DraClaim claim = pending_claim("c", {exactly("gpu", "20Gi")});
  ASSERT_EQ(claim.requests.size(), 1u);
  EXPECT_TRUE(claim.requests[0].first_available.empty());
  ASSERT_EQ(claim.requests[0].ways().size(), 1u);
  EXPECT_EQ(claim.requests[0].ways()[0].memory_bytes, 20 * kGiB);
  EXPECT_THROW(pending_claim("c", {R"({"name":"gpu","firstAvailable":[]})"}), kube::BadInput);
}

class DraFirstAvailable : public ::testing::Test {
 protected:
  // Node n1 with shareable 40 GiB devices gpu-0..; `held` GiB of each already taken.
  void node_with(const std::vector<int>& held) {
    core::NodeSpec spec;
    spec.name = "n1";
    model.upsert_node(spec);
    std::string devices;
    for (std::size_t i = 0; i < held.size(); ++i) {
      devices += fmt::format(
          R"({}{{"name":"gpu-{}","allowMultipleAllocations":true,"capacity":{{"memory":{{"value":"40Gi"}}}}}})",
          i == 0 ? "" : ",", i);
    }
    model.update_dra([&](core::DraState& dra) {
      dra.upsert_slice(kube::parse_resource_slice(fmt::format(
          R"({{"metadata":{{"name":"n1-gpus"}},"spec":{{"driver":"gpu.nvidia.com","nodeName":"n1","pool":{{"name":"n1","generation":1,"resourceSliceCount":1}},"devices":[{}]}}}})",
          devices)));
      for (std::size_t i = 0; i < held.size(); ++i) {
        if (held[i] == 0) continue;
        dra.upsert_claim(kube::parse_resource_claim(fmt::format(
            R"({{"metadata":{{"name":"held-{}","namespace":"ml"}},"spec":{{}},"status":{{"allocation":{{"devices":{{"results":[{{"request":"gpu","driver":"gpu.nvidia.com","pool":"n1","device":"gpu-{}","consumedCapacity":{{"memory":"{}Gi"}}}}]}}}}}}}})",
            i, i, held[i])));
      }
    });
  }
  std::optional<std::vector<GpuTake>> fit(const std::vector<std::string>& requests) {
    const core::DraClaim claim = pending_claim("pending", requests);
    return model.dra().first_fit(*model.find_node("n1"), claim.requests);
  }
  core::ClusterModel model;
};

TEST_F(DraFirstAvailable, AFreeNodeGivesTheFirstAlternative) {
  node_with({0});
  EXPECT_EQ(fit({first_available("gpu", {"20Gi", "8Gi"})}), (std::vector<GpuTake>{{0, 20}}));
}

TEST_F(DraFirstAvailable, WhereTheFirstDoesNotFitTheSecondIsTaken) {
  // 10 GiB free: 20 does not fit, 8 does.
  node_with({30});
  EXPECT_EQ(fit({first_available("gpu", {"20Gi", "8Gi"})}), (std::vector<GpuTake>{{0, 8}}));
  // As the first alternative alone, nothing fits.
  EXPECT_FALSE(fit({exactly("gpu", "20Gi")}));
}

TEST_F(DraFirstAvailable, EachAlternativeTakesItsFirstFittingDevice) {
  // gpu-0 has 15 free, gpu-1 40: the 20 GiB alternative goes to gpu-1, before the 8 GiB one
  // is tried on gpu-0.
  node_with({25, 0});
  EXPECT_EQ(fit({first_available("gpu", {"20Gi", "8Gi"})}), (std::vector<GpuTake>{{1, 20}}));
}

TEST_F(DraFirstAvailable, NoAlternativeFitting) {
  node_with({35});
  EXPECT_FALSE(fit({first_available("gpu", {"20Gi", "8Gi"})}));
}

TEST_F(DraFirstAvailable, AnEarlierRequestFallsBackWhenALaterOneCannotFit) {
  // The whole device for `a` would leave nothing for `b`'s 30 GiB: kube backtracks to a's
  // second alternative, and both fit on the one device.
  node_with({0});
  EXPECT_EQ(fit({first_available("a", {"", "10Gi"}), exactly("b", "30Gi")}),
            (std::vector<GpuTake>{{0, 10}, {0, 30}}));
  // Without `b`, `a` takes its first alternative.
  EXPECT_EQ(fit({first_available("a", {"", "10Gi"})}), (std::vector<GpuTake>{{0, 40}}));
}

TEST_F(DraFirstAvailable, TheEarlierRequestsAlternativeVariesLast) {
  // Both requests have alternatives; kube tries (a0, b0), (a0, b1), (a1, b0): the first that
  // fits is a0 with b1, though a1 with b0 would fit too.
  node_with({0});
  EXPECT_EQ(fit({first_available("a", {"30Gi", "5Gi"}), first_available("b", {"20Gi", "10Gi"})}),
            (std::vector<GpuTake>{{0, 30}, {0, 10}}));
}

TEST_F(DraFirstAvailable, AnotherDriversAlternativeTakesNoGpu) {
  // The model does not see that driver's devices: its alternative counts as satisfied first.
  node_with({0});
  EXPECT_EQ(fit({first_available("gpu", {"nic.example.com:", "8Gi"})}), (std::vector<GpuTake>{}));
}

TEST_F(DraFirstAvailable, APodWhoseSecondAlternativeIsOursHasPendingRequests) {
  node_with({0});
  model.update_dra([&](core::DraState& dra) {
    dra.upsert_claim(pending_claim("mixed", {first_available("gpu", {"nic.example.com:", "8Gi"})}));
    dra.upsert_claim(pending_claim("other", {first_available("nic", {"nic.example.com:"})}));
  });
  kube::PodInfo pod;
  pod.namespace_name = "ml";
  pod.resource_claims = {{"gpu", "mixed", {}}, {"nic", "other", {}}};
  const auto requests = kube::pending_dra_requests(model.dra(), pod);
  ASSERT_EQ(requests.size(), 1u);
  EXPECT_EQ(requests[0].name, "gpu");
}

}  // namespace
}  // namespace gpushare
