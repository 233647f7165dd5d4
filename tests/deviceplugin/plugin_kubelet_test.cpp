// The device plugin in process against the fake kubelet (real gRPC on unix sockets) and the fake
// API server: registration, advertisement, kubelet's admission calls, the races of the Go plugin,
// failures, kubelet restarts, health.

#include <gtest/gtest.h>
#include <stdlib.h>

#include <deque>
#include <filesystem>
#include <thread>

#include "fakeapi/fake_apiserver.h"
#include "fakekubelet/fake_kubelet.h"
#include "gpushare/apiclient/api_client.h"
#include "gpushare/apiclient/kubeconfig.h"
#include "gpushare/deviceplugin/cluster.h"
#include "gpushare/deviceplugin/health.h"
#include "gpushare/deviceplugin/plugin.h"
#include "gpushare/deviceplugin/server.h"
#include "support/eventually.h"

namespace gpushare::testing {
namespace {

using namespace std::chrono_literals;
using deviceplugin::AdvertisedGpu;
using deviceplugin::Advertisement;
using Json = nlohmann::json;

constexpr const char* kUuidA = "GPU-8a8c1d72-0000-4000-8000-00000000000a";
constexpr const char* kUuidB = "GPU-8a8c1d72-0000-4000-8000-00000000000b";

// A unix-socket-friendly (short) temporary directory, removed at the end.
class TempDir {
 public:
  TempDir() {
    char name[] = "/tmp/gpdp-XXXXXX";
    if (!mkdtemp(name)) throw std::runtime_error("mkdtemp");
    path_ = name;
  }
  ~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

// XIDs injected by the test.
class FakeInventory : public nvml::GpuInventory {
 public:
  std::vector<nvml::GpuInfo> list() override { return {}; }
  std::vector<nvml::XidEvent> wait_for_xids(std::chrono::milliseconds timeout) override {
    std::unique_lock lock(mutex_);
    cv_.wait_for(lock, std::min(timeout, std::chrono::milliseconds(100)),
                 [&] { return !queue_.empty(); });
    std::vector<nvml::XidEvent> out(queue_.begin(), queue_.end());
    queue_.clear();
    return out;
  }
  void push(nvml::XidEvent event) {
    {
      std::lock_guard lock(mutex_);
      queue_.push_back(std::move(event));
    }
    cv_.notify_all();
  }

