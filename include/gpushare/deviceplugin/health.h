#pragma once
// GPU health: critical XIDs from NVML mark a GPU's devices Unhealthy (never healthy again) and
// add its index to ConfigMap <ns>/unhealthy-gpu-<node> (data "gpus", comma-separated indices),
// which the extender reads; GPUs an operator listed there are advertised Unhealthy too.

#include <chrono>
#include <cstdint>
#include <mutex>
#include <set>
#include <span>
#include <stop_token>
#include <string>

#include "gpushare/deviceplugin/cluster.h"
#include "gpushare/deviceplugin/devices.h"
#include "gpushare/deviceplugin/plugin.h"
#include "gpushare/nvml/gpu_inventory.h"

namespace gpushare::deviceplugin {

// XIDs caused by applications, not the GPU (NVIDIA's device plugin ignores the same ones).
inline const std::set<std::uint64_t> kIgnoredXids = {13, 31, 43, 45, 68, 109};

// The UUIDs of advertised GPUs that `events` make unhealthy: an event with an empty UUID names
// every GPU; ignored XIDs and unknown UUIDs name none.
std::set<std::string> unhealthy_from_xids(const Advertisement& ad,
                                          std::span<const nvml::XidEvent> events,
                                          const std::set<std::uint64_t>& ignored = kIgnoredXids);

// The UUIDs of the GPUs whose extender indices are listed.
std::set<std::string> uuids_of_indices(const Advertisement& ad, const std::set<int>& indices);

// Thread-safety: run() on one thread; sync_operator_list() from any thread.
class HealthMonitor {
 public:
  HealthMonitor(nvml::GpuInventory& inventory, DevicePluginService& service, Cluster* cluster,
                std::string unhealthy_namespace);

  // Waits for XIDs until `stop`; NVML errors are logged and retried after a pause.
  void run(std::stop_token stop);
  // Marks Unhealthy the GPUs listed in the node's unhealthy-gpu ConfigMap; writes out indices
  // whose ConfigMap update failed earlier.
  void sync_operator_list();

 private:
  void publish(const std::set<std::string>& uuids);

  nvml::GpuInventory& inventory_;
  DevicePluginService& service_;
  Cluster* cluster_;  // null: no API server (nothing written)
  std::string namespace_;
  std::mutex pending_mutex_;  // guards pending_
  std::set<int> pending_;     // indices not yet written to the ConfigMap
};

}  // namespace gpushare::deviceplugin
