#pragma once
// Serving the DevicePlugin service on a unix socket in kubelet's device-plugin directory and
// registering it with kubelet: serve first, then Register (kubelet calls GetDevicePluginOptions
// back before Register returns). kubelet restarts (kubelet.sock created again) and the removal of
// the plugin's own socket are noticed with inotify: the socket is created again and the plugin
// registers again. Register failures are retried with exponential back-off.

#include <chrono>
#include <filesystem>
#include <functional>
#include <stop_token>
#include <string>

#include "gpushare/deviceplugin/plugin.h"

namespace gpushare::deviceplugin {

struct ServerOptions {
  std::filesystem::path kubelet_dir = "/var/lib/kubelet/device-plugins";
  std::string socket_name = "gpushare.sock";
  std::string resource_name = "aliyun.com/gpu-mem";
  std::chrono::milliseconds register_timeout{10000};
  std::chrono::milliseconds initial_backoff{1000};
  std::chrono::milliseconds max_backoff{30000};
  // Called after each successful registration (e.g. to re-assert the node's gpu-count).
  std::function<void()> on_registered;
};

// Thread-safety: run() on one thread; the stop_token given to it ends it.
class PluginServer {
 public:
  PluginServer(DevicePluginService& service, ServerOptions options, Metrics& metrics);

  // Serves and registers until `stop` is requested; then stops serving and removes the socket.
  // Throws std::runtime_error when the directory cannot be watched.
  void run(std::stop_token stop);

  std::filesystem::path socket_path() const { return options_.kubelet_dir / options_.socket_name; }

 private:
  DevicePluginService& service_;
  ServerOptions options_;
  Metrics& metrics_;
};

}  // namespace gpushare::deviceplugin