 private:
  std::mutex mutex_;  // guards queue_
  std::condition_variable cv_;
  std::deque<nvml::XidEvent> queue_;
};

Advertisement two_gpus() {
  Advertisement ad;
  ad.units_per_gpu = 4;
  ad.gpus = {AdvertisedGpu{0, kUuidA, "Tesla T4", 0, 0, 4ull << 30},
             AdvertisedGpu{1, kUuidB, "Tesla T4", 1, 1, 4ull << 30}};
  return ad;
}

// A pod as the extender leaves it after bind: bound to node-1 with the annotation protocol.
Json bound_pod(const std::string& name, std::vector<int> limits, int gpu, long long assume_time) {
  Json pod = make_pod("default", name, "node-1");
  Json containers = Json::array();
  int total = 0;
  for (std::size_t i = 0; i < limits.size(); ++i) {
    containers.push_back(
        {{"name", "c" + std::to_string(i)},
         {"image", "cuda"},
         {"resources", {{"limits", {{"aliyun.com/gpu-mem", std::to_string(limits[i])}}}}}});
    total += limits[i];
  }
  pod["spec"]["containers"] = containers;
  pod["metadata"]["annotations"] = {
      {"ALIYUN_COM_GPU_MEM_IDX", std::to_string(gpu)},
      {"ALIYUN_COM_GPU_MEM_POD", std::to_string(total)},
      {"ALIYUN_COM_GPU_MEM_DEV", "4"},
      {"ALIYUN_COM_GPU_MEM_ASSIGNED", "false"},
      {"ALIYUN_COM_GPU_MEM_ASSUME_TIME", std::to_string(assume_time)}};
  return pod;
}

class PluginTest : public ::testing::Test {
 protected:
  void start(FakeKubelet::Options kubelet_options = {}, bool check_handouts = true) {
    api_.create(Resource::Nodes, make_node("node-1"));
    api_.write_kubeconfig(dir_.path() / "kubeconfig");
    apiclient::ClientOptions client_options;
    client_options.connect_timeout = 1s;
    client_options.request_timeout = 3s;
    client_options.retry.max_attempts = 2;
    client_options.retry.base_delay = 10ms;
    client_ = std::make_unique<apiclient::ApiClient>(
        apiclient::load_kubeconfig(dir_.path() / "kubeconfig"), client_options);
    cluster_ = std::make_unique<deviceplugin::Cluster>(*client_, "node-1");
    kubelet_ = std::make_unique<FakeKubelet>(dir_.path() / "dp", kubelet_options);
    deviceplugin::PluginOptions options;
    if (check_handouts) options.pod_resources_socket = kubelet_->pod_resources_socket();
    service_ = std::make_unique<deviceplugin::DevicePluginService>(two_gpus(), *cluster_, options,
                                                                   metrics_);
    deviceplugin::ServerOptions server_options;
    server_options.kubelet_dir = dir_.path() / "dp";
    server_options.register_timeout = 300ms;
    server_options.initial_backoff = 50ms;
    server_options.max_backoff = 400ms;
    server_ = std::make_unique<deviceplugin::PluginServer>(*service_, server_options, metrics_);
    thread_ = std::jthread([this](std::stop_token stop) { server_->run(stop); });
  }

  void start_and_wait() {
    start();
    ASSERT_TRUE(kubelet_->wait_for_registrations(1, 20s));
    ASSERT_TRUE(kubelet_->wait_for_devices(8, 0, 20s));
  }

  void TearDown() override {
    if (thread_.joinable()) {
      thread_.request_stop();
      thread_.join();
    }
    server_.reset();
    kubelet_.reset();
  }

  Json annotations(const std::string& name) {
    const auto pod = api_.get(Resource::Pods, "default", name);
    return pod ? (*pod)["metadata"]["annotations"] : Json();
  }
  std::string uuid_of_annotated_gpu(const std::string& name) {
    const std::string idx = annotations(name).value("ALIYUN_COM_GPU_MEM_IDX", "");
    return idx == "0" ? kUuidA : idx == "1" ? kUuidB : "?";
  }

