// Dynamic Resource Allocation: decoding resource.k8s.io objects, DRA GPUs and claims in the
// model, and the prediction of kube's first-fit allocator.

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <string>

#include "gpushare/core/cluster_model.h"
#include "gpushare/kube/dra_objects.h"
#include "gpushare/kube/pod_info.h"
#include "support/dra_model.h"

namespace gpushare {
namespace {

using core::kGiB;
using testing::plain_node;

// A v1 ResourceSlice as the NVIDIA DRA driver publishes it: devices gpu-0.. with productName,
// index and a memory capacity, shareable with consumable capacity.
std::string slice_json(std::string_view name, std::string_view node, std::string_view pool,
                       std::vector<std::string> memories, std::int64_t generation = 1,
                       std::int64_t count = 1, bool shareable = true,
                       std::string_view driver = "gpu.nvidia.com", int first_index = 0) {
  std::string devices;
  for (std::size_t i = 0; i < memories.size(); ++i) {
    if (!devices.empty()) devices += ",";
    const int index = first_index + static_cast<int>(i);
    devices += fmt::format(
        R"({{"name":"gpu-{}","allowMultipleAllocations":{},"attributes":{{"productName":{{"string":"NVIDIA A100-SXM4-80GB"}},"index":{{"int":{}}},"type":{{"string":"gpu"}}}},"capacity":{{"memory":{{"value":"{}"}}}}}})",
        index, shareable ? "true" : "false", index, memories[i]);
  }
  return fmt::format(
      R"({{"apiVersion":"resource.k8s.io/v1","kind":"ResourceSlice","metadata":{{"name":"{}"}},"spec":{{"driver":"{}","nodeName":"{}","pool":{{"name":"{}","generation":{},"resourceSliceCount":{}}},"devices":[{}]}}}})",
      name, driver, node, pool, generation, count, devices);
}

// A claim allocated on `node` with `consumed` (empty: no consumedCapacity) on each device.
std::string claim_json(std::string_view name, std::string_view node,
                       std::vector<std::pair<std::string, std::string>> devices_consumed,
                       std::string_view pod = "", std::string_view request_memory = "20Gi") {
  std::string results;
  for (const auto& [device, consumed] : devices_consumed) {
    if (!results.empty()) results += ",";
    results += fmt::format(
        R"({{"request":"gpu","driver":"gpu.nvidia.com","pool":"{}","device":"{}"{}}})", node,
        device,
        consumed.empty()
            ? std::string()
            : fmt::format(R"(,"consumedCapacity":{{"gpu.nvidia.com/memory":"{}"}},"shareID":"abc")",
                          consumed));
  }
  const std::string status =
      node.empty()
          ? std::string()
          : fmt::format(
                R"(,"status":{{"allocation":{{"devices":{{"results":[{}]}},"nodeSelector":{{"nodeSelectorTerms":[{{"matchFields":[{{"key":"metadata.name","operator":"In","values":["{}"]}}]}}]}}}},"reservedFor":[{}]}})",
                results, node,
                pod.empty() ? std::string()
                            : fmt::format(R"({{"resource":"pods","name":"{}","uid":"u1"}})", pod));
  return fmt::format(
      R"({{"apiVersion":"resource.k8s.io/v1","kind":"ResourceClaim","metadata":{{"name":"{}","namespace":"ml","uid":"uid-{}"}},"spec":{{"devices":{{"requests":[{{"name":"gpu","exactly":{{"deviceClassName":"gpu.nvidia.com","allocationMode":"ExactCount","count":1,"capacity":{{"requests":{{"memory":"{}"}}}}}}}}]}}}}{}}})",
      name, name, request_memory, status);
}

TEST(DraDecode, ReadsANvidiaSlice) {
  const core::DraSlice slice =
      kube::parse_resource_slice(slice_json("n1-gpu", "n1", "n1", {"80Gi", "40Gi"}, 3, 2));
  EXPECT_EQ(slice.name, "n1-gpu");
  EXPECT_EQ(slice.driver, "gpu.nvidia.com");
  EXPECT_EQ(slice.node, "n1");
  EXPECT_EQ(slice.pool, "n1");
  EXPECT_EQ(slice.generation, 3);
  EXPECT_EQ(slice.slice_count, 2);
  ASSERT_EQ(slice.devices.size(), 2u);
  EXPECT_EQ(slice.devices[0].name, "gpu-0");
  EXPECT_EQ(slice.devices[0].memory_bytes, 80 * kGiB);
  EXPECT_EQ(slice.devices[1].memory_bytes, 40 * kGiB);
  EXPECT_EQ(slice.devices[0].product, "NVIDIA A100-SXM4-80GB");
  EXPECT_TRUE(slice.devices[0].shareable);
}

TEST(DraDecode, ReadsV1beta1DevicesAndPrefixedCapacityNames) {
  const core::DraSlice slice = kube::parse_resource_slice(
      R"({"metadata":{"name":"s"},"spec":{"driver":"gpu.nvidia.com","nodeName":"n","pool":{"name":"p","generation":0,"resourceSliceCount":1},
          "devices":[{"name":"gpu-0","basic":{"attributes":{"gpu.nvidia.com/productName":{"string":"H100"}},"capacity":{"gpu.nvidia.com/memory":{"value":"80Gi"}}}},
                     {"name":"nic","basic":{"capacity":{"other.example.com/memory":{"value":"1Gi"}}}}]}})");
  ASSERT_EQ(slice.devices.size(), 2u);
  EXPECT_EQ(slice.devices[0].memory_bytes, 80 * kGiB);
  EXPECT_EQ(slice.devices[0].product, "H100");
  EXPECT_FALSE(slice.devices[1].memory_bytes) << "another driver's memory is not this driver's";
  EXPECT_TRUE(kube::is_memory_capacity("memory", "gpu.nvidia.com"));
  EXPECT_TRUE(kube::is_memory_capacity("gpu.nvidia.com/memory", "gpu.nvidia.com"));
  EXPECT_FALSE(kube::is_memory_capacity("gpu.nvidia.com/memoryx", "gpu.nvidia.com"));
}

