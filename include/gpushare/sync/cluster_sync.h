#pragma once
// Live mode: keeps the extender's model in step with the API server through three reflectors
// (nodes, pods, unhealthy-gpu ConfigMaps), and keeps the pod directory bind looks pods up in.

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "gpushare/apiclient/api_client.h"
#include "gpushare/apiclient/reflector.h"
#include "gpushare/kube/pod_info.h"
#include "gpushare/kube/resource_names.h"
#include "gpushare/metrics/metric_registry.h"
#include "gpushare/metrics/scheduling_metrics.h"
#include "gpushare/service/config_warnings.h"
#include "gpushare/service/model_store.h"
#include "gpushare/service/pin_warnings.h"
#include "gpushare/service/pod_binder.h"
#include "gpushare/sync/sync_metrics.h"

namespace gpushare::sync {

struct SyncOptions {
  kube::ResourceNames names;
  // How often housekeeping runs: reservations due for a read-back, sync metrics.
  std::chrono::milliseconds expiry_interval{10000};
  // A read-back of a reserved pod (GET) gives up after this long, and is tried again later.
  std::chrono::milliseconds read_back_timeout{5000};
  // A list/watch failing without a success for this long makes /readyz not ready
  // (--sync-stale-seconds).
  std::chrono::seconds stale_after{30};
  // Applied to all three reflectors (tests shorten backoffs and watch time-outs).
  std::function<void(apiclient::ReflectorOptions&)> tune_reflector;
  std::function<std::int64_t()> now_ns = [] {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
  };
};

class ClusterSync {
 public:
  ClusterSync(apiclient::ApiClient& client, service::ModelStore& store,
              metrics::MetricRegistry& metrics, SyncOptions options);
  ~ClusterSync();
  ClusterSync(const ClusterSync&) = delete;
  ClusterSync& operator=(const ClusterSync&) = delete;

  void start();
  void stop();

  // Ready once nodes, pods and ConfigMaps have each been listed in full.
  bool synced() const;
  bool wait_for_sync(std::chrono::milliseconds timeout) const;
  std::string not_ready_reason() const;

  // The resource names this deployment uses (--resource-name, ...): the one source every live
  // component that parses pods (the binder's GET fallback, the leader's catch-up) reads.
  const kube::ResourceNames& names() const { return options_.names; }

  // Mistakes in the unhealthy-gpu ConfigMaps as they stand (logged once, when found).
  const service::ConfigWarnings& config_warnings() const { return config_warnings_; }

  // The pod as last seen by the watch (by namespace/name), or nullopt.
  std::optional<kube::PodInfo> cached_pod(std::string_view namespace_name,
                                          std::string_view name) const;
  std::size_t cached_pod_count() const;
  // The resourceVersion the pod reflector has delivered up to ("" before the first list).
  std::string pods_resource_version() const;

  // Reads back the pods of reservations that are due (accepted binds the watch has not confirmed
  // within the ledger's check time, binds without an answer, pods a relist lacked) and settles
  // them on what the API server says; also done periodically. Returns how many it settled.
  std::size_t resolve_reservations();
  // The pod as the API server has it now (a GET, not the watch's copy).
  service::PodBinder::ReadBack read_back(std::string_view namespace_name,
                                         std::string_view name) const;

  struct FailingResource {
    std::string name;
    std::chrono::seconds for_seconds;
  };
  // Reflectors whose list/watch is failing now, and for how long.
  std::vector<FailingResource> failing_resources() const;

  struct Counters {
    apiclient::ReflectorCounters nodes, pods, configmaps;
    std::uint64_t parse_errors = 0;
    std::uint64_t read_back_settlements = 0;  // reservations confirmed or released by a read-back
  };
  Counters counters() const;

 private:
  // The handlers of the three reflectors, each a WatchHandler (src/sync/watch_handler.h) of its
  // kind: node_handler.cpp, pod_handler.cpp, configmap_handler.cpp.
  std::unique_ptr<apiclient::ReflectorHandler> make_node_handler();
  std::unique_ptr<apiclient::ReflectorHandler> make_pod_handler();
  std::unique_ptr<apiclient::ReflectorHandler> make_configmap_handler();

  // Adds the warning for a pending pod pinned to GPU models no node carries, once per pod
  // (service/pin_warnings.h). Under the model's lock; the caller logs after releasing it.
  void check_pin(const kube::PodInfo& pod, const core::ClusterModel& model,
                 std::vector<std::string>& warnings);
  void publish_sync_metrics();
  void report_stale_sync();  // logs crossings of stale_after, exports failing seconds

  apiclient::ApiClient& client_;
  service::ModelStore& store_;
  SyncMetrics metrics_;
  metrics::SchedulingMetrics
      reservation_metrics_;  // reservations ended by what the API server shows
  SyncOptions options_;

  mutable std::mutex pods_mutex_;  // guards pods_ (the directory bind reads)
  std::map<std::string, kube::PodInfo, std::less<>> pods_;  // by namespace/name
  service::ConfigWarnings config_warnings_;
  service::UnmatchedPinWarnings pin_warnings_;  // pending pods pinned to models no node has
  std::atomic<std::uint64_t> parse_errors_{0};
  std::atomic<std::uint64_t> read_back_settlements_{0};
  std::set<std::string> stale_reported_;  // resources logged as stale; housekeeping thread only
  Counters published_;  // what publish_sync_metrics() already reported; housekeeping thread only

  std::unique_ptr<apiclient::ReflectorHandler> node_handler_;
  std::unique_ptr<apiclient::ReflectorHandler> pod_handler_;
  std::unique_ptr<apiclient::ReflectorHandler> configmap_handler_;
  std::unique_ptr<apiclient::Reflector> nodes_;
  std::unique_ptr<apiclient::Reflector> pods_reflector_;
  std::unique_ptr<apiclient::Reflector> configmaps_;
  std::jthread housekeeping_;  // assumed-pod expiry and metrics; last, stopped first
};

}  // namespace gpushare::sync
