#pragma once
// Live mode's Dynamic Resource Allocation objects: four reflectors (resource.k8s.io/v1
// ResourceSlices, ResourceClaims, ResourceClaimTemplates, DeviceClasses) feeding the model's
// DraState (core/dra.h). Started only when the API server serves resource.k8s.io/v1: a 404 on
// its discovery document turns DRA off with one log line. Not part of readiness: without DRA
// objects the extender still serves every device-plugin pod, and DRA pods are scored as pods
// without GPUs until the objects arrive (prioritize logs each such pod, throttled).

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "gpushare/apiclient/api_client.h"
#include "gpushare/apiclient/reflector.h"
#include "gpushare/core/dra.h"
#include "gpushare/service/config_warnings.h"
#include "gpushare/service/model_store.h"

namespace gpushare::sync {

struct DraSyncOptions {
  core::DraConfig config;
  std::function<void(apiclient::ReflectorOptions&)> tune_reflector;
  // Whether the cluster's nodes have been listed (ClusterSync::synced). Until then a claim's
  // node may merely not be listed yet, so problems are not logged. Unset: always listed.
  std::function<bool()> nodes_listed;
};

class DraSync {
 public:
  DraSync(apiclient::ApiClient& client, service::ModelStore& store, DraSyncOptions options);
  ~DraSync();
  DraSync(const DraSync&) = delete;
  DraSync& operator=(const DraSync&) = delete;

  // Asks discovery for resource.k8s.io/v1 and starts the reflectors if it is served. Returns
  // whether DRA is on. Any failure but a 404 keeps DRA on (the reflectors retry).
  bool start();
  void stop();
  bool enabled() const { return enabled_; }
  // Every DRA reflector has listed once (true when DRA is off).
  bool synced() const;
  // Problems in the DRA objects as they stand in the model now (each names its object); none
  // until every DRA kind has been listed once.
  std::vector<std::string> warnings() const;
  // The problems as they stand in the model now, for /inspect's configWarnings: at most
  // kMaxConfigWarnings, and then one more saying how many are left out. None until every DRA
  // kind has been listed once (a claim may name a slice not listed yet).
  static constexpr std::size_t kMaxConfigWarnings = 20;
  std::vector<service::ConfigWarning> config_warnings() const;

 private:
  // Logs the warnings that are new since the last check (the model's state after a change),
  // once every DRA kind and the nodes have been listed.
  void check_warnings();

  apiclient::ApiClient& client_;
  service::ModelStore& store_;
  DraSyncOptions options_;
  bool enabled_ = false;
  mutable std::mutex warnings_mutex_;         // guards logged_all_
  bool logged_all_ = false;                   // every standing problem logged once
  std::atomic<std::size_t> listed_kinds_{0};  // kinds listed at least once
  std::vector<std::unique_ptr<apiclient::ReflectorHandler>> handlers_;
  std::vector<std::unique_ptr<apiclient::Reflector>> reflectors_;  // after handlers_: stopped first
};

}  // namespace gpushare::sync