TEST(DraDecode, AnUnreadableCapacityIsRecordedOnItsDevice) {
  const core::DraSlice slice =
      kube::parse_resource_slice(slice_json("s", "n", "n", {"lots", "8Gi"}));
  ASSERT_EQ(slice.devices.size(), 2u);
  EXPECT_FALSE(slice.devices[0].memory_bytes);
  EXPECT_FALSE(slice.devices[0].capacity_error.empty());
  EXPECT_EQ(slice.devices[1].memory_bytes, 8 * kGiB);
}

TEST(DraDecode, ReadsAnAllocatedClaim) {
  const core::DraClaim claim =
      kube::parse_resource_claim(claim_json("c1", "n1", {{"gpu-1", "20Gi"}}, "trainer"));
  EXPECT_EQ(claim.key(), "ml/c1");
  EXPECT_EQ(claim.uid, "uid-c1");
  ASSERT_EQ(claim.requests.size(), 1u);
  EXPECT_EQ(claim.requests[0].device_class, "gpu.nvidia.com");
  EXPECT_EQ(claim.requests[0].count, 1);
  EXPECT_EQ(claim.requests[0].memory_bytes, 20 * kGiB);
  EXPECT_TRUE(claim.allocated);
  EXPECT_EQ(claim.node, "n1");
  ASSERT_EQ(claim.results.size(), 1u);
  EXPECT_EQ(claim.results[0].device, "gpu-1");
  EXPECT_EQ(claim.results[0].pool, "n1");
  EXPECT_EQ(claim.results[0].consumed_bytes, 20 * kGiB);
  EXPECT_EQ(claim.results[0].share_id, "abc");
  EXPECT_EQ(claim.reserved_for, std::vector<std::string>{"trainer"});
}

