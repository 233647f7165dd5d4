#include <gtest/gtest.h>

#include "gpushare/kube/node_info.h"
#include "gpushare/kube/pod_info.h"

namespace gpushare::kube {
namespace {

const ResourceNames kNames;

Json node_json(Json capacity) {
  return Json{{"metadata", {{"name", "gpu-1"}, {"labels", {{"nvidia.com/gpu.product", "T4"}}}}},
              {"status",
               {{"capacity", capacity},
                {"addresses", Json::array({{{"type", "InternalIP"}, {"address", "10.0.0.7"}}})}}}};
}

TEST(ParseNode, ReadsCapacity) {
  const auto spec =
      parse_node(node_json({{"aliyun.com/gpu-mem", "32"}, {"aliyun.com/gpu-count", "2"}}), kNames);
  EXPECT_EQ(spec.name, "gpu-1");
  EXPECT_EQ(spec.gpu_count, 2);
  EXPECT_EQ(spec.memory_per_gpu, 16);
  EXPECT_EQ(spec.gpu_model, "T4");
  EXPECT_EQ(spec.address, "10.0.0.7");
  EXPECT_TRUE(spec.misconfiguration.empty());
}

TEST(ParseNode, SuffixedQuantities) {
  const auto spec =
      parse_node(node_json({{"aliyun.com/gpu-mem", "16k"}, {"aliyun.com/gpu-count", "2"}}), kNames);
  EXPECT_EQ(spec.memory_per_gpu, 8000);
}

TEST(ParseNode, NonGpuNode) {
  const auto spec = parse_node(node_json({{"cpu", "4"}}), kNames);
  EXPECT_EQ(spec.gpu_count, 0);
  EXPECT_TRUE(spec.misconfiguration.empty());
}

TEST(ParseNode, InconsistentResourcesAreReportedNotThrown) {
  auto spec =
      parse_node(node_json({{"aliyun.com/gpu-mem", "32"}, {"aliyun.com/gpu-count", "0"}}), kNames);
  EXPECT_EQ(spec.gpu_count, 0);
  EXPECT_NE(spec.misconfiguration.find("aliyun.com/gpu-count is 0"), std::string::npos);
  spec =
      parse_node(node_json({{"aliyun.com/gpu-mem", "33"}, {"aliyun.com/gpu-count", "2"}}), kNames);
  EXPECT_NE(spec.misconfiguration.find("not divisible"), std::string::npos);
  spec =
      parse_node(node_json({{"aliyun.com/gpu-mem", "-4"}, {"aliyun.com/gpu-count", "2"}}), kNames);
  EXPECT_NE(spec.misconfiguration.find("negative"), std::string::npos);
  spec = parse_node(node_json({{"aliyun.com/gpu-mem", "32"}}), kNames);
  EXPECT_NE(spec.misconfiguration.find("missing"), std::string::npos);
}

TEST(ParseNode, CpuAndMemoryFromAllocatable) {
  Json node = node_json({{"cpu", "32"},
                         {"memory", "128Gi"},
                         {"aliyun.com/gpu-mem", "32"},
                         {"aliyun.com/gpu-count", "2"}});
  node["status"]["allocatable"] = {
      {"cpu", "31500m"}, {"memory", "120Gi"}, {"aliyun.com/gpu-mem", "30"}};
  const auto spec = parse_node(node, kNames);
  EXPECT_EQ(spec.cpu_milli, 31500);
  EXPECT_EQ(spec.memory, 120LL * 1024 * 1024 * 1024);
  // GPU parsing is unchanged: capacity first.
  EXPECT_EQ(spec.gpu_count, 2);
  EXPECT_EQ(spec.memory_per_gpu, 16);
}

TEST(ParseNode, CpuAndMemoryFallBackToCapacity) {
  // No allocatable at all, or allocatable without the resource: capacity.
  auto spec = parse_node(node_json({{"cpu", "4"}, {"memory", "16Gi"}}), kNames);
  EXPECT_EQ(spec.cpu_milli, 4000);
  EXPECT_EQ(spec.memory, 16LL * 1024 * 1024 * 1024);
  Json node = node_json({{"cpu", "4"}, {"memory", "1000"}});
  node["status"]["allocatable"] = {{"cpu", "3900m"}, {"memory", nullptr}};
  spec = parse_node(node, kNames);
  EXPECT_EQ(spec.cpu_milli, 3900);
  EXPECT_EQ(spec.memory, 1000);
  // Fractions round up: 0.5 bytes is 1.
  spec = parse_node(node_json({{"cpu", "0.0001"}, {"memory", "0.5"}}), kNames);
  EXPECT_EQ(spec.cpu_milli, 1);
  EXPECT_EQ(spec.memory, 1);
}

TEST(ParseNode, AbsentOrMalformedCpuAndMemoryAreNotTracked) {
  auto spec =
      parse_node(node_json({{"aliyun.com/gpu-mem", "32"}, {"aliyun.com/gpu-count", "2"}}), kNames);
  EXPECT_EQ(spec.cpu_milli, 0);
  EXPECT_EQ(spec.memory, 0);
  EXPECT_EQ(spec.gpu_count, 2);
  Json node = node_json({{"cpu", "8"},
                         {"memory", "8Gi"},
                         {"aliyun.com/gpu-mem", "32"},
                         {"aliyun.com/gpu-count", "2"}});
  node["status"]["allocatable"] = {{"cpu", "lots"}, {"memory", Json::array()}};
  spec = parse_node(node, kNames);
  EXPECT_EQ(spec.cpu_milli, 0);  // malformed allocatable: not tracked, not capacity
  EXPECT_EQ(spec.memory, 0);
  EXPECT_TRUE(spec.misconfiguration.empty());  // and no GPU complaint either
  EXPECT_EQ(spec.gpu_count, 2);
  node["status"]["allocatable"] = {{"cpu", "-2"}, {"memory", "8Ei"}};
  spec = parse_node(node, kNames);
  EXPECT_EQ(spec.cpu_milli, 0);
  EXPECT_EQ(spec.memory, 0);
}

TEST(ParseNode, NotANode) {
  EXPECT_THROW(parse_node(Json::array(), kNames), BadInput);
  EXPECT_THROW(parse_node(Json{{"metadata", {{"name", 3}}}}, kNames), BadInput);
  EXPECT_THROW(parse_node(Json{{"status", {}}}, kNames), BadInput);
}

Json pod_json() {
  return Json::parse(R"({
    "metadata": {"name": "p", "namespace": "ml", "uid": "u-1", "resourceVersion": "7"},
    "spec": {"nodeName": "gpu-1", "containers": [
      {"name": "a", "resources": {"limits": {"aliyun.com/gpu-mem": "3"}}},
      {"name": "b", "resources": {"limits": {"cpu": "1"}}},
      {"name": "c", "resources": {"requests": {"aliyun.com/gpu-mem": "2"}}}]},
    "status": {"phase": "Running"}})");
}

TEST(ParsePod, SumsContainerLimits) {
  const auto pod = parse_pod(pod_json(), kNames);
  EXPECT_EQ(pod.uid, "u-1");
  EXPECT_EQ(pod.key(), "ml/p");
  EXPECT_EQ(pod.node_name, "gpu-1");
  EXPECT_EQ(pod.request, 5);
  EXPECT_FALSE(pod.terminating);
  const auto allocation = allocation_of(pod);
  ASSERT_TRUE(allocation);
  EXPECT_TRUE(allocation->gpus.empty());  // bound without an index: counts on the node
  EXPECT_EQ(allocation->per_gpu, 5);
}

TEST(ParsePod, AnnotationsWin) {
  Json json = pod_json();
  json["metadata"]["annotations"] = {{"ALIYUN_COM_GPU_MEM_IDX", "1"},
                                     {"ALIYUN_COM_GPU_MEM_POD", "4"},
                                     {"ALIYUN_COM_GPU_MEM_ASSIGNED", "false"},
                                     {"ALIYUN_COM_GPU_MEM_ASSUME_TIME", "1700000000000000000"}};
  const auto pod = parse_pod(json, kNames);
  EXPECT_EQ(pod.gpu_index, 1);
  EXPECT_EQ(pod.effective_request(), 4);
  EXPECT_EQ(pod.assigned, false);
  const auto allocation = allocation_of(pod);
  ASSERT_TRUE(allocation);
  EXPECT_EQ(allocation->gpus, std::vector<int>{1});
  EXPECT_EQ(allocation->assume_time_ns, 1700000000000000000);
}

TEST(ParsePod, MalformedAnnotationsAreIgnored) {
  Json json = pod_json();
  json["metadata"]["annotations"] = {{"ALIYUN_COM_GPU_MEM_IDX", "x1"},
                                     {"ALIYUN_COM_GPU_MEM_POD", "-3"}};
  const auto pod = parse_pod(json, kNames);
  EXPECT_FALSE(pod.gpu_index);
  EXPECT_EQ(pod.effective_request(), 5);
}

TEST(ParsePod, WhatCountsAsUsed) {
  Json json = pod_json();
  json["status"]["phase"] = "Succeeded";
  EXPECT_FALSE(allocation_of(parse_pod(json, kNames)));
  json["status"]["phase"] = "Running";
  json["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z";
  const auto terminating = parse_pod(json, kNames);
  EXPECT_TRUE(terminating.terminating);
  EXPECT_TRUE(allocation_of(terminating));  // terminating pods keep their memory
  json["spec"].erase("nodeName");
  EXPECT_FALSE(allocation_of(parse_pod(json, kNames)));
}

Json cpu_only_pod_json() {
  return Json::parse(R"({
    "metadata": {"name": "exporter", "namespace": "monitoring", "uid": "u-2",
                 "annotations": {"ALIYUN_COM_GPU_MEM_IDX": "1", "ALIYUN_COM_GPU_MEM_ASSUME_TIME": "5"}},
    "spec": {"nodeName": "gpu-1", "containers": [
      {"name": "a", "resources": {"requests": {"cpu": "250m", "memory": "300Mi"}}}]},
    "status": {"phase": "Running"}})");
}

TEST(AllocationOf, CpuOnlyPodsHoldCpuAndMemoryButNoGpu) {
  const auto pod = parse_pod(cpu_only_pod_json(), kNames);
  EXPECT_FALSE(pod.wants_gpu());
  const auto allocation = allocation_of(pod);
  ASSERT_TRUE(allocation);
  EXPECT_EQ(allocation->uid, "u-2");
  EXPECT_EQ(allocation->node, "gpu-1");
  EXPECT_EQ(allocation->per_gpu, 0);
  EXPECT_TRUE(allocation->gpus.empty());  // a stale index annotation does not make it a GPU holder
  EXPECT_FALSE(allocation->holds_gpu());
  EXPECT_EQ(allocation->total(), 0);
  EXPECT_EQ(allocation->assume_time_ns, 0);
  EXPECT_EQ(allocation->cpu_milli, 250);
  EXPECT_EQ(allocation->memory, 300LL * 1024 * 1024);
  EXPECT_FALSE(allocation->assumed);
}

TEST(AllocationOf, CpuOnlyPodsFollowTheSameLifecycle) {
  Json json = cpu_only_pod_json();
  json["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z";
  EXPECT_TRUE(allocation_of(parse_pod(json, kNames)));  // terminating: still running
  json["status"]["phase"] = "Failed";
  EXPECT_FALSE(allocation_of(parse_pod(json, kNames)));
  json["status"]["phase"] = "Pending";
  json["spec"].erase("nodeName");
  EXPECT_FALSE(allocation_of(parse_pod(json, kNames)));  // not bound: holds nothing anywhere
  // A bound pod that asks for nothing at all is still recorded (it holds no resources).
  Json best_effort = Json::parse(R"({"metadata": {"name": "b", "uid": "u-3"},
    "spec": {"nodeName": "n", "containers": [{"name": "a"}]}})");
  const auto allocation = allocation_of(parse_pod(best_effort, kNames));
  ASSERT_TRUE(allocation);
  EXPECT_EQ(allocation->cpu_milli, 0);
  EXPECT_EQ(allocation->memory, 0);
  EXPECT_FALSE(allocation->holds_gpu());
}

TEST(AllocationOf, GpuPodsAlsoCarryCpuAndMemory) {
  Json json = pod_json();
  json["spec"]["containers"][1]["resources"]["requests"] = {{"memory", "2Gi"}};
  json["metadata"]["annotations"] = {{"ALIYUN_COM_GPU_MEM_IDX", "1"},
                                     {"ALIYUN_COM_GPU_MEM_POD", "4"}};
  const auto allocation = allocation_of(parse_pod(json, kNames));
  ASSERT_TRUE(allocation);
  EXPECT_EQ(allocation->gpus, std::vector<int>{1});
  EXPECT_EQ(allocation->per_gpu, 4);
  EXPECT_TRUE(allocation->holds_gpu());
  EXPECT_EQ(allocation->cpu_milli, 1000);  // container b's CPU limit
  EXPECT_EQ(allocation->memory, 2LL * 1024 * 1024 * 1024);
}

TEST(ParsePod, BadQuantitiesThrowWithContext) {
  Json json = pod_json();
  json["spec"]["containers"][0]["resources"]["limits"]["aliyun.com/gpu-mem"] = "-3";
  try {
    parse_pod(json, kNames);
    FAIL() << "expected BadInput";
  } catch (const BadInput& e) {
    EXPECT_NE(std::string(e.what()).find("ml/p container a"), std::string::npos) << e.what();
  }
  json["spec"]["containers"][0]["resources"]["limits"]["aliyun.com/gpu-mem"] = "1e40";
  EXPECT_THROW(parse_pod(json, kNames), BadInput);
  json["spec"]["containers"][0]["resources"]["limits"]["aliyun.com/gpu-mem"] = Json::array();
  EXPECT_THROW(parse_pod(json, kNames), BadInput);
  json["spec"]["containers"] = "nope";
  EXPECT_THROW(parse_pod(json, kNames), BadInput);
}

TEST(ParsePod, KeysAreCaseInsensitive) {
  const Json json = Json::parse(R"({"Metadata": {"Name": "p", "UID": "u"},
    "Spec": {"Containers": [{"Name": "a", "Resources": {"Limits": {"aliyun.com/gpu-mem": "2"}}}]}})");
  const auto pod = parse_pod(json, kNames);
  EXPECT_EQ(pod.uid, "u");
  EXPECT_EQ(pod.request, 2);
  EXPECT_EQ(pod.namespace_name, "default");
}

