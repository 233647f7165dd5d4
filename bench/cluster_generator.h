#pragma once
// Deterministic synthetic clusters and kube-scheduler-shaped request bodies for the benchmarks
// and the HTTP load test. Header-only: every bench/*.cpp is its own executable.
//
// A cluster is `nodes` nodes of `gpus_per_node` GPUs of `memory_per_gpu` units (GiB, as the
// gpushare device plugin counts aliyun.com/gpu-mem), with `allocated` of all GPU memory held by
// bound pods of mixed sizes, scattered at random. Everything derives from `seed`, so the model,
// the cluster file and the request bodies of one shape always agree.

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "gpushare/core/cluster_model.h"
#include "gpushare/core/placement_policy.h"
#include "gpushare/core/policy_registry.h"
#include "gpushare/kube/json_access.h"
#include "gpushare/metrics/metric_registry.h"
#include "gpushare/service/model_store.h"
#include "gpushare/service/pod_binder.h"
#include "gpushare/service/rejection_log.h"
#include "gpushare/service/scheduling_service.h"
#include "gpushare/wire/wire_types.h"

namespace gpushare::bench {

using core::Units;
using kube::Json;

struct ClusterShape {
  int nodes = 1000;
  int gpus_per_node = 8;
  Units memory_per_gpu = 32;  // GiB per GPU (A100/V100 32 GB class)
  double allocated = 0.0;     // share of all GPU memory held by bound pods, 0..~0.95
  std::uint64_t seed = 42;
  // Live mode from now on: nodes carry their allocatable CPU and memory (NodeSpec::cpu_milli,
  // memory; the node objects' 95690m and 1320468236Ki), every bound pod holds CPU and memory,
  // and about one pod in ten wants no GPU at all. The GPU scatter is the same as without it.
  bool track_cpu_memory = false;
  // The policy has seen every bound pod (observe()), as a running service learns the workload
  // from the pods it binds; otherwise it plans for its built-in prior.
  bool learned_workload = false;
};

// The CPU and memory a tracked node offers (allocatable of the node objects below).
inline constexpr std::int64_t kNodeCpuMilli = 95690;
inline constexpr std::int64_t kNodeMemoryBytes = 1320468236LL * 1024;
inline constexpr std::int64_t kGiB = 1024LL * 1024 * 1024;

// GKE-style node names (~40 characters: beyond std::string's small-string buffer, as in real
// clusters, so hashing and copying cost what it costs in production).
inline std::string node_name(int index) {
  const std::uint32_t pool = static_cast<std::uint32_t>(index / 500);
  const std::uint32_t group = 0x3f2a1b7cU ^ (pool * 0x9e3779b9U);
  return fmt::format("gke-ml-prod-a100-pool-{}-{:08x}-{:05d}", pool, group, index);
}

// One bound pod of the synthetic cluster.
struct BoundPod {
  std::string name;
  std::string uid;
  int node = 0;
  int gpu = 0;
  Units request = 0;           // 0: a pod that wants no GPU (only with track_cpu_memory)
  std::int64_t cpu_milli = 0;  // only with track_cpu_memory
  std::int64_t memory = 0;     // bytes; only with track_cpu_memory
};

// CPU and memory of the GPU pods with track_cpu_memory: per GPU size a few (cpu, memory)
// combinations, as a trace has a few dozen typical shapes (openb: 29-58 with memory), drawn
// from their own generator so the GPU scatter stays that of the untracked cluster.
// Every tenth pod (on average) wants no GPU: 0.5-4 cores, 1-8 GiB.
inline void assign_cpu_memory(BoundPod& pod, std::mt19937_64& rng) {
  static constexpr std::int64_t kCpuPerGib[] = {250, 375, 500};  // milli per GiB of GPU
  static constexpr std::int64_t kMemoryPerGib[] = {2, 4, 6};     // GiB per GiB of GPU
  const auto pick = [&](std::size_t n) { return static_cast<std::size_t>(rng() % n); };
  pod.cpu_milli = std::max<std::int64_t>(500, pod.request * kCpuPerGib[pick(3)]);
  pod.memory = std::max<std::int64_t>(1, pod.request * kMemoryPerGib[pick(3)]) * kGiB;
}

// Scatters pods of 2/4/8/16 GiB (weights 4/3/2/1) over random GPUs until `allocated` of all GPU
// memory is held; a pod that does not fit where it lands tries another GPU.
inline std::vector<BoundPod> generate_pods(const ClusterShape& shape) {
  std::vector<BoundPod> pods;
  if (shape.allocated <= 0 || shape.nodes <= 0) return pods;
  std::mt19937_64 rng(shape.seed);
  const std::size_t gpu_total =
      static_cast<std::size_t>(shape.nodes) * static_cast<std::size_t>(shape.gpus_per_node);
  std::vector<Units> used(gpu_total, 0);
  const Units capacity = static_cast<Units>(gpu_total) * shape.memory_per_gpu;
  const Units target = static_cast<Units>(shape.allocated * static_cast<double>(capacity));
  std::discrete_distribution<int> size_pick({4, 3, 2, 1});
  constexpr Units kSizes[] = {2, 4, 8, 16};
  std::uniform_int_distribution<std::size_t> gpu_pick(0, gpu_total - 1);
  std::mt19937_64 cpu_rng(shape.seed ^ 0x6a09e667f3bcc909ULL);  // track_cpu_memory only
  Units held = 0;
  std::size_t misses = 0;
  while (held < target && misses < gpu_total * 4) {
    Units request = std::min(kSizes[size_pick(rng)], shape.memory_per_gpu);
    request = std::min(request, std::max<Units>(1, target - held));
    const std::size_t gpu = gpu_pick(rng);
    if (used[gpu] + request > shape.memory_per_gpu) {
      ++misses;
      continue;
    }
    used[gpu] += request;
    held += request;
    BoundPod pod;
    pod.node = static_cast<int>(gpu / static_cast<std::size_t>(shape.gpus_per_node));
    pod.gpu = static_cast<int>(gpu % static_cast<std::size_t>(shape.gpus_per_node));
    pod.request = request;
    pod.name =
        fmt::format("train-{:06d}-{:05x}", pods.size(), static_cast<unsigned>(rng() & 0xfffff));
    pod.uid =
        fmt::format("{:08x}-{:04x}-4{:03x}-a{:03x}-{:012x}", static_cast<std::uint32_t>(rng()),
                    static_cast<unsigned>(rng() & 0xffff), static_cast<unsigned>(rng() & 0xfff),
                    static_cast<unsigned>(rng() & 0xfff), rng() & 0xffffffffffffULL);
    if (shape.track_cpu_memory) {
      assign_cpu_memory(pod, cpu_rng);
      if (cpu_rng() % 9 == 0) {  // and now and then a pod that wants no GPU, on a random node
        BoundPod cpu_only;
        cpu_only.node = static_cast<int>(cpu_rng() % static_cast<std::uint64_t>(shape.nodes));
        cpu_only.gpu = -1;
        cpu_only.cpu_milli = 500 * static_cast<std::int64_t>(1 + cpu_rng() % 8);
        cpu_only.memory = kGiB * static_cast<std::int64_t>(1 + cpu_rng() % 8);
        cpu_only.name = fmt::format("svc-{:06d}", pods.size());
        cpu_only.uid =
            fmt::format("c0{:06x}-{:04x}-4000-8000-{:012x}", pods.size() & 0xffffff,
                        static_cast<unsigned>(cpu_rng() & 0xffff), cpu_rng() & 0xffffffffffffULL);
        pods.push_back(std::move(pod));
        pods.push_back(std::move(cpu_only));
        continue;
      }
    }
    pods.push_back(std::move(pod));
  }
  return pods;
}

inline core::NodeSpec node_spec(const ClusterShape& shape, int index) {
  core::NodeSpec spec;
  spec.name = node_name(index);
  spec.gpu_count = shape.gpus_per_node;
  spec.memory_per_gpu = shape.memory_per_gpu;
  spec.gpu_model = "NVIDIA-A100-SXM4-40GB";
  if (shape.track_cpu_memory) {
    spec.cpu_milli = kNodeCpuMilli;
    spec.memory = kNodeMemoryBytes;
  }
  spec.address = fmt::format("10.{}.{}.{}", 16 + index / 65536, (index / 256) % 256, index % 256);
  return spec;
}

inline core::PodDemand demand_of(const BoundPod& pod);

// Fills `model` with the shape's nodes and pods, as standalone or sync would; with
// learned_workload, `policy` (if given) observes every pod as a service that bound them would.
inline void populate_model(core::ClusterModel& model, const ClusterShape& shape,
                           core::PlacementPolicy* policy = nullptr) {
  for (int i = 0; i < shape.nodes; ++i) model.upsert_node(node_spec(shape, i));
  for (auto& pod : generate_pods(shape)) {
    if (shape.learned_workload && policy != nullptr) policy->observe(demand_of(pod));
    core::PodAllocation allocation;
    allocation.uid = std::move(pod.uid);
    allocation.namespace_name = "ml-training";
    allocation.name = std::move(pod.name);
    allocation.node = node_name(pod.node);
    if (pod.request > 0) allocation.gpus = {pod.gpu};
    allocation.per_gpu = pod.request;
    allocation.cpu_milli = pod.cpu_milli;
    allocation.memory = pod.memory;
    model.add_pod(std::move(allocation));
  }
}

// What the pod asks of a node, as PodInfo::demand() gives it.
inline core::PodDemand demand_of(const BoundPod& pod) {
  core::PodDemand demand;
  demand.per_gpu = pod.request;  // gpu_count stays 1, as for a pod without GPU in PodInfo
  demand.cpu_milli = pod.cpu_milli;
  demand.memory = pod.memory;
  return demand;
}

// ---------------------------------------------------------------------------------------------
// Kubernetes objects, shaped like what kube-scheduler sends and what the API server returns.

// A pending pod asking for `request` GiB of GPU memory (about 3 KB of JSON), 4.05 cores and
// 32 GiB + 64 MiB of memory; `request` 0: the same pod without GPU.
inline Json pending_pod(const std::string& name, const std::string& uid, Units request,
                        std::string_view resource = "aliyun.com/gpu-mem") {
  const std::string gpu = std::to_string(request);
  Json limits = {{"cpu", "8"}, {"memory", "64Gi"}};
  Json requests = {{"cpu", "4"}, {"memory", "32Gi"}};
  if (request > 0) {
    limits[std::string(resource)] = gpu;
    requests[std::string(resource)] = gpu;
  }
  Json env = Json::array();
  for (const auto& [key, value] :
       std::vector<std::pair<std::string, std::string>>{{"NCCL_DEBUG", "WARN"},
                                                        {"NCCL_SOCKET_IFNAME", "eth0"},
                                                        {"OMP_NUM_THREADS", "8"},
                                                        {"PYTHONUNBUFFERED", "1"},
                                                        {"WANDB_PROJECT", "llm-finetune"},
                                                        {"HF_HOME", "/cache/huggingface"}}) {
    env.push_back({{"name", key}, {"value", value}});
  }
  env.push_back(
      {{"name", "POD_NAME"},
       {"valueFrom", {{"fieldRef", {{"apiVersion", "v1"}, {"fieldPath", "metadata.name"}}}}}});
  Json container = {
      {"name", "trainer"},
      {"image", "registry.example.com/ml/trainer:2024.06.1-cuda12.2"},
      {"imagePullPolicy", "IfNotPresent"},
      {"command", {"python", "-m", "trainer.main"}},
      {"args", {"--config=/etc/trainer/config.yaml", "--epochs=20", "--batch-size=64"}},
      {"env", env},
      {"resources", {{"limits", limits}, {"requests", requests}}},
      {"ports", Json::array({{{"containerPort", 8080}, {"name", "metrics"}, {"protocol", "TCP"}}})},
      {"volumeMounts",
       Json::array({{{"mountPath", "/etc/trainer"}, {"name", "config"}, {"readOnly", true}},
                    {{"mountPath", "/cache"}, {"name", "cache"}},
                    {{"mountPath", "/var/run/secrets/kubernetes.io/serviceaccount"},
                     {"name", "kube-api-access-7x9qz"},
                     {"readOnly", true}}})},
      {"terminationMessagePath", "/dev/termination-log"},
      {"terminationMessagePolicy", "File"}};
  Json sidecar = {{"name", "log-shipper"},
                  {"image", "registry.example.com/infra/fluent-bit:2.2.0"},
                  {"resources",
                   {{"limits", {{"cpu", "200m"}, {"memory", "128Mi"}}},
                    {"requests", {{"cpu", "50m"}, {"memory", "64Mi"}}}}}};
  return {
      {"apiVersion", "v1"},
      {"kind", "Pod"},
      {"metadata",
       {{"name", name},
        {"namespace", "ml-training"},
        {"uid", uid},
        {"resourceVersion", "884213377"},
        {"creationTimestamp", "2024-06-11T09:14:03Z"},
        {"generateName", "llm-finetune-"},
        {"labels",
         {{"app", "llm-finetune"}, {"team", "research"}, {"pod-template-hash", "6d9f7c8b5"}}},
        {"annotations",
         {{"kubectl.kubernetes.io/default-container", "trainer"},
          {"prometheus.io/scrape", "true"},
          {"prometheus.io/port", "8080"}}},
        {"ownerReferences", Json::array({{{"apiVersion", "apps/v1"},
                                          {"kind", "ReplicaSet"},
                                          {"name", "llm-finetune-6d9f7c8b5"},
                                          {"uid", "0b1c2d3e-4f50-4617-8293-a4b5c6d7e8f9"},
                                          {"controller", true},
                                          {"blockOwnerDeletion", true}}})}}},
      {"spec",
       {{"containers", Json::array({container, sidecar})},
        {"schedulerName", "default-scheduler"},
        {"restartPolicy", "Always"},
        {"serviceAccountName", "trainer"},
        {"priority", 0},
        {"terminationGracePeriodSeconds", 30},
        {"dnsPolicy", "ClusterFirst"},
        {"enableServiceLinks", true},
        {"preemptionPolicy", "PreemptLowerPriority"},
        {"securityContext", Json::object()},
        {"tolerations",
         Json::array({{{"key", "nvidia.com/gpu"}, {"operator", "Exists"}, {"effect", "NoSchedule"}},
                      {{"key", "node.kubernetes.io/not-ready"},
                       {"operator", "Exists"},
                       {"effect", "NoExecute"},
                       {"tolerationSeconds", 300}}})},
        {"volumes",
         Json::array({{{"name", "config"},
                       {"configMap", {{"name", "trainer-config"}, {"defaultMode", 420}}}},
                      {{"name", "cache"}, {"emptyDir", {{"sizeLimit", "100Gi"}}}}})}}},
      {"status", {{"phase", "Pending"}, {"qosClass", "Burstable"}}}};
}

inline Json bound_pod_object(const BoundPod& pod,
                             std::string_view resource = "aliyun.com/gpu-mem") {
  Json object = pending_pod(pod.name, pod.uid, pod.request, resource);
  object["spec"]["nodeName"] = node_name(pod.node);
  object["status"]["phase"] = "Running";
  auto& annotations = object["metadata"]["annotations"];
  annotations["ALIYUN_COM_GPU_MEM_IDX"] = std::to_string(pod.gpu);
  annotations["ALIYUN_COM_GPU_MEM_POD"] = std::to_string(pod.request);
  annotations["ALIYUN_COM_GPU_MEM_ASSIGNED"] = "true";
  return object;
}

// A full v1 Node as the API server returns it (without managedFields, which kube-scheduler's
// informers strip): labels, annotations, taints, conditions, addresses, capacity/allocatable,
// nodeInfo and the images list. About 6 KB of JSON.
inline Json node_object(const ClusterShape& shape, int index) {
  const std::string name = node_name(index);
  const std::string ip = node_spec(shape, index).address;
  const std::string zone = fmt::format("us-central1-{}", "abcf"[index % 4]);
  const std::string gpu_memory = std::to_string(shape.memory_per_gpu * shape.gpus_per_node);
  const std::string gpu_count = std::to_string(shape.gpus_per_node);
  Json labels = {{"beta.kubernetes.io/arch", "amd64"},
                 {"beta.kubernetes.io/instance-type", "a2-highgpu-8g"},
                 {"beta.kubernetes.io/os", "linux"},
                 {"cloud.google.com/gke-boot-disk", "pd-balanced"},
                 {"cloud.google.com/gke-container-runtime", "containerd"},
                 {"cloud.google.com/gke-nodepool", fmt::format("a100-pool-{}", index / 500)},
                 {"cloud.google.com/gke-os-distribution", "cos"},
                 {"cloud.google.com/machine-family", "a2"},
                 {"failure-domain.beta.kubernetes.io/region", "us-central1"},
                 {"failure-domain.beta.kubernetes.io/zone", zone},
                 {"kubernetes.io/arch", "amd64"},
                 {"kubernetes.io/hostname", name},
                 {"kubernetes.io/os", "linux"},
                 {"node.kubernetes.io/instance-type", "a2-highgpu-8g"},
                 {"topology.kubernetes.io/region", "us-central1"},
                 {"topology.kubernetes.io/zone", zone},
                 {"nvidia.com/gpu.product", "NVIDIA-A100-SXM4-40GB"},
                 {"nvidia.com/gpu.count", gpu_count},
                 {"nvidia.com/cuda.driver.major", "535"},
                 {"gpushare", "true"}};
  Json annotations = {
      {"container.googleapis.com/instance_id",
       std::to_string(4410000000000000000ULL + static_cast<unsigned>(index))},
      {"csi.volume.kubernetes.io/nodeid",
       fmt::format(R"({{"pd.csi.storage.gke.io":"projects/ml-prod/zones/{}/instances/{}"}})", zone,
                   name)},
      {"node.alpha.kubernetes.io/ttl", "0"},
      {"node.gke.io/last-applied-node-labels",
       "cloud.google.com/gke-boot-disk=pd-balanced,cloud.google.com/"
       "gke-container-runtime=containerd,"
       "cloud.google.com/gke-nodepool=a100-pool,cloud.google.com/gke-os-distribution=cos,"
       "cloud.google.com/machine-family=a2"},
      {"node.gke.io/last-applied-node-taints", "nvidia.com/gpu=present:NoSchedule"},
      {"volumes.kubernetes.io/controller-managed-attach-detach", "true"}};
  Json capacity = {{"aliyun.com/gpu-count", gpu_count},
                   {"aliyun.com/gpu-mem", gpu_memory},
                   {"attachable-volumes-gce-pd", "127"},
                   {"cpu", "96"},
                   {"ephemeral-storage", "203070420Ki"},
                   {"hugepages-1Gi", "0"},
                   {"hugepages-2Mi", "0"},
                   {"memory", "1395254028Ki"},
                   {"nvidia.com/gpu", gpu_count},
                   {"pods", "110"}};
  Json allocatable = capacity;
  allocatable["cpu"] = "95690m";
  allocatable["ephemeral-storage"] = "47093746742";
  allocatable["memory"] = "1320468236Ki";
  auto condition = [](const char* type, const char* status, const char* reason,
                      const char* message) {
    return Json{{"type", type},
                {"status", status},
                {"lastHeartbeatTime", "2024-06-11T09:13:58Z"},
                {"lastTransitionTime", "2024-05-02T17:41:09Z"},
                {"reason", reason},
                {"message", message}};
  };
  Json conditions = Json::array(
      {condition("FrequentUnregisterNetDevice", "False", "NoFrequentUnregisterNetDevice",
                 "node is functioning properly"),
       condition("KernelDeadlock", "False", "KernelHasNoDeadlock", "kernel has no deadlock"),
       condition("NetworkUnavailable", "False", "RouteCreated",
                 "NodeController create implicit route"),
       condition("MemoryPressure", "False", "KubeletHasSufficientMemory",
                 "kubelet has sufficient memory available"),
       condition("DiskPressure", "False", "KubeletHasNoDiskPressure",
                 "kubelet has no disk pressure"),
       condition("PIDPressure", "False", "KubeletHasSufficientPID",
                 "kubelet has sufficient PID available"),
       condition("Ready", "True", "KubeletReady",
                 "kubelet is posting ready status. AppArmor enabled")});
  Json images = Json::array();
  static constexpr std::string_view kImages[] = {
      "registry.example.com/ml/trainer",
      "registry.example.com/ml/inference-server",
      "nvcr.io/nvidia/pytorch",
      "nvcr.io/nvidia/tritonserver",
      "nvcr.io/nvidia/k8s-device-plugin",
      "registry.example.com/infra/fluent-bit",
      "gke.gcr.io/gke-metrics-agent",
      "gke.gcr.io/kube-proxy-amd64",
      "gke.gcr.io/prometheus-to-sd",
      "registry.k8s.io/pause",
      "gcr.io/google-containers/nvidia-gpu-device-plugin",
      "registry.aliyuncs.com/acs/k8s-gpushare-plugin",
      "docker.io/library/busybox",
      "quay.io/prometheus/node-exporter",
      "gke.gcr.io/csi-node-driver-registrar",
      "gke.gcr.io/gcp-compute-persistent-disk-csi-driver"};
  std::uint64_t digest = 0x9b2f6a1c4d8e7f03ULL ^ static_cast<std::uint64_t>(index);
  for (std::size_t i = 0; i < std::size(kImages); ++i) {
    digest = digest * 6364136223846793005ULL + 1442695040888963407ULL;
    images.push_back(
        {{"names",
          {fmt::format("{}@sha256:{:016x}{:016x}{:016x}{:016x}", kImages[i], digest,
                       digest ^ 0x5555, digest * 3, digest >> 7),
           fmt::format("{}:v1.{}.{}", kImages[i], i, index % 7)}},
         {"sizeBytes", 50'000'000 + static_cast<std::int64_t>(digest % 4'000'000'000ULL)}});
  }
  return {
      {"apiVersion", "v1"},
      {"kind", "Node"},
      {"metadata",
       {{"name", name},
        {"uid", fmt::format("5c1f0a9e-{:04x}-4b2d-9e3f-{:012x}", index % 65536,
                            0x1234567ULL * static_cast<std::uint64_t>(index + 1))},
        {"resourceVersion", std::to_string(884000000 + index)},
        {"creationTimestamp", "2024-05-02T17:40:31Z"},
        {"labels", labels},
        {"annotations", annotations}}},
      {"spec",
       {{"podCIDR", fmt::format("10.{}.{}.0/24", 64 + index / 256, index % 256)},
        {"podCIDRs", {fmt::format("10.{}.{}.0/24", 64 + index / 256, index % 256)}},
        {"providerID", fmt::format("gce://ml-prod/{}/{}", zone, name)},
        {"taints",
         Json::array(
             {{{"key", "nvidia.com/gpu"}, {"value", "present"}, {"effect", "NoSchedule"}}})}}},
      {"status",
       {{"capacity", capacity},
        {"allocatable", allocatable},
        {"conditions", conditions},
        {"addresses",
         Json::array(
             {{{"type", "InternalIP"}, {"address", ip}},
              {{"type", "ExternalIP"},
               {"address",
                fmt::format("34.{}.{}.{}", 66 + index / 65536, (index / 256) % 256, index % 256)}},
              {{"type", "InternalDNS"}, {"address", name + ".us-central1-a.c.ml-prod.internal"}},
              {{"type", "Hostname"}, {"address", name + ".us-central1-a.c.ml-prod.internal"}}})},
        {"daemonEndpoints", {{"kubeletEndpoint", {{"Port", 10250}}}}},
        {"nodeInfo",
         {{"architecture", "amd64"},
          {"bootID", fmt::format("2f3e4d5c-{:04x}-4a1b-8c7d-{:012x}", index % 65536,
                                 0xfedcbaULL * static_cast<std::uint64_t>(index + 7))},
          {"containerRuntimeVersion", "containerd://1.7.10"},
          {"kernelVersion", "6.1.58+"},
          {"kubeProxyVersion", "v1.28.3-gke.1203001"},
          {"kubeletVersion", "v1.28.3-gke.1203001"},
          {"machineID",
           fmt::format("{:032x}", 0xabcdef0123ULL * static_cast<std::uint64_t>(index + 3))},
          {"operatingSystem", "linux"},
          {"osImage", "Container-Optimized OS from Google"},
          {"systemUUID", fmt::format("{:08x}-0f1e-2d3c-4b5a-69788796a5b4", index)}}},
        {"images", images}}}};
}

// A bound pod with only what the extender reads (~500 bytes): a 5 000-node cluster at 90 %
// holds ~220 000 pods, which at full size would make a cluster file of most of a gigabyte.
inline Json compact_bound_pod(const BoundPod& pod,
                              std::string_view resource = "aliyun.com/gpu-mem") {
  const std::string request = std::to_string(pod.request);
  Json limits = Json::object();
  Json annotations = Json::object();
  if (pod.request > 0) {
    limits[std::string(resource)] = request;
    annotations = {{"ALIYUN_COM_GPU_MEM_IDX", std::to_string(pod.gpu)},
                   {"ALIYUN_COM_GPU_MEM_POD", request},
                   {"ALIYUN_COM_GPU_MEM_ASSIGNED", "true"}};
  }
  Json resources = {{"limits", limits}};
  if (pod.cpu_milli > 0 || pod.memory > 0) {
    resources["requests"] = {{"cpu", fmt::format("{}m", pod.cpu_milli)},
                             {"memory", std::to_string(pod.memory)}};
  }
  return {{"apiVersion", "v1"},
          {"kind", "Pod"},
          {"metadata",
           {{"name", pod.name},
            {"namespace", "ml-training"},
            {"uid", pod.uid},
            {"annotations", annotations}}},
          {"spec",
           {{"nodeName", node_name(pod.node)},
            {"containers",
             Json::array({{{"name", "trainer"},
                           {"image", "registry.example.com/ml/trainer:2024.06.1-cuda12.2"},
                           {"resources", resources}}})}}},
          {"status", {{"phase", "Running"}}}};
}

// The v1 List a --cluster-file holds: every node (full objects), and every bound pod (compact)
// with its GPU annotations.
inline Json cluster_list(const ClusterShape& shape) {
  Json items = Json::array();
  for (int i = 0; i < shape.nodes; ++i) items.push_back(node_object(shape, i));
  for (const auto& pod : generate_pods(shape)) items.push_back(compact_bound_pod(pod));
  return {{"apiVersion", "v1"}, {"kind", "List"}, {"items", std::move(items)}};
}

// ---------------------------------------------------------------------------------------------
// ExtenderArgs as kube-scheduler sends them (Go field names; nil slices as null).

inline Json default_pending_pod(Units request = 4) {
  return pending_pod("llm-finetune-6d9f7c8b5-x7k2p", "7e0c3a55-1b2d-4c6e-8f90-a1b2c3d4e5f6",
                     request);
}

// The nodes a request offers: all of them, or `offered` spread evenly over the cluster.
// kube-scheduler offers extenders only the nodes that passed its own filters, and stops looking
// once it has max(100, nodes x percentageOfNodesToScore / 100) of them: by default (adaptive,
// 50 - nodes/125 percent, at least 5) 500 of 5 000 nodes and 500 of 10 000. Offering every node
// is the worst case (percentageOfNodesToScore: 100, or few nodes feasible).
inline std::vector<int> offered_nodes(const ClusterShape& shape, int offered = -1) {
  std::vector<int> indices;
  const int count = offered <= 0 || offered > shape.nodes ? shape.nodes : offered;
  indices.reserve(static_cast<std::size_t>(count));
  for (int i = 0; i < count; ++i) {
    indices.push_back(static_cast<int>(static_cast<std::int64_t>(i) * shape.nodes / count));
  }
  return indices;
}

// nodeCacheCapable: true -> {"Pod": ..., "Nodes": null, "NodeNames": [...]}.
inline std::string args_with_names(const ClusterShape& shape, const Json& pod, int offered = -1) {
  Json names = Json::array();
  for (int i : offered_nodes(shape, offered)) names.push_back(node_name(i));
  return Json{{"Pod", pod}, {"Nodes", nullptr}, {"NodeNames", std::move(names)}}.dump();
}

// nodeCacheCapable: false -> {"Pod": ..., "Nodes": {"items": [...]}, "NodeNames": null}.
inline std::string args_with_nodes(const ClusterShape& shape, const Json& pod, int offered = -1) {
  Json items = Json::array();
  for (int i : offered_nodes(shape, offered)) items.push_back(node_object(shape, i));
  return Json{{"Pod", pod},
              {"Nodes", {{"metadata", {{"resourceVersion", ""}}}, {"items", std::move(items)}}},
              {"NodeNames", nullptr}}
      .dump();
}

// ---------------------------------------------------------------------------------------------
// A SchedulingService over a generated cluster, as main.cpp wires it in standalone mode.

// Finds every pod it was told about in filter; binds succeed in memory.
class MemoryBinder final : public service::PodBinder {
 public:
  std::optional<kube::PodInfo> find_pod(std::string_view ns, std::string_view name) override {
    auto it = pods_.find(fmt::format("{}/{}", ns, name));
    if (it == pods_.end()) return std::nullopt;
    return it->second;
  }
  service::BindOutcome bind(const kube::PodInfo&, std::string_view,
                            const std::map<std::string, std::string>&) override {
    return {true, "", false};
  }
  bool confirms_asynchronously() const override { return false; }
  void remember(const kube::PodInfo& pod) { pods_[pod.key()] = pod; }

 private:
  std::map<std::string, kube::PodInfo> pods_;
};

struct Harness {
  explicit Harness(const ClusterShape& shape, std::string_view policy = "binpack")
      : store(core::make_policy(policy)) {
    // bind() logs one info line per pod; at benchmark rates that is millions of lines, and the
    // time would be the log sink's, not the extender's.
    spdlog::set_level(spdlog::level::warn);
    store.write([&](core::ClusterModel& model, core::PlacementPolicy& policy) {
      populate_model(model, shape, &policy);
    });
    service::ServiceConfig config;
    config.score_mapping =
        core::ScoreMapping::kRank;  // gpushare-extender's --score-mapping default
    service =
        std::make_unique<service::SchedulingService>(store, binder, metrics, rejections, config);
  }
  service::ModelStore store;
  MemoryBinder binder;
  metrics::MetricRegistry metrics;
  service::RejectionLog rejections;
  std::unique_ptr<service::SchedulingService> service;
};

// Keeps the most recently built harness alive across benchmark registrations of the same
// shape: building a 10 000-node cluster at 90 % takes a while and holds ~100 MB.
inline Harness& cached_harness(const ClusterShape& shape, std::string_view policy = "binpack") {
  static std::unique_ptr<Harness> harness;
  static std::string key;
  const std::string wanted = fmt::format(
      "{}/{}/{}/{}/{}/{}/{}/{}", shape.nodes, shape.gpus_per_node, shape.memory_per_gpu,
      shape.allocated, shape.seed, shape.track_cpu_memory, shape.learned_workload, policy);
  if (!harness || key != wanted) {
    harness.reset();
    harness = std::make_unique<Harness>(shape, policy);
    key = wanted;
  }
  return *harness;
}

inline const std::vector<std::string>& policy_list() {
  static const std::vector<std::string> names = core::policy_names();
  return names;
}

}  // namespace gpushare::bench
