// DRA devices as kube's allocator sees them: GPUs of several sizes on one node, MIG devices a
// DeviceClass leaves out, claims counted by device, what claims hold on one device clamped as a
// sum, the cost of an event as a function of what it changed, and a learned demand bounded.

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <limits>
#include <optional>
#include <string>

#include "gpushare/core/cluster_model.h"
#include "gpushare/kube/dra_objects.h"
#include "gpushare/kube/pod_dra_demand.h"
#include "gpushare/kube/pod_info.h"
#include "support/dra_model.h"

namespace gpushare {
namespace {

using core::kGiB;
using testing::plain_node;

struct Device {
  std::string name, memory, type = "gpu";
  bool shareable = true;
};

std::string slice_of(std::string_view name, std::string_view node, std::vector<Device> devices) {
  std::string list;
  for (const Device& d : devices) {
    if (!list.empty()) list += ",";
    list += fmt::format(
        R"({{"name":"{}","allowMultipleAllocations":{},"attributes":{{"productName":{{"string":"NVIDIA A100-SXM4-80GB"}},"type":{{"string":"{}"}}}},"capacity":{{"memory":{{"value":"{}"}}}}}})",
        d.name, d.shareable ? "true" : "false", d.type, d.memory);
  }
  return fmt::format(
      R"({{"apiVersion":"resource.k8s.io/v1","kind":"ResourceSlice","metadata":{{"name":"{}"}},"spec":{{"driver":"gpu.nvidia.com","nodeName":"{}","pool":{{"name":"{}","generation":1,"resourceSliceCount":1}},"devices":[{}]}}}})",
      name, node, node, list);
}

// A claim allocated with `results` (pool, device, consumed), its selector naming `selected`.
std::string allocated_claim(std::string_view name, std::string_view selected,
                            std::vector<std::array<std::string, 3>> results) {
  std::string list;
  for (const auto& [pool, device, consumed] : results) {
    if (!list.empty()) list += ",";
    list += fmt::format(
        R"({{"request":"gpu","driver":"gpu.nvidia.com","pool":"{}","device":"{}","consumedCapacity":{{"memory":"{}"}}}})",
        pool, device, consumed);
  }
  return fmt::format(
      R"({{"metadata":{{"name":"{}","namespace":"ml"}},"spec":{{"devices":{{"requests":[{{"name":"gpu","exactly":{{"deviceClassName":"gpu.nvidia.com"}}}}]}}}},"status":{{"allocation":{{"devices":{{"results":[{}]}},"nodeSelector":{{"nodeSelectorTerms":[{{"matchFields":[{{"key":"metadata.name","operator":"In","values":["{}"]}}]}}]}}}},"reservedFor":[{{"resource":"pods","name":"p-{}"}}]}}}})",
      name, list, selected, name);
}

core::DraRequest ask(std::string device_class, std::int64_t memory_gib) {
  core::DraRequest request;
  request.device_class = std::move(device_class);
  request.memory_bytes = memory_gib * kGiB;
  return request;
}

using DraDevices = testing::DraModelTest;

TEST_F(DraDevices, GpusOfDifferentSizesKeepTheirOwnCapacity) {
  model.upsert_node(plain_node("n1"));
  slice(slice_of("n1-gpus", "n1", {{"gpu-0", "80Gi"}, {"gpu-1", "16Gi"}}));
  const core::NodeState& node = *model.find_node("n1");
  ASSERT_EQ(node.gpu_count(), 2);
  EXPECT_EQ(node.gpus()[0].capacity, 80);
  EXPECT_EQ(node.gpus()[1].capacity, 16);
  EXPECT_EQ(node.total_capacity(), 96);
  EXPECT_EQ(node.spec().memory_per_gpu, 80) << "the biggest single-GPU ask the node takes";
  // A 50 GiB and a 30 GiB claim: kube's allocator puts both on gpu-0.
  const std::vector<core::DraRequest> both = {ask("gpu.nvidia.com", 50), ask("gpu.nvidia.com", 30)};
  const auto takes = model.dra().first_fit(node, both);
  ASSERT_TRUE(takes);
  EXPECT_EQ(*takes, (std::vector<core::GpuTake>{{0, 50}, {0, 30}}));
}

TEST_F(DraDevices, ADeviceClassSelectingFullGpusLeavesMigDevicesOut) {
  model.upsert_node(plain_node("n1"));
  slice(slice_of("n1-gpus", "n1",
                 {{"gpu-0", "80Gi", "gpu"},
                  {"gpu-1-mig-0", "10Gi", "mig", false},
                  {"gpu-1-mig-1", "40Gi", "mig", false}}));
  device_class(
      R"({"metadata":{"name":"gpu.nvidia.com"},"spec":{"selectors":[{"cel":{"expression":"device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'gpu'"}}]}})");
  const core::DraDeviceClass* full = model.dra().find_class("gpu.nvidia.com");
  ASSERT_NE(full, nullptr);
  EXPECT_EQ(full->driver, "gpu.nvidia.com");
  EXPECT_EQ(full->attributes,
            (std::vector<core::DraAttributeMatch>{{"gpu.nvidia.com/type", "gpu"}}));
  EXPECT_TRUE(full->unread.empty());
  const core::NodeState& node = *model.find_node("n1");
  ASSERT_EQ(node.gpu_count(), 3);
  EXPECT_EQ(node.gpus()[0].capacity, 80);
  EXPECT_EQ(node.gpus()[1].capacity, 10);
  EXPECT_EQ(node.gpus()[2].capacity, 40);
  // 20 GiB through the class: on the full GPU, never on a MIG device.
  const core::DraRequest twenty = ask("gpu.nvidia.com", 20);
  auto takes = model.dra().first_fit(node, std::span(&twenty, 1));
  ASSERT_TRUE(takes);
  EXPECT_EQ(*takes, (std::vector<core::GpuTake>{{0, 20}}));
  // Two full GPUs through the class: the node has one.
  core::DraRequest two = twenty;
  two.count = 2;
  EXPECT_FALSE(model.dra().first_fit(node, std::span(&two, 1)));
  // A class for MIG devices takes the first MIG device, whole (not shareable).
  device_class(
      R"({"metadata":{"name":"mig.nvidia.com"},"spec":{"selectors":[{"cel":{"expression":"device.driver == \"gpu.nvidia.com\" && device.attributes[\"gpu.nvidia.com\"][\"type\"] == \"mig\""}}]}})");
  const core::DraRequest mig = ask("mig.nvidia.com", 5);
  takes = model.dra().first_fit(node, std::span(&mig, 1));
  ASSERT_TRUE(takes);
  EXPECT_EQ(*takes, (std::vector<core::GpuTake>{{1, 10}}));
  EXPECT_TRUE(warnings().empty());
}

