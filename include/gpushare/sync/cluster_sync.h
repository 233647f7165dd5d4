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

#include "gpushare/apiclient/api_client.h"
#include "gpushare/apiclient/reflector.h"
#include "gpushare/extender/config_warnings.h"
#include "gpushare/extender/http_server.h"
#include "gpushare/extender/metrics.h"
#include "gpushare/extender/model_store.h"
#include "gpushare/kube/pod_info.h"
#include "gpushare/kube/resource_names.h"

namespace gpushare::sync {

struct SyncOptions {
  kube::ResourceNames names;
  // A bind's reservation that the watch never confirms is dropped after this long.
  std::chrono::seconds assume_ttl{300};
  std::chrono::milliseconds expiry_interval{10000};
  // The longest a bind's API calls can take (the binder's time-out, with room). A reservation
  // older than this whose pod the watch does not know (deleted, and the deletion missed
  // between a dropped watch and a relist) is dropped rather than held for the assume TTL.
  std::chrono::milliseconds max_bind_duration{30000};
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
  ClusterSync(apiclient::ApiClient& client, extender::ModelStore& store, extender::Metrics& metrics,
              SyncOptions options);
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
  const extender::ConfigWarnings& config_warnings() const { return config_warnings_; }

  // The pod as last seen by the watch (by namespace/name), or nullopt.
  std::optional<kube::PodInfo> cached_pod(std::string_view namespace_name, std::string_view name) const;
  std::size_t cached_pod_count() const;
  // The resourceVersion the pod reflector has delivered up to ("" before the first list).
  std::string pods_resource_version() const;

  // Drops assumed pods older than the TTL, and reservations of pods the API server has deleted,
  // now (also done periodically); returns how many.
  std::size_t expire_assumed();

  struct Counters {
    apiclient::ReflectorCounters nodes, pods, configmaps;
    std::uint64_t parse_errors = 0;
    std::uint64_t expired_assumptions = 0;
  };
  Counters counters() const;

 private:
  class NodeHandler;
  class PodHandler;
  class ConfigMapHandler;

  void publish_sync_metrics();

  apiclient::ApiClient& client_;
  extender::ModelStore& store_;
  extender::Metrics& metrics_;
  SyncOptions options_;

  mutable std::mutex pods_mutex_;  // guards pods_ (the directory bind reads) and deleted_uids_
  std::map<std::string, kube::PodInfo, std::less<>> pods_;  // by namespace/name
  // Pods the API server deleted (by UID, with when we learnt it), kept for the assume TTL. A
  // reservation for one of them can only come from a bind that raced the deletion (the delete
  // event came before the reservation, or was seen only as absence from a relist), and no event
  // will ever confirm or remove it: expire_assumed() drops it instead of waiting for the TTL.
  std::map<std::string, std::int64_t, std::less<>> deleted_uids_;
  extender::ConfigWarnings config_warnings_;
  std::atomic<std::uint64_t> parse_errors_{0};
  std::atomic<std::uint64_t> expired_assumptions_{0};
  Counters published_;  // what publish_sync_metrics() already reported; housekeeping thread only

  std::unique_ptr<NodeHandler> node_handler_;
  std::unique_ptr<PodHandler> pod_handler_;
  std::unique_ptr<ConfigMapHandler> configmap_handler_;
  std::unique_ptr<apiclient::Reflector> nodes_;
  std::unique_ptr<apiclient::Reflector> pods_reflector_;
  std::unique_ptr<apiclient::Reflector> configmaps_;
  std::jthread housekeeping_;  // assumed-pod expiry and metrics; last, stopped first
};

// Hands /inspect what the sync knows beyond the model: each pod's phase and the configuration
// warnings. `sync` must outlive the server.
void attach_inspect_sources(const ClusterSync& sync, extender::HttpServerOptions& http);

}  // namespace gpushare::sync
