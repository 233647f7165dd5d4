#include "gpushare/deviceplugin/health.h"

#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include <thread>

namespace gpushare::deviceplugin {

std::set<std::string> unhealthy_from_xids(const Advertisement& ad,
                                          std::span<const nvml::XidEvent> events,
                                          const std::set<std::uint64_t>& ignored) {
  std::set<std::string> out;
  for (const auto& event : events) {
    if (ignored.contains(event.xid)) continue;
    if (event.uuid.empty()) {
      for (const auto& gpu : ad.gpus) out.insert(gpu.uuid);
    } else if (ad.by_uuid(event.uuid)) {
      out.insert(event.uuid);
    }
  }
  return out;
}

std::set<std::string> uuids_of_indices(const Advertisement& ad, const std::set<int>& indices) {
  std::set<std::string> out;
  for (const int index : indices) {
    if (const AdvertisedGpu* gpu = ad.by_index(index)) out.insert(gpu->uuid);
  }
  return out;
}

HealthMonitor::HealthMonitor(nvml::GpuInventory& inventory, DevicePluginService& service,
                             Cluster* cluster, std::string unhealthy_namespace)
    : inventory_(inventory),
      service_(service),
      cluster_(cluster),
      namespace_(std::move(unhealthy_namespace)) {}

void HealthMonitor::publish(const std::set<std::string>& uuids) {
  const Advertisement& ad = service_.advertisement();
  std::set<int> indices;
  for (const auto& uuid : uuids) {
    if (const AdvertisedGpu* gpu = ad.by_uuid(uuid)) indices.insert(gpu->index);
  }
  {
    std::lock_guard lock(pending_mutex_);
    pending_.insert(indices.begin(), indices.end());
  }
  sync_operator_list();
}

void HealthMonitor::sync_operator_list() {
  if (!cluster_) return;
  std::set<int> pending;
  {
    std::lock_guard lock(pending_mutex_);
    pending = pending_;
  }
  if (!pending.empty()) {
    auto written = cluster_->add_unhealthy_indices(namespace_, pending);
    if (!written.ok()) {
      spdlog::error("cannot write ConfigMap {}/unhealthy-gpu-{} (GPUs {}): {}; retrying later",
                    namespace_, cluster_->node_name(), fmt::join(pending, ","),
                    written.error().describe());
      return;
    }
    spdlog::warn("ConfigMap {}/unhealthy-gpu-{} lists GPUs {}", namespace_, cluster_->node_name(),
                 fmt::join(written.value(), ","));
    std::lock_guard lock(pending_mutex_);
    for (const int index : pending) pending_.erase(index);
  }
  auto listed = cluster_->unhealthy_indices(namespace_);
  if (!listed.ok()) {
    spdlog::warn("cannot read ConfigMap {}/unhealthy-gpu-{}: {}", namespace_, cluster_->node_name(),
                 listed.error().describe());
    return;
  }
  service_.mark_unhealthy(uuids_of_indices(service_.advertisement(), listed.value()));
}

void HealthMonitor::run(std::stop_token stop) {
  while (!stop.stop_requested()) {
    std::vector<nvml::XidEvent> events;
    try {
      events = inventory_.wait_for_xids(std::chrono::milliseconds(1000));
    } catch (const nvml::Error& e) {
      spdlog::error("waiting for XID events: {}; trying again in 5 s", e.what());
      for (int i = 0; i < 50 && !stop.stop_requested(); ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
      }
      continue;
    }
    for (const auto& event : events) {
      spdlog::warn("XID {} on GPU {}{}", event.xid, event.uuid.empty() ? "(all)" : event.uuid,
                   kIgnoredXids.contains(event.xid) ? " (an application error: ignored)" : "");
    }
    const auto uuids = unhealthy_from_xids(service_.advertisement(), events);
    if (uuids.empty()) continue;
    service_.mark_unhealthy(uuids);
    publish(uuids);
  }
}

}  // namespace gpushare::deviceplugin