TEST_F(DraDevices, ASelectorClauseNotReadIsNamed) {
  device_class(
      R"({"metadata":{"name":"big"},"spec":{"selectors":[{"cel":{"expression":"device.driver == 'gpu.nvidia.com' && device.capacity['gpu.nvidia.com'].memory.compareTo(quantity('40Gi')) >= 0"}}]}})");
  const core::DraDeviceClass* big = model.dra().find_class("big");
  ASSERT_NE(big, nullptr);
  EXPECT_EQ(big->driver, "gpu.nvidia.com");
  ASSERT_EQ(big->unread.size(), 1u);
  EXPECT_TRUE(warned("DeviceClass big", "not evaluated"));
  model.update_dra([](core::DraState& dra) { dra.remove_class("big"); });
  EXPECT_TRUE(warnings().empty());
}

TEST_F(DraDevices, AClaimCountsOnTheNodeOfItsDevice) {
  model.upsert_node(plain_node("a"));
  model.upsert_node(plain_node("b"));
  slice(slice_of("a-gpus", "a", {{"gpu-0", "40Gi"}}));
  slice(slice_of("b-gpus", "b", {{"gpu-0", "40Gi"}}));
  // The selector names node a; the device is b's.
  claim(allocated_claim("stray", "a", {{"b", "gpu-0", "10Gi"}}));
  EXPECT_EQ(model.find_node("a")->gpus()[0].used, 0);
  EXPECT_EQ(model.find_node("b")->gpus()[0].used, 10);
  EXPECT_TRUE(warned("ml/stray", "published by node b"))
      << fmt::format("{}", fmt::join(warnings(), "\n"));
  model.update_dra([](core::DraState& dra) { dra.remove_claim("ml/stray"); });
  EXPECT_EQ(model.find_node("b")->gpus()[0].used, 0);
  EXPECT_TRUE(warnings().empty());
}

TEST_F(DraDevices, WhatClaimsHoldOnADeviceIsClampedAsASum) {
  model.upsert_node(plain_node("n1"));
  slice(slice_of("n1-gpus", "n1", {{"gpu-0", "40Gi"}}));
  claim(allocated_claim("twice", "n1", {{"n1", "gpu-0", "25Gi"}, {"n1", "gpu-0", "25Gi"}}));
  EXPECT_EQ(model.find_node("n1")->gpus()[0].used, 40);
  const auto held = model.dra().holdings_on("n1");
  ASSERT_EQ(held.size(), 2u);
  EXPECT_EQ(held[0].amount + held[1].amount, 40);
  EXPECT_TRUE(warned("ml/twice", "more than its capacity 40"))
      << fmt::format("{}", fmt::join(warnings(), "\n"));
}