TEST(DraDecode, ReadsV1beta1RequestsTemplatesClassesAndPodClaims) {
  const core::DraClaim claim = kube::parse_resource_claim(
      R"({"metadata":{"name":"c","namespace":"ns"},"spec":{"devices":{"requests":[{"name":"r","deviceClassName":"gpu.nvidia.com","count":2}]}}})");
  ASSERT_EQ(claim.requests.size(), 1u);
  EXPECT_EQ(claim.requests[0].count, 2);
  EXPECT_FALSE(claim.requests[0].memory_bytes);
  EXPECT_FALSE(claim.allocated);

  const core::DraClaimTemplate from = kube::parse_claim_template(
      R"({"metadata":{"name":"t","namespace":"ns"},"spec":{"spec":{"devices":{"requests":[{"name":"gpu","exactly":{"deviceClassName":"shared-gpu","capacity":{"requests":{"memory":"10Gi"}}}}]}}}})");
  ASSERT_EQ(from.requests.size(), 1u);
  EXPECT_EQ(from.requests[0].device_class, "shared-gpu");
  EXPECT_EQ(from.requests[0].memory_bytes, 10 * kGiB);

  const core::DraDeviceClass device_class = kube::parse_device_class(
      R"({"metadata":{"name":"shared-gpu"},"spec":{"selectors":[{"cel":{"expression":"device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'gpu'"}}]}})");
  EXPECT_EQ(device_class.driver, "gpu.nvidia.com");

  const kube::PodInfo pod = kube::decode_pod_text(
      R"({"metadata":{"name":"p","namespace":"ns","uid":"u"},"spec":{"containers":[{"name":"c"}],
          "resourceClaims":[{"name":"gpu","resourceClaimTemplateName":"t"},{"name":"fixed","resourceClaimName":"c"}]},
          "status":{"resourceClaimStatuses":[{"name":"gpu","resourceClaimName":"p-gpu-x7k2"}]}})",
      kube::ResourceNames{});
  ASSERT_EQ(pod.resource_claims.size(), 2u);
  EXPECT_EQ(pod.resource_claims[0].template_name, "t");
  EXPECT_EQ(pod.resource_claims[0].claim, "p-gpu-x7k2");
  EXPECT_EQ(pod.resource_claims[1].claim, "c");
}

// Each status names the claim generated for the entry of its name, whatever the order; a status
// of no entry, or for an entry that names its claim, changes nothing. Many entries: the statuses
// are matched by name, not each against every entry.
TEST(DraDecode, GeneratedClaimsAreMatchedToTheirEntriesByName) {
  constexpr int kEntries = 20000;
  std::string claims;
  std::string statuses = R"({"name":"nobody","resourceClaimName":"stray"},)"
                         R"({"name":"fixed","resourceClaimName":"not-this"})";
  for (int i = 0; i < kEntries; ++i) {
    claims += fmt::format(R"({{"name":"e{}","resourceClaimTemplateName":"t"}},)", i);
    statuses += fmt::format(R"(,{{"name":"e{}","resourceClaimName":"p-e{}-gen"}})",
                            kEntries - 1 - i, kEntries - 1 - i);
  }
  claims +=
      R"({"name":"fixed","resourceClaimName":"c"},{"name":"twice","resourceClaimTemplateName":"t"},{"name":"twice","resourceClaimTemplateName":"t"})";
  statuses += R"(,{"name":"twice","resourceClaimName":"p-twice-gen"})";
  const kube::PodInfo pod = kube::decode_pod_text(
      fmt::format(
          R"({{"metadata":{{"name":"p","namespace":"ns","uid":"u"}},"spec":{{"containers":[{{"name":"c"}}],"resourceClaims":[{}]}},"status":{{"resourceClaimStatuses":[{}]}}}})",
          claims, statuses),
      kube::ResourceNames{});
  ASSERT_EQ(pod.resource_claims.size(), static_cast<std::size_t>(kEntries + 3));
  for (int i = 0; i < kEntries; ++i) {
    ASSERT_EQ(pod.resource_claims[static_cast<std::size_t>(i)].claim, fmt::format("p-e{}-gen", i));
  }
  EXPECT_EQ(pod.resource_claims[kEntries].claim, "c");
  EXPECT_EQ(pod.resource_claims[kEntries + 1].claim, "p-twice-gen");
  EXPECT_EQ(pod.resource_claims[kEntries + 2].claim, "p-twice-gen");
}