Json owner(std::string_view uid, Json controller = true) {
  return {{"apiVersion", "apps/v1"},
          {"kind", "ReplicaSet"},
          {"name", "web"},
          {"uid", uid},
          {"controller", std::move(controller)}};
}

TEST(ParsePod, ReadsTheControllerOwnerReference) {
  Json json = pod_json();
  EXPECT_FALSE(parse_pod(json, kNames).controller);  // none
  EXPECT_EQ(parse_pod(json, kNames).owner_uid(), "");
  json["metadata"]["ownerReferences"] = Json::array(
      {owner("other", false), owner("rs-1"), {{"kind", "Job"}, {"name", "j"}, {"uid", "job-1"}}});
  const auto pod = parse_pod(json, kNames);
  ASSERT_TRUE(pod.controller);
  EXPECT_EQ(*pod.controller, (OwnerRef{"ReplicaSet", "web", "rs-1"}));
  EXPECT_EQ(pod.owner_uid(), "rs-1");
  // Also from text, as the service's requests and the sync's watch decode it.
  const auto from_text = decode_pod_text(json.dump(), kNames);
  ASSERT_TRUE(from_text.controller);
  EXPECT_EQ(from_text.controller->uid, "rs-1");
}

TEST(ParsePod, NoControllerUnlessExactlyOneWellFormedEntrySaysSo) {
  const std::vector<Json> hostile = {
      Json::array({owner("a"), owner("b")}),              // two controllers: neither
      Json::array({owner("a", false)}),                   // an owner, not a controller
      Json::array({owner("a", "true")}),                  // controller not a boolean
      Json::array({owner("a", nullptr)}),                 // controller null
      Json::array({owner("")}),                           // a controller without a UID
      Json::array({{{"controller", true}, {"uid", 7}}}),  // uid not a string
      Json::array({"rs-1", 3, nullptr, Json::array()}),   // entries not objects
      Json("rs-1"),                                       // not a list
      Json({{"uid", "rs-1"}, {"controller", true}}),      // an object, not a list
      Json(nullptr),
  };
  for (const Json& owners : hostile) {
    Json json = pod_json();
    json["metadata"]["ownerReferences"] = owners;
    PodInfo pod;
    ASSERT_NO_THROW(pod = parse_pod(json, kNames)) << owners.dump();
    EXPECT_FALSE(pod.controller) << owners.dump();
    EXPECT_EQ(pod.request, 5) << owners.dump();  // the rest of the pod is read as ever
  }
  // Wrongly typed entries beside one good controller do not hide it.
  Json json = pod_json();
  json["metadata"]["ownerReferences"] = Json::array({7, owner("a", "yes"), owner("rs-1")});
  const auto pod = parse_pod(json, kNames);
  ASSERT_TRUE(pod.controller);
  EXPECT_EQ(pod.controller->uid, "rs-1");
}