TEST_F(DraDevices, AnEventCostsWhatItChanged) {
  for (int i = 0; i < 50; ++i) {
    const std::string node = fmt::format("n{}", i);
    model.upsert_node(plain_node(node));
    slice(slice_of(node + "-gpus", node, {{"gpu-0", "40Gi"}}));
    claim(allocated_claim(node + "-c", node, {{node, "gpu-0", "10Gi"}}));
  }
  model.update_dra(
      [](core::DraState& dra) { (void)dra.take_new_problems([](auto) { return true; }); });
  const std::uint64_t views = model.dra().views_built();
  const std::uint64_t claims = model.dra().claims_checked();
  // A claim event: no node's view, that claim alone.
  claim(allocated_claim("n7-d", "n7", {{"n7", "gpu-0", "45Gi"}}));
  EXPECT_EQ(model.dra().views_built(), views);
  EXPECT_EQ(model.dra().claims_checked(), claims + 1);
  // Its problem (n7's GPU over capacity) is new; reading the problems works nothing out.
  std::vector<core::DraWarning> fresh;
  model.update_dra(
      [&](core::DraState& dra) { fresh = dra.take_new_problems([](auto) { return true; }); });
  ASSERT_EQ(fresh.size(), 1u);
  EXPECT_EQ(fresh[0].node, "n7");
  EXPECT_EQ(warnings().size(), 1u);
  EXPECT_EQ(model.dra().views_built(), views);
  // A slice event: that node's view, and the claims in its pool.
  slice(slice_of("n3-gpus", "n3", {{"gpu-0", "80Gi"}}));
  EXPECT_EQ(model.dra().views_built(), views + 1);
  EXPECT_EQ(model.dra().claims_checked(), claims + 2);
  model.update_dra(
      [&](core::DraState& dra) { fresh = dra.take_new_problems([](auto) { return true; }); });
  EXPECT_TRUE(fresh.empty()) << "n7's problem stands; nothing new";
}

TEST_F(DraDevices, ANodeGetsAtMostTheBoundOfGpus) {
  model.upsert_node(plain_node("n1"));
  std::vector<Device> many;
  for (std::size_t i = 0; i < core::kMaxDraGpusPerNode + 5; ++i)
    many.push_back({fmt::format("gpu-{}", i), "1Gi"});
  slice(slice_of("n1-gpus", "n1", many));
  EXPECT_EQ(static_cast<std::size_t>(model.find_node("n1")->gpu_count()), core::kMaxDraGpusPerNode);
  ASSERT_EQ(warnings().size(), 1u);
  EXPECT_NE(warnings()[0].find("gpu-1024"), std::string::npos) << warnings()[0];
}

TEST(DraLearnedDemand, AHugeCountIsBounded) {
  core::ClusterModel model;
  model.update_dra([](core::DraState& dra) {
    dra.upsert_claim(kube::parse_resource_claim(
        R"({"metadata":{"name":"c","namespace":"ml"},"spec":{"devices":{"requests":[{"name":"a","exactly":{"deviceClassName":"gpu.nvidia.com","count":2147483647,"capacity":{"requests":{"memory":"10Gi"}}}},{"name":"b","exactly":{"deviceClassName":"gpu.nvidia.com","count":2147483647,"capacity":{"requests":{"memory":"10Gi"}}}}]}}})"));
  });
  kube::PodInfo pod;
  pod.namespace_name = "ml";
  pod.name = "p";
  pod.resource_claims.push_back({"gpu", "c", ""});
  const core::PodDemand demand = kube::learned_demand(model, pod);
  EXPECT_EQ(demand.per_gpu, 10);
  EXPECT_GT(demand.gpu_count, 0);
  EXPECT_LE(demand.gpu_count, 32);
}

// Each way a pod names a claim, resolved or not: a claim by name, a template whose generated
// claim the pod's status does not name yet, and a generated claim the model has not seen (its
// template stands in for it).
TEST(DraUnresolvedClaim, NamesTheFirstClaimTheModelCannotResolve) {
  core::DraState dra;
  dra.upsert_claim(kube::parse_resource_claim(
      R"({"metadata":{"name":"known","namespace":"ml"},"spec":{"devices":{"requests":[]}}})"));
  dra.upsert_template(kube::parse_claim_template(
      R"({"metadata":{"name":"t","namespace":"ml"},"spec":{"spec":{"devices":{"requests":[]}}}})"));
  kube::PodInfo pod;
  pod.namespace_name = "ml";
  pod.name = "p";
  EXPECT_EQ(kube::unresolved_dra_claim(dra, pod), std::nullopt);
  pod.resource_claims = {{"a", "known", ""}, {"b", "", "t"}, {"c", "t-generated", "t"}};
  EXPECT_EQ(kube::unresolved_dra_claim(dra, pod), std::nullopt);
  pod.resource_claims.push_back({"d", "missing", ""});
  EXPECT_EQ(kube::unresolved_dra_claim(dra, pod), "ResourceClaim ml/missing");
  pod.resource_claims.insert(pod.resource_claims.begin(), {"e", "", "no-such-template"});
  EXPECT_EQ(kube::unresolved_dra_claim(dra, pod), "ResourceClaimTemplate ml/no-such-template");
  // The same names in another namespace are other objects.
  pod.namespace_name = "other";
  pod.resource_claims = {{"a", "known", ""}};
  EXPECT_EQ(kube::unresolved_dra_claim(dra, pod), "ResourceClaim other/known");
}

}  // namespace
}  // namespace gpushare
