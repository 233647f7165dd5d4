// gpushare-device-plugin: the node half of GPU sharing. Advertises aliyun.com/gpu-mem to kubelet
// (one device per memory unit of each GPU), hands each container the GPU the extender chose for
// its pod, reports GPU health and the node's aliyun.com/gpu-count.

#include <httplib.h>
#include <pthread.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <csignal>
#include <cstdlib>
#include <iostream>
#include <mutex>
#include <optional>
#include <thread>

#include "gpushare/apiclient/api_client.h"
#include "gpushare/apiclient/config_resolution.h"
#include "gpushare/deviceplugin/cluster.h"
#include "gpushare/deviceplugin/devices.h"
#include "gpushare/deviceplugin/health.h"
#include "gpushare/deviceplugin/plugin.h"
#include "gpushare/deviceplugin/server.h"
#include "gpushare/kube/annotations.h"
#include "gpushare/nvml/gpu_inventory.h"
#include "gpushare/version.h"

namespace dp = gpushare::deviceplugin;

namespace {

struct Flags {
  std::string kubeconfig;
  std::string node_name;
  std::string kubelet_dir = "/var/lib/kubelet/device-plugins";
  std::string socket_name = "gpushare.sock";
  std::string memory_unit = "GiB";
  std::string device_list_strategy = "envvar";
  bool pass_device_specs = false;
  std::string memory_limit_env;
  bool health_check = true;
  std::string nvml_library = "libnvidia-ml.so.1";
  std::string listen = ":39998";
  std::string pod_resources_socket = "/var/lib/kubelet/pod-resources/kubelet.sock";
  std::string unhealthy_namespace = std::string(gpushare::kube::kDefaultUnhealthyNamespace);
  bool discover = false;
  std::string log_level = "info";
  int register_timeout_s = 10;
};

// host:port, ":port" meaning every address.
std::pair<std::string, int> split_listen(const std::string& text) {
  const auto colon = text.rfind(':');
  if (colon == std::string::npos) throw dp::ConfigError("--listen must be [host]:port");
  std::string host = text.substr(0, colon);
  if (host.empty()) host = "0.0.0.0";
  try {
    const int port = std::stoi(text.substr(colon + 1));
    if (port < 0 || port > 65535) throw std::out_of_range("port");
    return {host, port};
  } catch (const std::exception&) {
    throw dp::ConfigError("--listen: \"" + text + "\" has no valid port");
  }
}

// A stop flag that threads can wait on with a deadline.
class Stopper {
 public:
  void stop() {
    {
      std::lock_guard lock(mutex_);
      stopped_ = true;
    }
    cv_.notify_all();
  }
  // True when stopped (possibly before `timeout`).
  bool wait(std::chrono::milliseconds timeout) {
    std::unique_lock lock(mutex_);
    return cv_.wait_for(lock, timeout, [&] { return stopped_; });
  }