TEST(BindAnnotations, ExactKeysAndDecimalValues) {
  const auto annotations = bind_annotations(2, 4, 16, 1234567890123);
  EXPECT_EQ(annotations.at("ALIYUN_COM_GPU_MEM_IDX"), "2");
  EXPECT_EQ(annotations.at("ALIYUN_COM_GPU_MEM_POD"), "4");
  EXPECT_EQ(annotations.at("ALIYUN_COM_GPU_MEM_DEV"), "16");
  EXPECT_EQ(annotations.at("ALIYUN_COM_GPU_MEM_ASSIGNED"), "false");
  EXPECT_EQ(annotations.at("ALIYUN_COM_GPU_MEM_ASSUME_TIME"), "1234567890123");
  EXPECT_EQ(annotations.size(), 5u);
}

TEST(UnhealthyConfigMap, ParsesIndicesAndRejectsGarbage) {
  const Json cm = {{"metadata", {{"name", "unhealthy-gpu-node-a"}, {"namespace", "kube-system"}}},
                   {"data", {{"gpus", "0, 2,,x,3 "}}}};
  const auto parsed = parse_unhealthy_configmap(cm);
  ASSERT_TRUE(parsed);
  EXPECT_EQ(parsed->node, "node-a");
  EXPECT_EQ(parsed->indices, (std::vector<int>{0, 2, 3}));
  EXPECT_EQ(parsed->rejected, std::vector<std::string>{"x"});
  EXPECT_FALSE(parse_unhealthy_configmap(Json{{"metadata", {{"name", "other"}}}}));
  const auto trailing = parse_unhealthy_list("n", "1,");
  EXPECT_EQ(trailing.indices, std::vector<int>{1});  // the Go original would mark GPU 0 here
}

TEST(UnhealthyConfigMap, ReportsKeysOtherThanGpusWithTheirValues) {
  // `gpu:` for `gpus:`: no GPU is marked, and the caller is told which key was not read.
  const Json cm = {{"metadata", {{"name", "unhealthy-gpu-n1"}, {"namespace", "kube-system"}}},
                   {"data", {{"gpu", "1"}, {"note", "bad fan"}}}};
  const auto parsed = parse_unhealthy_configmap(cm);
  ASSERT_TRUE(parsed);
  EXPECT_EQ(parsed->object, "kube-system/unhealthy-gpu-n1");
  EXPECT_TRUE(parsed->indices.empty());
  EXPECT_EQ(parsed->unknown_keys,
            (std::vector<std::pair<std::string, std::string>>{{"gpu", "1"}, {"note", "bad fan"}}));
  const Json fine = {{"metadata", {{"name", "unhealthy-gpu-n1"}, {"namespace", "kube-system"}}},
                     {"data", {{"gpus", "1"}}}};
  EXPECT_TRUE(parse_unhealthy_configmap(fine)->unknown_keys.empty());
}

}  // namespace
}  // namespace gpushare::kube
