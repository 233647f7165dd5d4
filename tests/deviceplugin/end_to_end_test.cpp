// gpushare-device-plugin as a process: its start-up refusals, and end to end with
// gpushare-extender (live mode) against the fake API server, the fake kubelet and the fake NVML
// library (libgpushare-fake-nvml.so, configured by GPUSHARE_FAKE_NVML_CONFIG), and the same flow
// through the real NVML library where $GPUSHARE_REAL_NVML_LIBRARY names one. Each end-to-end test
// skips, saying why, where what it needs is missing. $GPUSHARE_TEST_BINARY_DIR, where set, is
// where the binaries under test are (default: the build tree).

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "fakeapi/fake_apiserver.h"
#include "fakeapi/tests/test_helpers.h"
#include "fakekubelet/fake_kubelet.h"
#include "support/eventually.h"

namespace gpushare::testing {
namespace {

using namespace std::chrono_literals;
using Json = nlohmann::json;
using fakeapi_test::RunResult;
using fakeapi_test::Subprocess;

constexpr const char* kUuidA = "GPU-0f0e0d0c-0000-4000-8000-00000000000a";
constexpr const char* kUuidB = "GPU-0f0e0d0c-0000-4000-8000-00000000000b";

// Where the binaries under test are: $GPUSHARE_TEST_BINARY_DIR, else the build tree.
std::filesystem::path binary_dir() {
  const char* dir = std::getenv("GPUSHARE_TEST_BINARY_DIR");
  return dir != nullptr && *dir != '\0' ? std::filesystem::path(dir)
                                        : std::filesystem::path(GPUSHARE_BINARY_DIR);
}

std::string built(const std::string& name) {
  const auto path = binary_dir() / name;
  return std::filesystem::exists(path) ? path.string() : std::string();
}

// A port nothing listens on right now.
int free_port() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address);
  socklen_t length = sizeof address;
  getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length);
  close(fd);
  return ntohs(address.sin_port);
}