TEST(DraDecode, RefusesObjectsOfTheWrongShape) {
  EXPECT_THROW(kube::parse_resource_slice("[]"), kube::BadInput);
  EXPECT_THROW(kube::parse_resource_slice(R"({"metadata":{"name":"s"}})"), kube::BadInput);
  EXPECT_THROW(kube::parse_resource_claim(R"({"metadata":{}})"), kube::BadInput);
  EXPECT_THROW(kube::parse_resource_claim("{"), kube::BadInput);
}

using DraModel = testing::DraModelTest;

TEST_F(DraModel, DevicesBecomeGpusOfTheirNode) {
  model.upsert_node(plain_node("n1"));
  slice(slice_json("n1-gpus", "n1", "n1", {"80Gi", "80Gi"}));
  const core::NodeState* node = model.find_node("n1");
  ASSERT_NE(node, nullptr);
  EXPECT_EQ(node->gpu_count(), 2);
  EXPECT_EQ(node->spec().memory_per_gpu, 80);
  EXPECT_EQ(node->spec().gpu_model, "NVIDIA A100-SXM4-80GB");
  // The Node object arriving again (a heartbeat) keeps them.
  model.upsert_node(plain_node("n1"));
  EXPECT_EQ(model.find_node("n1")->gpu_count(), 2);
  EXPECT_EQ(model.effective_spec(plain_node("n1")), model.find_node("n1")->spec());
  EXPECT_TRUE(warnings().empty());
}

TEST_F(DraModel, SlicesBeforeTheNodeAttachWhenItArrives) {
  slice(slice_json("n1-gpus", "n1", "n1", {"40Gi"}));
  claim(claim_json("c1", "n1", {{"gpu-0", "10Gi"}}, "p1"));
  model.upsert_node(plain_node("n1"));
  EXPECT_EQ(model.find_node("n1")->gpus()[0].used, 10);
}

TEST_F(DraModel, ClaimsHoldConsumedCapacityOrTheWholeDevice) {
  model.upsert_node(plain_node("n1"));
  slice(slice_json("n1-gpus", "n1", "n1", {"40Gi", "40Gi"}));
  claim(claim_json("a", "n1", {{"gpu-0", "10Gi"}}, "pa"));
  claim(claim_json("b", "n1", {{"gpu-0", "5000Mi"}}, "pb"));  // rounds up to 5 GiB
  claim(claim_json("whole", "n1", {{"gpu-1", ""}}, "pw"));
  const core::NodeState* node = model.find_node("n1");
  EXPECT_EQ(node->gpus()[0].used, 15);
  EXPECT_EQ(node->gpus()[1].used, 40);
  const auto held = model.dra().holdings_on("n1");
  ASSERT_EQ(held.size(), 3u);
  EXPECT_EQ(held[0].claim, "ml/a");
  EXPECT_EQ(held[0].pod, "ml/pa");
  // A claim deleted gives its memory back.
  model.update_dra([](core::DraState& dra) { dra.remove_claim("ml/a"); });
  EXPECT_EQ(model.find_node("n1")->gpus()[0].used, 5);
}

TEST_F(DraModel, OnlyTheNewestGenerationOfAPoolCounts) {
  model.upsert_node(plain_node("n1"));
  slice(slice_json("n1-old", "n1", "n1", {"40Gi"}, 1));
  slice(slice_json("n1-new", "n1", "n1", {"80Gi", "80Gi"}, 2));
  EXPECT_EQ(model.find_node("n1")->gpu_count(), 2);
  EXPECT_EQ(model.find_node("n1")->spec().memory_per_gpu, 80);
  model.update_dra([](core::DraState& dra) { dra.remove_slice("n1-new"); });
  EXPECT_EQ(model.find_node("n1")->gpu_count(), 1);
}