 private:
  std::mutex mutex_;  // guards stopped_
  std::condition_variable cv_;
  bool stopped_ = false;
};

int run(const Flags& flags) {
  const auto unit = dp::parse_memory_unit(flags.memory_unit);
  dp::ResponseOptions response;
  response.strategy = dp::parse_device_list_strategy(flags.device_list_strategy);
  response.pass_device_specs = flags.pass_device_specs;
  response.memory_limit_env = flags.memory_limit_env;

  std::unique_ptr<gpushare::nvml::GpuInventory> inventory =
      gpushare::nvml::open_nvml(flags.nvml_library);
  const auto gpus = inventory->list();
  dp::Advertisement ad = dp::plan_advertisement(gpus, unit, flags.node_name);
  if (flags.discover) {
    std::cout << dp::describe(ad);
    return 0;
  }
  for (const auto& warning : ad.warnings) spdlog::warn("{}", warning);
  if (flags.node_name.empty()) {
    throw dp::ConfigError(
        "--node-name is empty and $NODE_NAME is unset (set it from spec.nodeName)");
  }
  const auto [host, port] = split_listen(flags.listen);

  gpushare::apiclient::ConfigSources sources;
  sources.explicit_kubeconfig = flags.kubeconfig;
  gpushare::apiclient::ApiClient client(gpushare::apiclient::resolve_cluster_config(sources));
  dp::Cluster cluster(client, flags.node_name);
  dp::Metrics metrics;
  dp::PluginOptions plugin_options;
  plugin_options.response = response;
  plugin_options.unhealthy_namespace = flags.unhealthy_namespace;
  plugin_options.pod_resources_socket = flags.pod_resources_socket;
  dp::DevicePluginService service(ad, cluster, plugin_options, metrics);
  dp::HealthMonitor health(*inventory, service, &cluster, flags.unhealthy_namespace);

  const auto assert_gpu_count = [&] {
    auto patched = cluster.set_gpu_count(gpushare::kube::kDefaultCountName,
                                         static_cast<std::int64_t>(ad.gpus.size()));
    if (!patched.ok()) {
      spdlog::error("cannot set {}={} on node {}: {}", gpushare::kube::kDefaultCountName,
                    ad.gpus.size(), flags.node_name, patched.error().describe());
    }
  };

  // Blocks SIGINT/SIGTERM everywhere; waits for them on the main thread at the end.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  httplib::Server http;
  http.Get("/healthz", [](const httplib::Request&, httplib::Response& res) {
    res.set_content("ok\n", "text/plain");
  });
  http.Get("/metrics", [&metrics](const httplib::Request&, httplib::Response& res) {
    res.set_content(metrics.text(), "text/plain; version=0.0.4");
  });
  if (!http.bind_to_port(host, port)) {
    throw dp::ConfigError("--listen: cannot listen on " + flags.listen);
  }
  std::jthread http_thread([&] { http.listen_after_bind(); });

  Stopper stopper;
  std::atomic<bool> server_failed = false;
  std::jthread server_thread;
  std::jthread health_thread;
  std::jthread upkeep_thread;
  if (ad.gpus.empty()) {
    spdlog::warn("node {}: no GPU to share; not registering with kubelet", flags.node_name);
  } else {
    spdlog::info("{}", dp::describe(ad));
    assert_gpu_count();
    health.sync_operator_list();
    dp::ServerOptions server_options;
    server_options.kubelet_dir = flags.kubelet_dir;
    server_options.socket_name = flags.socket_name;
    server_options.register_timeout = std::chrono::seconds(flags.register_timeout_s);
    server_options.on_registered = assert_gpu_count;
    auto plugin_server = std::make_shared<dp::PluginServer>(service, server_options, metrics);
    server_thread = std::jthread([plugin_server, &server_failed](std::stop_token stop) {
      try {
        plugin_server->run(stop);
      } catch (const std::exception& e) {
        spdlog::critical("device plugin server: {}", e.what());
        server_failed = true;
        kill(getpid(), SIGTERM);  // process-directed: reaches the sigwait below
      }
    });
    if (flags.health_check) {
      health_thread = std::jthread([&health](std::stop_token stop) { health.run(stop); });
    } else {
      spdlog::info("--health-check=false: XID events are not watched");
    }
    // Re-read the operator's unhealthy list and re-assert gpu-count (kubelet may reset it).
    upkeep_thread = std::jthread([&] {
      while (!stopper.wait(std::chrono::seconds(30))) {
        health.sync_operator_list();
        assert_gpu_count();
      }
    });
  }

  int signal = 0;
  sigwait(&signals, &signal);
  spdlog::info("signal {}: stopping", signal);
  stopper.stop();
  if (server_thread.joinable()) {
    server_thread.request_stop();
    server_thread.join();
  }
  if (health_thread.joinable()) {
    health_thread.request_stop();
    health_thread.join();
  }
  if (upkeep_thread.joinable()) upkeep_thread.join();
  http.stop();
  return server_failed ? 1 : 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "gpushare-device-plugin: advertises aliyun.com/gpu-mem to kubelet and hands each "
      "container the GPU the gpushare extender chose"};
  Flags flags;
  if (const char* node = std::getenv("NODE_NAME")) flags.node_name = node;
  app.add_option("--kubeconfig", flags.kubeconfig,
                 "kubeconfig file (default: $KUBECONFIG, else in-cluster)");
  app.add_option("--node-name", flags.node_name, "this node's name (default: $NODE_NAME)");
  app.add_option("--kubelet-dir", flags.kubelet_dir, "kubelet's device-plugin directory")
      ->capture_default_str();
  app.add_option("--socket-name", flags.socket_name, "the plugin's socket in --kubelet-dir")
      ->capture_default_str();
  app.add_option("--memory-unit", flags.memory_unit, "one device per GiB or MiB")
      ->capture_default_str();
  app.add_option("--device-list-strategy", flags.device_list_strategy,
                 "envvar | cdi-cri | cdi-annotations")
      ->capture_default_str();
  app.add_flag("--pass-device-specs", flags.pass_device_specs,
               "add /dev/nvidia* device specs (rw) to each container");
  app.add_option(
      "--memory-limit-env", flags.memory_limit_env,
      "set the container's reservation as a limit in this variable (e.g. "
      "CUDA_DEVICE_MEMORY_LIMIT: \"<MiB>m\"; CUDA_MPS_PINNED_DEVICE_MEM_LIMIT: \"0=<MiB>M\")");
  app.add_option("--health-check", flags.health_check, "watch XID events (true|false)")
      ->capture_default_str();
  app.add_option("--nvml-library", flags.nvml_library, "NVML shared library to load")
      ->capture_default_str();
  app.add_option("--listen", flags.listen, "address of /healthz and /metrics")
      ->capture_default_str();
  app.add_option("--pod-resources-socket", flags.pod_resources_socket,
                 "kubelet's pod-resources socket, to check hand-outs (\"\": do not check)")
      ->capture_default_str();
  app.add_option("--unhealthy-namespace", flags.unhealthy_namespace,
                 "namespace of the unhealthy-gpu-<node> ConfigMap")
      ->capture_default_str();
  app.add_option("--register-timeout", flags.register_timeout_s,
                 "seconds to wait for kubelet's answer to Register")
      ->capture_default_str();
  app.add_flag(
      "--discover", flags.discover,
      "print what would be advertised (from NVML) and exit, without kubelet or API server");
  app.add_option("--log-level", flags.log_level, "trace|debug|info|warn|error")
      ->capture_default_str();
  app.set_version_flag("--version", gpushare::version_string());
  CLI11_PARSE(app, argc, argv);
  spdlog::set_level(spdlog::level::from_str(flags.log_level));
  try {
    return run(flags);
  } catch (const dp::ConfigError& e) {
    std::cerr << "gpushare-device-plugin: " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "gpushare-device-plugin: " << e.what() << "\n";
    return 1;
  }
}
