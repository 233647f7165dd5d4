// gpushare-fake-apiserver: the tests' fake API server as a process, for trying the extender in
// live mode by hand, the kubectl plugin, and the sync benchmark. Not a product binary.
//
//   gpushare-fake-apiserver --kubeconfig-out /tmp/fake.kubeconfig [--port 0]
//       [--seed cluster.yaml] [--nodes N --pods M [--gpus-per-node 8 --gpu-mem-per-gpu 16]
//        [--cpu-only-percent 20]] [--expire-watches-every SECONDS]
//
// SIGUSR1 (or --expire-watches-every) expires every open watch as a compaction past it would:
// each ends with an in-stream ERROR 410 and the client must relist (FakeApiServer::expire_watches).

#include <fmt/format.h>
#include <pthread.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <csignal>
#include <ctime>
#include <fstream>
#include <iostream>
#include <optional>
#include <random>
#include <sstream>

#include "fakeapi/fake_apiserver.h"
#include "gpushare/standalone/standalone_cluster.h"

namespace {

using gpushare::testing::FakeApiServer;
using gpushare::testing::Resource;
using Json = nlohmann::json;

// A node as a real kubelet reports it: labels, conditions, images, addresses (~3 KB).
Json realistic_node(int index, int gpus, long long per_gpu) {
  const std::string name = fmt::format("gpu-node-{:05d}", index);
  Json images = Json::array();
  for (int i = 0; i < 8; ++i) {
    images.push_back({{"names",
                       {fmt::format("registry.example.com/team-{}/image-{}@sha256:{:064x}", i,
                                    index % 97, i * 7919 + index)}},
                      {"sizeBytes", 1'000'000'000LL + i * 1234567}});
  }
  Json conditions = Json::array();
  for (const char* type : {"MemoryPressure", "DiskPressure", "PIDPressure", "Ready"}) {
    conditions.push_back({{"type", type},
                          {"status", std::string(type) == "Ready" ? "True" : "False"},
                          {"lastHeartbeatTime", "2026-11-21T10:00:00Z"},
                          {"lastTransitionTime", "2026-11-01T10:00:00Z"},
                          {"reason", std::string("Kubelet") + type},
                          {"message", "kubelet is posting ready status"}});
  }
  const Json capacity = {{"cpu", "96"},
                         {"memory", "791Gi"},
                         {"pods", "110"},
                         {"ephemeral-storage", "1844Gi"},
                         {"aliyun.com/gpu-mem", std::to_string(per_gpu * gpus)},
                         {"aliyun.com/gpu-count", std::to_string(gpus)}};
  return {{"apiVersion", "v1"},
          {"kind", "Node"},
          {"metadata",
           {{"name", name},
            {"labels",
             {{"kubernetes.io/hostname", name},
              {"kubernetes.io/os", "linux"},
              {"kubernetes.io/arch", "amd64"},
              {"node.kubernetes.io/instance-type", "gn7i-c32g1.32xlarge"},
              {"topology.kubernetes.io/zone", fmt::format("zone-{}", index % 3)},
              {"nvidia.com/gpu.product", "NVIDIA-A10"},
              {"gpushare", "true"}}},
            {"annotations",
             {{"node.alpha.kubernetes.io/ttl", "0"},
              {"volumes.kubernetes.io/controller-managed-attach-detach", "true"}}}}},
          {"spec",
           {{"podCIDR", fmt::format("10.{}.{}.0/24", index / 256, index % 256)},
            {"providerID", "cloud://" + name}}},
          {"status",
           {{"capacity", capacity},
            {"allocatable", capacity},
            {"conditions", conditions},
            {"addresses",
             Json::array({{{"type", "InternalIP"},
                           {"address", fmt::format("10.0.{}.{}", index / 256, index % 256)}},
                          {{"type", "Hostname"}, {"address", name}}})},
            {"nodeInfo",
             {{"kubeletVersion", "v1.34.0"},
              {"containerRuntimeVersion", "containerd://1.7.0"},
              {"kernelVersion", "5.15.0"},
              {"osImage", "Debian GNU/Linux 12 (bookworm)"}}},
            {"images", images}}}};
}

// A running pod with the gpushare annotations, env, volumes and status (~3 KB).
Json realistic_pod(int index, const std::string& node, int gpu, long long request) {
  const std::string name = fmt::format("trainer-{:06d}", index);
  Json env = Json::array();
  for (int i = 0; i < 10; ++i)
    env.push_back(
        {{"name", fmt::format("SETTING_{}", i)}, {"value", fmt::format("value-{}-{}", index, i)}});
  return {{"apiVersion", "v1"},
          {"kind", "Pod"},
          {"metadata",
           {{"name", name},
            {"namespace", fmt::format("team-{}", index % 20)},
            {"labels",
             {{"app", "trainer"},
              {"pod-template-hash", "5d8f7c9b6"},
              {"team", fmt::format("team-{}", index % 20)}}},
            {"annotations",
             {{"ALIYUN_COM_GPU_MEM_IDX", std::to_string(gpu)},
              {"ALIYUN_COM_GPU_MEM_POD", std::to_string(request)},
              {"ALIYUN_COM_GPU_MEM_DEV", "16"},
              {"ALIYUN_COM_GPU_MEM_ASSIGNED", "true"},
              {"ALIYUN_COM_GPU_MEM_ASSUME_TIME", std::to_string(1763700000000000000LL + index)}}},
            {"ownerReferences",
             Json::array({{{"apiVersion", "apps/v1"},
                           {"kind", "ReplicaSet"},
                           {"name", "trainer-5d8f7c9b6"},
                           {"uid", fmt::format("00000000-0000-4000-8000-{:012d}", index % 1000)},
                           {"controller", true},
                           {"blockOwnerDeletion", true}}})}}},
          {"spec",
           {{"nodeName", node},
            {"schedulerName", "default-scheduler"},
            {"containers",
             Json::array(
                 {{{"name", "main"},
                   {"image", "registry.example.com/ml/trainer:2.14.1"},
                   {"command", {"python", "-m", "train", "--config", "/etc/train/config.yaml"}},
                   {"env", env},
                   {"resources",
                    {{"limits",
                      {{"aliyun.com/gpu-mem", std::to_string(request)},
                       {"cpu", "4"},
                       {"memory", "16Gi"}}},
                     {"requests",
                      {{"aliyun.com/gpu-mem", std::to_string(request)},
                       {"cpu", "2"},
                       {"memory", "8Gi"}}}}},
                   {"volumeMounts",
                    Json::array({{{"name", "config"}, {"mountPath", "/etc/train"}},
                                 {{"name", "kube-api-access"},
                                  {"mountPath", "/var/run/secrets/kubernetes.io/serviceaccount"},
                                  {"readOnly", true}}})}}})},
            {"volumes",
             Json::array({{{"name", "config"}, {"configMap", {{"name", "trainer-config"}}}},
                          {{"name", "kube-api-access"}, {"projected", {{"defaultMode", 420}}}}})},
            {"tolerations", Json::array({{{"key", "node.kubernetes.io/not-ready"},
                                          {"operator", "Exists"},
                                          {"effect", "NoExecute"},
                                          {"tolerationSeconds", 300}}})}}},
          {"status",
           {{"phase", "Running"},
            {"podIP", fmt::format("172.16.{}.{}", index / 256 % 256, index % 256)},
            {"hostIP", "10.0.0.1"},
            {"startTime", "2026-11-21T09:00:00Z"},
            {"conditions", Json::array({{{"type", "Ready"}, {"status", "True"}},
                                        {{"type", "PodScheduled"}, {"status", "True"}}})},
            {"containerStatuses",
             Json::array({{{"name", "main"},
                           {"ready", true},
                           {"restartCount", 0},
                           {"image", "registry.example.com/ml/trainer:2.14.1"},
                           {"containerID", fmt::format("containerd://{:064x}", index)},
                           {"state", {{"running", {{"startedAt", "2026-11-21T09:00:05Z"}}}}}}})}}}};
}

// A running pod that asks for CPU and memory only, as most pods even on GPU nodes do (~2.5 KB):
// a service-mesh sidecar (an init container with restartPolicy Always), a regular init container
// and the main container, so that every rule of the pod's request is exercised.
Json realistic_cpu_pod(int index, const std::string& node) {
  const std::string name = fmt::format("web-{:06d}", index);
  Json env = Json::array();
  for (int i = 0; i < 8; ++i)
    env.push_back({{"name", fmt::format("WEB_SETTING_{}", i)},
                   {"value", fmt::format("value-{}-{}", index, i)}});
  const Json mount = Json::array({{{"name", "kube-api-access"},
                                   {"mountPath", "/var/run/secrets/kubernetes.io/serviceaccount"},
                                   {"readOnly", true}}});
  return {{"apiVersion", "v1"},
          {"kind", "Pod"},
          {"metadata",
           {{"name", name},
            {"namespace", fmt::format("web-{}", index % 20)},
            {"labels",
             {{"app", "web"},
              {"pod-template-hash", "7c6d9f8b5"},
              {"security.istio.io/tlsMode", "istio"}}},
            {"annotations",
             {{"kubectl.kubernetes.io/default-container", "web"},
              {"sidecar.istio.io/status", "{\"initContainers\":[\"istio-proxy\"]}"}}},
            {"ownerReferences",
             Json::array({{{"apiVersion", "apps/v1"},
                           {"kind", "ReplicaSet"},
                           {"name", "web-7c6d9f8b5"},
                           {"uid", fmt::format("00000000-0000-4000-9000-{:012d}", index % 1000)},
                           {"controller", true},
                           {"blockOwnerDeletion", true}}})}}},
          {"spec",
           {{"nodeName", node},
            {"schedulerName", "default-scheduler"},
            {"initContainers",
             Json::array({{{"name", "istio-proxy"},
                           {"image", "docker.io/istio/proxyv2:1.24.0"},
                           {"restartPolicy", "Always"},
                           {"resources",
                            {{"limits", {{"cpu", "2"}, {"memory", "1Gi"}}},
                             {"requests", {{"cpu", "100m"}, {"memory", "128Mi"}}}}},
                           {"volumeMounts", mount}},
                          {{"name", "migrate"},
                           {"image", "registry.example.com/web/migrate:3.2.0"},
                           {"command", {"/migrate", "--up"}},
                           {"resources", {{"limits", {{"cpu", "1"}, {"memory", "512Mi"}}}}},
                           {"volumeMounts", mount}}})},
            {"containers",
             Json::array({{{"name", "web"},
                           {"image", "registry.example.com/web/frontend:5.9.3"},
                           {"env", env},
                           {"ports", Json::array({{{"containerPort", 8080}, {"protocol", "TCP"}}})},
                           {"resources",
                            {{"limits", {{"memory", "2Gi"}}},
                             {"requests", {{"cpu", "500m"}, {"memory", "1Gi"}}}}},
                           {"volumeMounts", mount}}})},
            {"volumes",
             Json::array({{{"name", "kube-api-access"}, {"projected", {{"defaultMode", 420}}}}})},
            {"tolerations", Json::array({{{"key", "node.kubernetes.io/not-ready"},
                                          {"operator", "Exists"},
                                          {"effect", "NoExecute"},
                                          {"tolerationSeconds", 300}}})}}},
          {"status",
           {{"phase", "Running"},
            {"podIP", fmt::format("172.17.{}.{}", index / 256 % 256, index % 256)},
            {"hostIP", "10.0.0.1"},
            {"startTime", "2026-11-21T09:00:00Z"},
            {"conditions", Json::array({{{"type", "Ready"}, {"status", "True"}},
                                        {{"type", "PodScheduled"}, {"status", "True"}}})},
            {"containerStatuses",
             Json::array({{{"name", "web"},
                           {"ready", true},
                           {"restartCount", 0},
                           {"image", "registry.example.com/web/frontend:5.9.3"},
                           {"containerID", fmt::format("containerd://{:064x}", index)},
                           {"state", {{"running", {{"startedAt", "2026-11-21T09:00:05Z"}}}}}}})}}}};
}

// Creates every object of a v1 List file; throws naming the item that cannot be created.
void load_seed(FakeApiServer& fake, const std::string& path) {
  const Json list = gpushare::standalone::read_cluster_file(path);
  const Json* items = list.is_object() && list.contains("items") ? &list["items"] : nullptr;
  if (items == nullptr || !items->is_array())
    throw std::runtime_error("not a v1 List: no items array");
  for (std::size_t i = 0; i < items->size(); ++i) {
    const Json& item = (*items)[i];
    const std::string kind = item.is_object() && item.contains("kind") && item["kind"].is_string()
                                 ? item["kind"].get<std::string>()
                                 : "";
    std::optional<Resource> resource;
    for (const Resource known : gpushare::testing::kAllResources) {
      if (gpushare::testing::info(known).kind == kind) resource = known;
    }
    if (!resource) {
      throw std::runtime_error(fmt::format(
          "items[{}]: kind \"{}\" is not served (Node, Pod, ConfigMap, Lease, ResourceSlice, "
          "ResourceClaim, ResourceClaimTemplate, DeviceClass, PodDisruptionBudget, Event)",
          i, kind));
    }
    try {
      fake.create(*resource, item);
    } catch (const std::exception& e) {
      throw std::runtime_error(fmt::format(
          "items[{}] ({} {}): {}", i, kind,
          item.contains("metadata") ? item["metadata"].value("name", "") : "", e.what()));
    }
  }
}

// One line per expiry, with the wall-clock time the watches were told (after the compaction,
// which frees the whole history: ~1 s the first time after seeding 50 000 pods), so that a
// benchmark can time what follows.
void expire_watches(FakeApiServer& fake) {
  const std::size_t open = fake.expire_watches();
  const auto now =
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  std::cout << fmt::format(
                   "expired watches at {:.6f}: {} open watches end with 410, compacted to "
                   "resourceVersion {}",
                   now, open, fake.compacted_resource_version())
            << std::endl;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"fake Kubernetes API server for trying gpushare (test tool)"};
  int port = 0;
  std::string kubeconfig_out;
  std::string seed;
  int nodes = 0;
  int pods = 0;
  int gpus_per_node = 8;
  long long per_gpu = 16;
  int cpu_only_percent = 20;
  std::string token;
  app.add_option("--port", port, "port on 127.0.0.1 (0 = any; printed)");
  app.add_option("--kubeconfig-out", kubeconfig_out, "write a kubeconfig for this server here")
      ->required();
  app.add_option("--seed", seed, "v1 List (YAML or JSON) of objects to create");
  app.add_option("--nodes", nodes, "generate this many realistic GPU nodes");
  app.add_option("--pods", pods, "generate this many realistic running GPU pods on them");
  app.add_option("--gpus-per-node", gpus_per_node);
  app.add_option("--gpu-mem-per-gpu", per_gpu);
  app.add_option("--cpu-only-percent", cpu_only_percent,
                 "share of the generated pods that ask for CPU and memory only (default 20)")
      ->check(CLI::Range(0, 100));
  app.add_option("--token", token, "require this bearer token");
  double expire_every = 0;
  app.add_option("--expire-watches-every", expire_every,
                 "every this many seconds, end every open watch with an ERROR 410 event (history "
                 "compacted past it; watches and exact lists from older resourceVersions get 410 "
                 "too), as SIGUSR1 does once (default 0: only on SIGUSR1)")
      ->check(CLI::NonNegativeNumber);
  CLI11_PARSE(app, argc, argv);

  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGUSR1);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  gpushare::testing::FakeApiServerOptions options;
  if (!token.empty()) options.accepted_tokens = std::set<std::string>{token};
  options.max_history = 200000;
  FakeApiServer fake(options);
  if (port != 0 && fake.port() != port) {
    std::cerr << "note: --port is not supported by this build of the fake; listening on "
              << fake.port() << "\n";
  }
  if (!seed.empty()) {
    try {
      load_seed(fake, seed);
    } catch (const std::exception& e) {
      std::cerr << "gpushare-fake-apiserver: --seed " << seed << ": " << e.what() << "\n";
      return 1;
    }
  }
  std::mt19937 random(42);
  for (int n = 0; n < nodes; ++n)
    fake.create(Resource::Nodes, realistic_node(n, gpus_per_node, per_gpu));
  if (nodes > 0) {
    // Spread pods over GPUs without overfilling any: 1..4 units each. Every so often a pod asks
    // for CPU and memory only, on any node.
    std::vector<long long> used(static_cast<std::size_t>(nodes) * gpus_per_node, 0);
    const int cpu_only = static_cast<int>(static_cast<long long>(pods) * cpu_only_percent / 100);
    for (int p = 0; p < pods; ++p) {
      if (cpu_only > 0 && static_cast<long long>(p) * cpu_only / pods !=
                              static_cast<long long>(p + 1) * cpu_only / pods) {
        fake.create(Resource::Pods,
                    realistic_cpu_pod(
                        p, fmt::format("gpu-node-{:05d}", static_cast<int>(random() % nodes))));
        continue;
      }
      const long long request = 1 + static_cast<long long>(random() % 4);
      for (int attempt = 0; attempt < 64; ++attempt) {
        const std::size_t slot = random() % used.size();
        if (used[slot] + request > per_gpu) continue;
        used[slot] += request;
        fake.create(
            Resource::Pods,
            realistic_pod(p, fmt::format("gpu-node-{:05d}", static_cast<int>(slot) / gpus_per_node),
                          static_cast<int>(slot) % gpus_per_node, request));
        break;
      }
    }
  }
  fake.write_kubeconfig(kubeconfig_out, token);
  std::cout << fmt::format("fake API server on {} ({} nodes, {} pods); kubeconfig {}",
                           fake.base_url(), fake.list(Resource::Nodes).size(),
                           fake.list(Resource::Pods).size(), kubeconfig_out)
            << std::endl;
  for (;;) {
    int signal = 0;
    if (expire_every > 0) {
      const auto period = std::chrono::duration<double>(expire_every);
      const auto seconds = std::chrono::floor<std::chrono::seconds>(period);
      const timespec timeout{
          static_cast<std::time_t>(seconds.count()),
          static_cast<long>(
              std::chrono::duration_cast<std::chrono::nanoseconds>(period - seconds).count())};
      signal = sigtimedwait(&signals, nullptr, &timeout);
      if (signal < 0) {  // the period passed (or EINTR: expiring once more is harmless)
        expire_watches(fake);
        continue;
      }
    } else if (sigwait(&signals, &signal) != 0) {
      continue;
    }
    if (signal == SIGUSR1) {
      expire_watches(fake);
      continue;
    }
    return 0;
  }
}