TEST_F(DraModel, AMultiSlicePoolCountsOnceComplete) {
  model.upsert_node(plain_node("n1"));
  slice(slice_json("n1-b", "n1", "n1", {"80Gi"}, 1, 2, true, "gpu.nvidia.com", 1));
  EXPECT_EQ(model.find_node("n1")->gpu_count(), 0) << "1 of 2 slices: incomplete";
  ASSERT_EQ(warnings().size(), 1u);
  EXPECT_NE(warnings()[0].find("incomplete"), std::string::npos);
  slice(slice_json("n1-a", "n1", "n1", {"80Gi"}, 1, 2));
  EXPECT_EQ(model.find_node("n1")->gpu_count(), 2);
  // Slices by name: n1-a's gpu-0 is GPU 0, n1-b's gpu-1 is GPU 1.
  const auto gpus = model.dra().gpus_of("n1");
  ASSERT_EQ(gpus.size(), 2u);
  EXPECT_EQ(gpus[0].device, "gpu-0");
  EXPECT_EQ(gpus[1].device, "gpu-1");
  EXPECT_TRUE(warnings().empty());
}

TEST_F(DraModel, BadInputIsNamedAndLeavesTheRestAlone) {
  model.upsert_node(plain_node("good"));
  model.upsert_node(plain_node("n2"));
  model.upsert_node(plain_node("n3"));
  slice(slice_json("good-gpus", "good", "good", {"40Gi"}));
  claim(claim_json("fine", "good", {{"gpu-0", "8Gi"}}, "p"));
  // An unparseable capacity: that device is skipped, its sibling counts.
  slice(slice_json("n2-gpus", "n2", "n2", {"eighty", "40Gi"}));
  // A pool whose slices disagree on resourceSliceCount.
  slice(slice_json("n3-a", "n3", "n3", {"40Gi"}, 1, 2));
  slice(slice_json("n3-b", "n3", "n3", {"40Gi"}, 1, 3, true, "gpu.nvidia.com", 1));
  // A claim naming a device no slice has, and one allocated on a node that is gone.
  claim(claim_json("ghost", "good", {{"gpu-7", "8Gi"}}, "q"));
  slice(slice_json("gone-gpus", "gone", "gone", {"40Gi"}));
  claim(claim_json("orphan", "gone", {{"gpu-0", "8Gi"}}, "r"));

  EXPECT_EQ(model.find_node("good")->gpus()[0].used, 8);
  EXPECT_EQ(model.find_node("n2")->gpu_count(), 1);
  EXPECT_EQ(model.find_node("n3")->gpu_count(), 0);
  const auto found = warnings();
  auto mentions = [&](std::string_view a, std::string_view b) {
    return std::any_of(found.begin(), found.end(), [&](const std::string& w) {
      return w.find(a) != std::string::npos && w.find(b) != std::string::npos;
    });
  };
  EXPECT_TRUE(mentions("n2-gpus", "gpu-0")) << fmt::format("{}", fmt::join(found, "\n"));
  EXPECT_TRUE(mentions("n3-", "disagrees"));
  EXPECT_TRUE(mentions("ml/ghost", "gpu-7"));
  EXPECT_TRUE(mentions("ml/orphan", "gone"));
  EXPECT_EQ(found.size(), 4u) << fmt::format("{}", fmt::join(found, "\n"));
}

TEST_F(DraModel, DevicePluginNodesAreLeftAlone) {
  core::NodeSpec plugin = plain_node("dp");
  plugin.gpu_count = 4;
  plugin.memory_per_gpu = 16;
  model.upsert_node(plugin);
  slice(slice_json("dp-gpus", "dp", "dp", {"80Gi"}));
  EXPECT_EQ(model.find_node("dp")->gpu_count(), 4);
  EXPECT_EQ(model.find_node("dp")->spec().memory_per_gpu, 16);
}