class ShortTempDir {
 public:
  ShortTempDir() {
    char name[] = "/tmp/gpe2e-XXXXXX";
    if (!mkdtemp(name)) throw std::runtime_error("mkdtemp");
    path_ = name;
  }
  ~ShortTempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

TEST(DevicePluginCli, RefusesAnUnknownMemoryUnitNamingTheChoices) {
  const std::string plugin = built("gpushare-device-plugin");
  ASSERT_FALSE(plugin.empty());
  const RunResult result = fakeapi_test::run_process({plugin, "--memory-unit", "GB"}, 30s);
  ASSERT_TRUE(result.exit_code.has_value());
  EXPECT_EQ(*result.exit_code, 2);
  EXPECT_NE(result.err.find("--memory-unit must be GiB or MiB"), std::string::npos) << result.err;
}

TEST(DevicePluginCli, RefusesAMissingNvmlLibraryNamingIt) {
  const std::string plugin = built("gpushare-device-plugin");
  ASSERT_FALSE(plugin.empty());
  const RunResult result = fakeapi_test::run_process(
      {plugin, "--discover", "--nvml-library", "/nonexistent/libnvml.so"}, 30s);
  ASSERT_TRUE(result.exit_code.has_value());
  EXPECT_EQ(*result.exit_code, 1);
  EXPECT_NE(result.err.find("/nonexistent/libnvml.so"), std::string::npos) << result.err;
}

// Once per --device-list-strategy: the container's response names the chosen GPU the way that
// strategy hands it to the runtime.
// One GPU as the end-to-end flow expects the plugin to advertise it.
struct ExpectedGpu {
  std::string uuid;
  std::int64_t memory_bytes = 0;
};

// What one end-to-end run uses: the NVML library the plugin loads, the GPUs it must find there
// (in NVML index order), and, for the fake library only, the file its XID events are read from.
struct EndToEndSetup {
  std::string strategy;
  std::string nvml_library;
  std::vector<ExpectedGpu> gpus;
  std::filesystem::path xid_file;  // empty: no XID can be injected (real NVML)
};

constexpr std::int64_t kGiB = std::int64_t{1} << 30;

// Devices per GPU: every GPU is advertised at the smallest GPU's size, one device per GiB.
std::int64_t units_per_gpu(const std::vector<ExpectedGpu>& gpus) {
  std::int64_t units = std::numeric_limits<std::int64_t>::max();
  for (const auto& gpu : gpus) units = std::min(units, gpu.memory_bytes / kGiB);
  return units;
}

void expect_hands_over(const std::string& strategy,
                       const v1beta1::ContainerAllocateResponse& response,
                       const std::string& uuid) {
  const std::string cdi_name = "nvidia.com/gpu=" + uuid;
  if (strategy == "envvar") {
    ASSERT_EQ(response.envs().count("NVIDIA_VISIBLE_DEVICES"), 1u);
    EXPECT_EQ(response.envs().at("NVIDIA_VISIBLE_DEVICES"), uuid);
    EXPECT_EQ(response.cdi_devices_size(), 0);
  } else if (strategy == "cdi-cri") {
    ASSERT_EQ(response.cdi_devices_size(), 1);
    EXPECT_EQ(response.cdi_devices(0).name(), cdi_name);
    EXPECT_EQ(response.envs().count("NVIDIA_VISIBLE_DEVICES"), 0u);
  } else {
    int named = 0;
    for (const auto& [key, value] : response.annotations()) {
      if (key.rfind("cdi.k8s.io/", 0) == 0 && value == cdi_name) ++named;
    }
    EXPECT_EQ(named, 1) << "no cdi.k8s.io/ annotation names " << cdi_name;
    EXPECT_EQ(response.cdi_devices_size(), 0);
  }
}

// The whole node path: --discover; the plugin registers with the fake kubelet and advertises
// every GPU's devices; it writes gpu-count on the Node; gpushare-extender (live mode, against the
// fake API server) filters and binds a pod of 4 devices; kubelet's admission gets that GPU from
// the plugin; with an XID file, a critical XID marks the GPU's devices Unhealthy and the
// unhealthy-GPU ConfigMap lists it; SIGTERM removes the socket and exits 0.
void run_end_to_end(const EndToEndSetup& setup, const std::filesystem::path& dir) {
  const std::string plugin = built("gpushare-device-plugin");
  const std::string extender = built("gpushare-extender");
  ASSERT_FALSE(plugin.empty());
  if (extender.empty()) GTEST_SKIP() << "gpushare-extender is not built in " << binary_dir();
  const std::int64_t units = units_per_gpu(setup.gpus);
  ASSERT_GE(units, 4) << "the flow asks for 4 devices of one GPU";
  const auto gpu_count = static_cast<std::int64_t>(setup.gpus.size());
  const std::int64_t devices = units * gpu_count;

  FakeApiServer api;
  Json node = make_node("node-1");
  node["status"]["capacity"] = {{"cpu", "32"}, {"memory", "128Gi"}};
  api.create(Resource::Nodes, node);
  api.write_kubeconfig(dir / "kubeconfig");

  // --discover prints the advertisement without kubelet or API server.
  const RunResult discovered =
      fakeapi_test::run_process({plugin, "--discover", "--nvml-library", setup.nvml_library}, 30s);
  ASSERT_EQ(discovered.exit_code, 0) << discovered.err;
  EXPECT_NE(discovered.out.find(std::to_string(devices) + " devices"), std::string::npos)
      << discovered.out;
  for (const auto& gpu : setup.gpus) {
    EXPECT_NE(discovered.out.find(gpu.uuid), std::string::npos) << discovered.out;
  }

  FakeKubelet kubelet(dir / "dp");
  Subprocess plugin_process(
      {plugin, "--nvml-library", setup.nvml_library, "--kubeconfig", (dir / "kubeconfig").string(),
       "--node-name", "node-1", "--kubelet-dir", (dir / "dp").string(), "--device-list-strategy",
       setup.strategy, "--pod-resources-socket", kubelet.pod_resources_socket(), "--listen",
       "127.0.0.1:" + std::to_string(free_port())});
  ASSERT_TRUE(kubelet.wait_for_registrations(1, 60s)) << plugin_process.stderr_text();
  ASSERT_TRUE(kubelet.wait_for_devices(devices, 0, 60s)) << plugin_process.stderr_text();
  // The plugin writes gpu-count; kubelet (here the test) writes gpu-mem from the devices.
  ASSERT_TRUE(eventually(
      [&] {
        const auto n = api.get(Resource::Nodes, "", "node-1");
        return n && (*n)["status"]["capacity"].value("aliyun.com/gpu-count", "") ==
                        std::to_string(gpu_count);
      },
      30s))
      << plugin_process.stderr_text();
  api.mutate(Resource::Nodes, "", "node-1", [&](Json& n) {
    n["status"]["capacity"]["aliyun.com/gpu-mem"] = std::to_string(devices);
  });

  const int extender_port = free_port();
  Subprocess extender_process({extender, "--kubeconfig", (dir / "kubeconfig").string(), "--listen",
                               "127.0.0.1:" + std::to_string(extender_port)});
  httplib::Client client("127.0.0.1", extender_port);
  client.set_read_timeout(10, 0);
  ASSERT_TRUE(eventually(
      [&] {
        const auto ready = client.Get("/readyz");
        return ready && ready->status == 200;
      },
      60s))
      << extender_process.stderr_text();

  Json pod = make_pod("default", "trainer", "");
  pod["spec"]["containers"][0]["resources"] = {{"limits", {{"aliyun.com/gpu-mem", "4"}}}};
  pod = api.create(Resource::Pods, pod);
  // The extender's model sees the pod and the node's GPUs through its watches.
  Json filtered;
  ASSERT_TRUE(eventually(
      [&] {
        const auto reply =
            client.Post("/gpushare-scheduler/filter",
                        Json{{"Pod", pod}, {"NodeNames", {"node-1"}}}.dump(), "application/json");
        if (!reply || reply->status != 200) return false;
        filtered = Json::parse(reply->body);
        return filtered["NodeNames"].is_array() && filtered["NodeNames"].size() == 1;
      },
      30s))
      << filtered.dump() << extender_process.stderr_text();
  const auto bound = client.Post("/gpushare-scheduler/bind",
                                 Json{{"PodName", "trainer"},
                                      {"PodNamespace", "default"},
                                      {"PodUID", pod["metadata"]["uid"]},
                                      {"Node", "node-1"}}
                                     .dump(),
                                 "application/json");
  ASSERT_TRUE(bound);
  ASSERT_EQ(bound->status, 200) << bound->body;
  ASSERT_TRUE(Json::parse(bound->body).value("Error", "").empty()) << bound->body;
  const auto after_bind = api.get(Resource::Pods, "default", "trainer");
  ASSERT_TRUE(after_bind);
  const std::string idx =
      (*after_bind)["metadata"]["annotations"].value("ALIYUN_COM_GPU_MEM_IDX", "");
  std::size_t chosen = setup.gpus.size();
  for (std::size_t i = 0; i < setup.gpus.size(); ++i) {
    if (idx == std::to_string(i)) chosen = i;
  }
  ASSERT_LT(chosen, setup.gpus.size()) << after_bind->dump();

  v1beta1::ContainerAllocateResponse response;
  const grpc::Status status = kubelet.admit("default/trainer", "main", 4, &response);
  ASSERT_TRUE(status.ok()) << status.error_message() << plugin_process.stderr_text();
  expect_hands_over(setup.strategy, response, setup.gpus[chosen].uuid);
  EXPECT_EQ(response.envs().at("ALIYUN_COM_GPU_MEM_IDX"), idx);
  EXPECT_EQ(response.envs().at("ALIYUN_COM_GPU_MEM_CONTAINER"), "4");
  const auto assigned = api.get(Resource::Pods, "default", "trainer");
  EXPECT_EQ((*assigned)["metadata"]["annotations"].value("ALIYUN_COM_GPU_MEM_ASSIGNED", ""),
            "true");

  if (!setup.xid_file.empty()) {
    // A critical XID on the last GPU: kubelet sees its devices Unhealthy, the ConfigMap lists it
    // (the deadlines only bound a hang).
    const std::size_t last = setup.gpus.size() - 1;
    std::ofstream(setup.xid_file, std::ios::app) << setup.gpus[last].uuid << " 79\n";
    EXPECT_TRUE(kubelet.wait_for_devices(devices - units, units, 30s))
        << plugin_process.stderr_text();
    EXPECT_TRUE(eventually(
        [&] {
          const auto cm = api.get(Resource::ConfigMaps, "kube-system", "unhealthy-gpu-node-1");
          return cm && (*cm)["data"].value("gpus", "") == std::to_string(last);
        },
        30s))
        << plugin_process.stderr_text();
  } else {
    // No XID arrived: every device is still Healthy after the allocation.
    EXPECT_TRUE(kubelet.wait_for_devices(devices, 0, 10s)) << plugin_process.stderr_text();
  }

  plugin_process.signal(SIGTERM);
  EXPECT_EQ(plugin_process.wait_exit(30s), 0) << plugin_process.stderr_text();
  EXPECT_FALSE(std::filesystem::exists(dir / "dp" / "gpushare.sock"));
  extender_process.signal(SIGTERM);
  extender_process.wait_exit(30s);
  plugin_process.join_readers();
  extender_process.join_readers();
}

// Once per --device-list-strategy, on the fake NVML library: the container's response names the
// chosen GPU the way that strategy hands it to the runtime.
class DevicePluginEndToEnd : public ::testing::TestWithParam<std::string> {};

INSTANTIATE_TEST_SUITE_P(EveryStrategy, DevicePluginEndToEnd,
                         ::testing::Values("envvar", "cdi-cri", "cdi-annotations"),
                         [](const auto& info) {
                           std::string name = info.param;
                           std::erase(name, '-');
                           return name;
                         });

TEST_P(DevicePluginEndToEnd, ExtenderBindsKubeletAllocatesAnXidMarksTheGpuUnhealthy) {
  const std::string fake_nvml = built("libgpushare-fake-nvml.so");
  if (fake_nvml.empty() ||
      !std::filesystem::exists(std::filesystem::path(GPUSHARE_SOURCE_DIR) / "src" / "nvml")) {
    GTEST_SKIP()
        << "the end-to-end test needs the NVML loader (src/nvml) and the fake NVML library "
        << "(target gpushare_fake_nvml, libgpushare-fake-nvml.so in " << binary_dir()
        << "): not in this tree";
  }
  ShortTempDir dir;
  EndToEndSetup setup{GetParam(),
                      fake_nvml,
                      {{kUuidA, 16106127360LL}, {kUuidB, 16106127360LL}},
                      dir.path() / "xids"};
  std::ofstream(setup.xid_file).flush();
  const Json nvml_config = {{"gpus",
                             {{{"uuid", kUuidA},
                               {"name", "Tesla T4"},
                               {"memory_bytes", 16106127360LL},
                               {"mig_mode", 0},
                               {"pci_bus_id", "00000000:00:1E.0"},
                               {"minor", 0}},
                              {{"uuid", kUuidB},
                               {"name", "Tesla T4"},
                               {"memory_bytes", 16106127360LL},
                               {"mig_mode", 0},
                               {"pci_bus_id", "00000000:00:1F.0"},
                               {"minor", 1}}}},
                            {"xid_file", setup.xid_file.string()}};
  std::ofstream(dir.path() / "nvml.json") << nvml_config.dump();
  setenv("GPUSHARE_FAKE_NVML_CONFIG", (dir.path() / "nvml.json").c_str(), 1);
  run_end_to_end(setup, dir.path());
}

// The GPUs nvidia-smi reports (index order): UUID and total memory. Empty without nvidia-smi.
std::vector<ExpectedGpu> gpus_from_nvidia_smi() {
  const RunResult listed = fakeapi_test::run_process(
      {"nvidia-smi", "--query-gpu=uuid,memory.total", "--format=csv,noheader,nounits"}, 60s);
  std::vector<ExpectedGpu> gpus;
  if (listed.exit_code != 0) return gpus;
  std::istringstream lines(listed.out);
  for (std::string line; std::getline(lines, line);) {
    const auto comma = line.find(',');
    if (comma == std::string::npos) continue;
    ExpectedGpu gpu;
    gpu.uuid = line.substr(0, comma);
    gpu.memory_bytes = std::stoll(line.substr(comma + 1)) * (std::int64_t{1} << 20);  // MiB
    gpus.push_back(gpu);
  }
  return gpus;
}

// The same flow on a machine with NVIDIA GPUs, through the real NVML library that
// $GPUSHARE_REAL_NVML_LIBRARY names (e.g. libnvidia-ml.so.1), checked against what nvidia-smi
// reports. Skips where that variable is unset (CI has no GPU). MIG-enabled GPUs are not expected
// here: the plugin advertises whole GPUs.
TEST(DevicePluginRealNvml, ExtenderBindsKubeletAllocatesARealGpu) {
  const char* library = std::getenv("GPUSHARE_REAL_NVML_LIBRARY");
  if (library == nullptr || *library == '\0') {
    GTEST_SKIP() << "set GPUSHARE_REAL_NVML_LIBRARY to NVML's library on a machine with a GPU";
  }
  const std::vector<ExpectedGpu> gpus = gpus_from_nvidia_smi();
  ASSERT_FALSE(gpus.empty()) << "nvidia-smi listed no GPU";
  ShortTempDir dir;
  const char* strategy = std::getenv("GPUSHARE_REAL_NVML_STRATEGY");
  run_end_to_end({strategy != nullptr ? strategy : "envvar", library, gpus, {}}, dir.path());
}

}  // namespace
}  // namespace gpushare::testing