  TempDir dir_;
  FakeApiServer api_;
  std::unique_ptr<apiclient::ApiClient> client_;
  std::unique_ptr<deviceplugin::Cluster> cluster_;
  deviceplugin::Metrics metrics_;
  std::unique_ptr<FakeKubelet> kubelet_;
  std::unique_ptr<deviceplugin::DevicePluginService> service_;
  std::unique_ptr<deviceplugin::PluginServer> server_;
  std::jthread thread_;
};

TEST_F(PluginTest, ServesBeforeRegisteringAndAdvertisesOneDevicePerUnit) {
  start_and_wait();
  const auto devices = kubelet_->devices();
  EXPECT_EQ(devices.size(), 8u);
  EXPECT_TRUE(devices.contains(std::string(kUuidA) + "-_-0"));
  EXPECT_TRUE(devices.contains(std::string(kUuidB) + "-_-3"));
  // The plugin counts a registration once kubelet's Register call returns to it, which may be
  // after kubelet has already listed the devices.
  EXPECT_TRUE(eventually([&] {
    return metrics_.text().find("gpushare_device_plugin_registrations_total 1") !=
           std::string::npos;
  }));
}

TEST_F(PluginTest, SteersKubeletToTheExtendersGpu) {
  start_and_wait();
  api_.create(Resource::Pods, bound_pod("solo", {2}, 0, 100));
  v1beta1::ContainerAllocateResponse response;
  std::vector<std::string> ids;
  ASSERT_TRUE(kubelet_->admit("default/solo", "c0", 2, &response, &ids).ok());
  // Unsteered, the fake kubelet would take GPU B's devices.
  for (const auto& id : ids) EXPECT_EQ(id.rfind(kUuidA, 0), 0u) << id;
  EXPECT_EQ(response.envs().at("NVIDIA_VISIBLE_DEVICES"), kUuidA);
  EXPECT_EQ(response.envs().at("ALIYUN_COM_GPU_MEM_IDX"), "0");
  EXPECT_EQ(response.envs().at("ALIYUN_COM_GPU_MEM_POD"), "2");
  EXPECT_EQ(response.envs().at("ALIYUN_COM_GPU_MEM_CONTAINER"), "2");
  EXPECT_EQ(response.envs().at("ALIYUN_COM_GPU_MEM_DEV"), "4");
  EXPECT_EQ(annotations("solo").value("ALIYUN_COM_GPU_MEM_ASSIGNED", ""), "true");
}

// The Go plugin's race: two pods of equal size bound to different GPUs, kubelet admitting them
// in the opposite order of the binds. Each container must run on the GPU its pod's annotations
// name (the extender's accounting), both pods must start, and the GPUs must differ.
TEST_F(PluginTest, EqualPodsAdmittedInReverseOrderEachRunOnTheirPodsGpu) {
  start_and_wait();
  api_.create(Resource::Pods, bound_pod("first", {2}, 0, 100));
  api_.create(Resource::Pods, bound_pod("second", {2}, 1, 200));
  v1beta1::ContainerAllocateResponse second;
  v1beta1::ContainerAllocateResponse first;
  ASSERT_TRUE(kubelet_->admit("default/second", "c0", 2, &second).ok());
  ASSERT_TRUE(kubelet_->admit("default/first", "c0", 2, &first).ok());
  const std::string second_gpu = second.envs().at("NVIDIA_VISIBLE_DEVICES");
  const std::string first_gpu = first.envs().at("NVIDIA_VISIBLE_DEVICES");
  EXPECT_NE(first_gpu, second_gpu);
  EXPECT_EQ(uuid_of_annotated_gpu("first"), first_gpu);
  EXPECT_EQ(uuid_of_annotated_gpu("second"), second_gpu);
  EXPECT_EQ(annotations("first").value("ALIYUN_COM_GPU_MEM_IDX", ""),
            first.envs().at("ALIYUN_COM_GPU_MEM_IDX"));
  EXPECT_EQ(annotations("second").value("ALIYUN_COM_GPU_MEM_IDX", ""),
            second.envs().at("ALIYUN_COM_GPU_MEM_IDX"));
  EXPECT_EQ(annotations("first").value("ALIYUN_COM_GPU_MEM_ASSIGNED", ""), "true");
  EXPECT_EQ(annotations("second").value("ALIYUN_COM_GPU_MEM_ASSIGNED", ""), "true");
}

TEST_F(PluginTest, EqualPodsAdmittedInBindOrderKeepTheExtendersChoice) {
  start_and_wait();
  api_.create(Resource::Pods, bound_pod("first", {2}, 1, 100));
  api_.create(Resource::Pods, bound_pod("second", {2}, 0, 200));
  v1beta1::ContainerAllocateResponse first;
  v1beta1::ContainerAllocateResponse second;
  ASSERT_TRUE(kubelet_->admit("default/first", "c0", 2, &first).ok());
  ASSERT_TRUE(kubelet_->admit("default/second", "c0", 2, &second).ok());
  EXPECT_EQ(first.envs().at("NVIDIA_VISIBLE_DEVICES"), kUuidB);
  EXPECT_EQ(second.envs().at("NVIDIA_VISIBLE_DEVICES"), kUuidA);
  EXPECT_EQ(annotations("first").value("ALIYUN_COM_GPU_MEM_IDX", ""), "1");
  EXPECT_EQ(annotations("second").value("ALIYUN_COM_GPU_MEM_IDX", ""), "0");
}

TEST_F(PluginTest, EveryContainerOfAPodGetsItsShareOnThePodsGpu) {
  start_and_wait();
  api_.create(Resource::Pods, bound_pod("multi", {1, 2}, 1, 100));
  api_.create(Resource::Pods, bound_pod("other", {2}, 0, 50));  // same size as multi's c1
  v1beta1::ContainerAllocateResponse c0;
  v1beta1::ContainerAllocateResponse c1;
  ASSERT_TRUE(kubelet_->admit("default/multi", "c0", 1, &c0).ok());
  ASSERT_TRUE(kubelet_->admit("default/multi", "c1", 2, &c1).ok());
  EXPECT_EQ(c0.envs().at("NVIDIA_VISIBLE_DEVICES"), kUuidB);
  EXPECT_EQ(c1.envs().at("NVIDIA_VISIBLE_DEVICES"), kUuidB);
  EXPECT_EQ(c0.envs().at("ALIYUN_COM_GPU_MEM_CONTAINER"), "1");
  EXPECT_EQ(c1.envs().at("ALIYUN_COM_GPU_MEM_CONTAINER"), "2");
  EXPECT_EQ(c1.envs().at("ALIYUN_COM_GPU_MEM_POD"), "3");
  EXPECT_EQ(annotations("multi").value("ALIYUN_COM_GPU_MEM_ASSIGNED", ""), "true");
  EXPECT_EQ(annotations("other").value("ALIYUN_COM_GPU_MEM_ASSIGNED", ""), "false");
}

TEST_F(PluginTest, ACallNoPodWaitsForFailsWithAnEventOnTheBestCandidate) {
  start_and_wait();
  api_.create(Resource::Pods, bound_pod("waiting", {3}, 0, 100));
  api_.clear_request_log();
  v1beta1::ContainerAllocateResponse response;
  const grpc::Status status = kubelet_->admit("default/stranger", "c0", 2, &response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_NE(status.error_message().find("no pod"), std::string::npos) << status.error_message();
  EXPECT_NE(status.error_message().find("no GPU handed out"), std::string::npos);
  bool event_posted = false;
  for (const auto& request : api_.requests()) {
    event_posted = event_posted || (request.method == "POST" &&
                                    request.path == "/api/v1/namespaces/default/events");
  }
  EXPECT_TRUE(event_posted);
  EXPECT_EQ(annotations("waiting").value("ALIYUN_COM_GPU_MEM_ASSIGNED", ""), "false");
  EXPECT_NE(metrics_.text().find("gpushare_device_plugin_allocations_total{result=\"failed\"} 1"),
            std::string::npos);
}

TEST_F(PluginTest, ApiServerDownFailsTheCallAndHandsOutNothing) {
  start_and_wait();
  api_.create(Resource::Pods, bound_pod("p", {2}, 0, 100));
  api_.stop_listening();
  v1beta1::ContainerAllocateResponse response;
  const grpc::Status status = kubelet_->admit("default/p", "c0", 2, &response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_NE(status.error_message().find("API server"), std::string::npos) << status.error_message();
  EXPECT_EQ(response.envs_size(), 0);
  api_.start_listening();
  EXPECT_EQ(annotations("p").value("ALIYUN_COM_GPU_MEM_ASSIGNED", ""), "false");
  // Once the API server is back, the same pod is admitted.
  ASSERT_TRUE(kubelet_->admit("default/p", "c0", 2, &response).ok());
  EXPECT_EQ(response.envs().at("NVIDIA_VISIBLE_DEVICES"), kUuidA);
}

TEST_F(PluginTest, RetriesRegisterWithBackoffUntilKubeletAnswers) {
  FakeKubelet::Options options;
  options.answer_register = false;
  start(options);
  ASSERT_TRUE(eventually([&] { return kubelet_->register_calls() >= 3; }, 30s));
  EXPECT_EQ(kubelet_->registrations(), 0);
  kubelet_->set_answer_register(true);
  ASSERT_TRUE(kubelet_->wait_for_registrations(1, 30s));
  EXPECT_TRUE(kubelet_->wait_for_devices(8, 0, 20s));
}

TEST_F(PluginTest, RegistersAgainWhenKubeletRestarts) {
  start_and_wait();
  kubelet_->restart();
  ASSERT_TRUE(kubelet_->wait_for_registrations(2, 20s));  // the fake counts across restarts
  EXPECT_TRUE(kubelet_->wait_for_devices(8, 0, 20s));
  EXPECT_TRUE(eventually(
      [&] {
        return metrics_.text().find("gpushare_device_plugin_registrations_total 2") !=
               std::string::npos;
      },
      20s));
}

TEST_F(PluginTest, RegistersAgainWhenItsSocketIsRemoved) {
  start_and_wait();
  std::filesystem::remove(dir_.path() / "dp" / "gpushare.sock");
  ASSERT_TRUE(kubelet_->wait_for_registrations(2, 20s));
  EXPECT_TRUE(eventually(
      [&] { return std::filesystem::exists(dir_.path() / "dp" / "gpushare.sock"); }, 20s));
  EXPECT_TRUE(kubelet_->wait_for_devices(8, 0, 20s));
}

TEST_F(PluginTest, StopRemovesTheSocket) {
  start_and_wait();
  thread_.request_stop();
  thread_.join();
  EXPECT_FALSE(std::filesystem::exists(dir_.path() / "dp" / "gpushare.sock"));
}

TEST_F(PluginTest, ACriticalXidMakesTheGpuUnhealthyAndListsItInTheConfigMap) {
  start_and_wait();
  FakeInventory inventory;
  deviceplugin::HealthMonitor health(inventory, *service_, cluster_.get(), "kube-system");
  std::jthread health_thread([&](std::stop_token stop) { health.run(stop); });
  inventory.push({kUuidA, 13});  // an application error: ignored
  inventory.push({kUuidB, 79});
  ASSERT_TRUE(kubelet_->wait_for_devices(4, 4, 20s));
  for (const auto& [id, health_state] : kubelet_->devices()) {
    EXPECT_EQ(health_state, id.rfind(kUuidB, 0) == 0 ? "Unhealthy" : "Healthy") << id;
  }
  ASSERT_TRUE(eventually(
      [&] {
        return api_.get(Resource::ConfigMaps, "kube-system", "unhealthy-gpu-node-1").has_value();
      },
      20s));
  const auto configmap = api_.get(Resource::ConfigMaps, "kube-system", "unhealthy-gpu-node-1");
  EXPECT_EQ((*configmap)["data"]["gpus"], "1");
}

TEST_F(PluginTest, GpusAnOperatorListedStayUnhealthy) {
  api_.create(Resource::ConfigMaps,
              make_configmap("kube-system", "unhealthy-gpu-node-1", {{"gpus", "0"}}));
  start_and_wait();
  FakeInventory inventory;
  deviceplugin::HealthMonitor health(inventory, *service_, cluster_.get(), "kube-system");
  health.sync_operator_list();
  ASSERT_TRUE(kubelet_->wait_for_devices(4, 4, 20s));
  inventory.push({kUuidB, 48});
  std::jthread health_thread([&](std::stop_token stop) { health.run(stop); });
  ASSERT_TRUE(kubelet_->wait_for_devices(0, 8, 20s));
  ASSERT_TRUE(eventually(
      [&] {
        const auto cm = api_.get(Resource::ConfigMaps, "kube-system", "unhealthy-gpu-node-1");
        return cm && (*cm)["data"]["gpus"] == "0,1";
      },
      20s));
}

}  // namespace
}  // namespace gpushare::testing