TEST_F(DraModel, OtherDriversAndUnitsAreConfigurable) {
  model.upsert_node(plain_node("n1"));
  slice(slice_json("amd", "n1", "n1", {"64Gi"}, 1, 1, true, "gpu.amd.com"));
  EXPECT_EQ(model.find_node("n1")->gpu_count(), 0);
  model.update_dra([](core::DraState& dra) { dra.set_config({"gpu.amd.com", 1 << 20}); });
  EXPECT_EQ(model.find_node("n1")->gpu_count(), 1);
  EXPECT_EQ(model.find_node("n1")->spec().memory_per_gpu, 64 * 1024) << "MiB";
}

TEST_F(DraModel, FirstFitFollowsTheAllocatorsOrder) {
  model.upsert_node(plain_node("n1"));
  slice(slice_json("n1-gpus", "n1", "n1", {"40Gi", "40Gi", "40Gi"}));
  claim(claim_json("a", "n1", {{"gpu-0", "30Gi"}}, "pa"));
  const core::NodeState& node = *model.find_node("n1");
  core::DraRequest request;
  request.device_class = "gpu.nvidia.com";
  request.memory_bytes = 20 * kGiB;
  // gpu-0 has 10 free: the first that fits is gpu-1.
  auto takes = model.dra().first_fit(node, std::span(&request, 1));
  ASSERT_TRUE(takes);
  EXPECT_EQ(*takes, (std::vector<core::GpuTake>{{1, 20}}));
  // Two devices: distinct ones.
  request.count = 2;
  takes = model.dra().first_fit(node, std::span(&request, 1));
  ASSERT_TRUE(takes);
  EXPECT_EQ(*takes, (std::vector<core::GpuTake>{{1, 20}, {2, 20}}));
  // Two requests of 20 each, 1 device: the second shares gpu-1 with the first.
  std::vector<core::DraRequest> two(2, request);
  two[0].count = two[1].count = 1;
  takes = model.dra().first_fit(node, two);
  ASSERT_TRUE(takes);
  EXPECT_EQ(*takes, (std::vector<core::GpuTake>{{1, 20}, {1, 20}}));
  // Three devices of 20: gpu-0 cannot take one.
  request.count = 3;
  EXPECT_FALSE(model.dra().first_fit(node, std::span(&request, 1)));
  // Without a memory request a device is taken whole.
  request.count = 1;
  request.memory_bytes.reset();
  takes = model.dra().first_fit(node, std::span(&request, 1));
  ASSERT_TRUE(takes);
  EXPECT_EQ(*takes, (std::vector<core::GpuTake>{{1, 40}}));
  // Another driver's class is not ours: nothing to take.
  request.device_class = "nic.example.com";
  takes = model.dra().first_fit(node, std::span(&request, 1));
  ASSERT_TRUE(takes);
  EXPECT_TRUE(takes->empty());
}

TEST_F(DraModel, AnExclusiveDeviceIsTakenOnlyWhileNothingHoldsIt) {
  model.upsert_node(plain_node("n1"));
  slice(slice_json("n1-gpus", "n1", "n1", {"40Gi", "40Gi"}, 1, 1, /*shareable=*/false));
  claim(claim_json("a", "n1", {{"gpu-0", ""}}, "pa"));
  core::DraRequest request;
  request.device_class = "gpu.nvidia.com";
  request.memory_bytes = 1 * kGiB;  // ignored: the device is not shareable
  const auto takes = model.dra().first_fit(*model.find_node("n1"), std::span(&request, 1));
  ASSERT_TRUE(takes);
  EXPECT_EQ(*takes, (std::vector<core::GpuTake>{{1, 40}}));
}

}  // namespace
}  // namespace gpushare
