// Claims of GPU memory from outside (annotations, limits) that no GPU can hold: the model
// counts each as at most a full GPU (or node), never wraps, never goes negative.

#include <gtest/gtest.h>

#include <cstdint>

#include "gpushare/core/cluster_model.h"
#include "gpushare/core/fit.h"
#include "gpushare/kube/claim_check.h"
#include "gpushare/kube/pod_info.h"

namespace gpushare {
namespace {

using core::Units;

core::NodeSpec gpu_node(std::string name, int gpus, Units per_gpu) {
  core::NodeSpec spec;
  spec.name = std::move(name);
  spec.gpu_count = gpus;
  spec.memory_per_gpu = per_gpu;
  return spec;
}

core::PodAllocation holder(std::string uid, std::vector<int> gpus, Units amount) {
  core::PodAllocation pod;
  pod.uid = uid;
  pod.namespace_name = "default";
  pod.name = "pod-" + uid;
  pod.node = "n1";
  pod.gpus = std::move(gpus);
  pod.per_gpu = amount;
  return pod;
}

kube::Json bound_pod(const std::string& pod_annotation) {
  return kube::Json{
      {"metadata",
       {{"name", "huge"},
        {"namespace", "ml"},
        {"uid", "u-huge"},
        {"annotations",
         {{"ALIYUN_COM_GPU_MEM_IDX", "0"}, {"ALIYUN_COM_GPU_MEM_POD", pod_annotation}}}}},
      {"spec",
       {{"nodeName", "n1"},
        {"containers",
         kube::Json::array(
             {{{"name", "main"}, {"resources", {{"limits", {{"aliyun.com/gpu-mem", "4"}}}}}}})}}},
      {"status", {{"phase", "Running"}}}};
}

// Two pods claiming int64's maximum on one GPU summed to -2 and the GPU was offered again.
TEST(AbsurdClaims, TwoMaximalClaimsOnOneGpuNeitherWrapNorFreeIt) {
  core::ClusterModel model;
  model.upsert_node(gpu_node("n1", 2, 16));
  model.add_pod(holder("a", {0}, INT64_MAX));
  model.add_pod(holder("b", {0}, INT64_MAX));
  const core::NodeState& node = *model.find_node("n1");
  EXPECT_GE(node.gpus()[0].used, 16);
  EXPECT_EQ(node.gpus()[0].free(), 0);
  EXPECT_EQ(node.largest_free(), 16);  // only GPU 1 is offered
  EXPECT_GT(node.total_used(), 0);
  EXPECT_GT(model.total_used(), 0);
  core::PodDemand demand;
  demand.per_gpu = 1;
  EXPECT_EQ(core::gpus_that_fit(node, demand), std::vector<int>{1});
  // And removing them leaves the GPU exactly empty again.
  model.remove_pod("a");
  model.remove_pod("b");
  EXPECT_EQ(model.find_node("n1")->gpus()[0].used, 0);
  EXPECT_EQ(model.find_node("n1")->total_free(), 32);
}

TEST(AbsurdClaims, AClaimCountsAtMostItsGpu) {
  core::ClusterModel model;
  model.upsert_node(gpu_node("n1", 2, 16));
  model.add_pod(holder("small", {0}, 6));
  model.add_pod(holder("huge", {0}, INT64_MAX - 3));
  const core::NodeState& node = *model.find_node("n1");
  EXPECT_EQ(node.gpus()[0].used, 6 + 16);
  EXPECT_EQ(node.gpus()[1].used, 0);
  EXPECT_EQ(model.uncounted_claim(*model.find_pod("huge")), INT64_MAX - 3 - 16);
  EXPECT_EQ(model.uncounted_claim(*model.find_pod("small")), 0);
  // The small pod leaves: the huge one still fills the GPU.
  model.remove_pod("small");
  EXPECT_EQ(model.find_node("n1")->gpus()[0].used, 16);
  EXPECT_EQ(model.find_node("n1")->gpus()[0].free(), 0);
}

TEST(AbsurdClaims, AnUnindexedClaimCountsAtMostTheNode) {
  core::ClusterModel model;
  model.upsert_node(gpu_node("n1", 2, 16));
  model.add_pod(holder("a", {}, INT64_MAX));
  model.add_pod(holder("b", {}, INT64_MAX));
  model.add_pod(holder("c", {7}, INT64_MAX));  // an index the node does not have
  const core::NodeState& node = *model.find_node("n1");
  EXPECT_EQ(node.unindexed_used(), 3 * 32);
  EXPECT_EQ(node.total_free(), 0);
  EXPECT_EQ(node.largest_free(), 0);
  EXPECT_EQ(model.total_used(), 3 * 32);
}

TEST(AbsurdClaims, ANodeRespecReCountsTheClaimAgainstTheNewCapacity) {
  core::ClusterModel model;
  model.upsert_node(gpu_node("n1", 2, 16));
  model.add_pod(holder("a", {0}, 1'000'000));
  EXPECT_EQ(model.find_node("n1")->gpus()[0].used, 16);
  model.upsert_node(gpu_node("n1", 2, 80));
  EXPECT_EQ(model.find_node("n1")->gpus()[0].used, 80);
  model.remove_pod("a");
  EXPECT_EQ(model.find_node("n1")->gpus()[0].used, 0);
}

TEST(AbsurdClaims, TotalsSaturateInsteadOfWrapping) {
  core::PodAllocation pod = holder("a", {0, 1, 2}, INT64_MAX / 2);
  EXPECT_EQ(pod.total(), INT64_MAX);
  core::ClusterModel model;
  for (int i = 0; i < 3; ++i)
    model.upsert_node(gpu_node("n" + std::to_string(i), 1, INT64_MAX / 2));
  EXPECT_EQ(model.total_capacity(), INT64_MAX);
}

TEST(AbsurdClaims, AnOutOfRangePodAnnotationIsClampedWithAWarningNamingThePod) {
  for (const std::string value : {"9223372036854775807", "99999999999999999999999999"}) {
    const kube::PodInfo pod = kube::parse_pod(bound_pod(value), kube::ResourceNames{});
    EXPECT_EQ(pod.effective_request(), core::kMaxGpuMemoryClaim) << value;
    EXPECT_NE(pod.annotation_warning.find("ALIYUN_COM_GPU_MEM_POD"), std::string::npos) << value;
    core::ClusterModel model;
    model.upsert_node(gpu_node("n1", 2, 16));
    const auto allocation = kube::allocation_of(pod);
    ASSERT_TRUE(allocation);
    const std::string warning = kube::claim_warning(model, pod, *allocation);
    EXPECT_NE(warning.find("pod ml/huge"), std::string::npos) << warning;
    EXPECT_NE(warning.find("counted as 16"), std::string::npos) << warning;
    model.add_pod(*allocation);
    EXPECT_EQ(model.find_node("n1")->gpus()[0].used, 16);
  }
}

TEST(AbsurdClaims, PlausibleAnnotationsGiveNoWarning) {
  const kube::PodInfo pod = kube::parse_pod(bound_pod("12"), kube::ResourceNames{});
  EXPECT_EQ(pod.effective_request(), 12);
  EXPECT_TRUE(pod.annotation_warning.empty());
  core::ClusterModel model;
  model.upsert_node(gpu_node("n1", 2, 16));
  EXPECT_EQ(kube::claim_warning(model, pod, *kube::allocation_of(pod)), "");
}

}  // namespace
}  // namespace gpushare
