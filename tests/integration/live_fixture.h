#pragma once
// The extender in live mode, in-process: API client -> ClusterSync -> ApiPodBinder ->
// SchedulingService -> HttpServer on an ephemeral port, against the fake API server.

#include <httplib.h>

#include <chrono>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <thread>

#include "cmd/extender/inspect_sources.h"
#include "fakeapi/fake_apiserver.h"
#include "gpushare/apiclient/api_client.h"
#include "gpushare/apiclient/kubeconfig.h"
#include "gpushare/consolidation/consolidator.h"
#include "gpushare/core/placement_policy.h"
#include "gpushare/core/policy_registry.h"
#include "gpushare/http/http_server.h"
#include "gpushare/kube/node_info.h"
#include "gpushare/kube/pod_info.h"
#include "gpushare/service/scheduling_service.h"
#include "gpushare/sync/api_pod_binder.h"
#include "gpushare/sync/cluster_sync.h"
#include "gpushare/sync/dra_sync.h"
#include "gpushare/sync/leader_binder.h"
#include "gpushare/sync/leader_gate.h"
#include "gpushare/sync/leader_metrics.h"
#include "support/eventually.h"

namespace gpushare::testing {

using Json = nlohmann::json;
using namespace std::chrono_literals;

inline Json gpu_node(const std::string& name, int gpus, long long memory_total) {
  Json node = make_node(name);
  Json capacity = {{"cpu", "32"}, {"memory", "128Gi"}};
  if (memory_total >= 0) capacity["aliyun.com/gpu-mem"] = std::to_string(memory_total);
  if (gpus >= 0) capacity["aliyun.com/gpu-count"] = std::to_string(gpus);
  node["status"]["capacity"] = capacity;
  node["status"]["allocatable"] = capacity;
  return node;
}

inline Json gpu_pod(const std::string& name, long long request, const std::string& node = "",
                    int gpu = -1, const std::string& ns = "default") {
  Json pod = make_pod(ns, name, node, node.empty() ? "Pending" : "Running");
  pod["spec"]["containers"][0]["resources"] = {
      {"limits", {{"aliyun.com/gpu-mem", std::to_string(request)}}}};
  if (gpu >= 0) {
    pod["metadata"]["annotations"] = {{"ALIYUN_COM_GPU_MEM_IDX", std::to_string(gpu)},
                                      {"ALIYUN_COM_GPU_MEM_POD", std::to_string(request)},
                                      {"ALIYUN_COM_GPU_MEM_DEV", "16"},
                                      {"ALIYUN_COM_GPU_MEM_ASSIGNED", "true"},
                                      {"ALIYUN_COM_GPU_MEM_ASSUME_TIME", "1"}};
  }
  return pod;
}

// A pod that asks for CPU and memory only (a DaemonSet's, say), bound to `node` when given.
inline Json cpu_pod(const std::string& name, const std::string& node, const std::string& cpu,
                    const std::string& memory, const std::string& ns = "default") {
  Json pod = make_pod(ns, name, node, node.empty() ? "Pending" : "Running");
  pod["spec"]["containers"][0]["resources"] = {{"requests", {{"cpu", cpu}, {"memory", memory}}}};
  return pod;
}

// The API server's truth as a model: what a freshly started extender would build.
inline core::ClusterModel truth_model(FakeApiServer& fake) {
  core::ClusterModel model;
  const kube::ResourceNames names;
  for (const Json& node : fake.list(Resource::Nodes))
    model.upsert_node(kube::parse_node(node, names));
  for (const Json& object : fake.list(Resource::Pods)) {
    if (auto allocation = kube::allocation_of(kube::parse_pod(object, names)))
      model.add_pod(std::move(*allocation));
  }
  return model;
}

struct LiveOptions {
  sync::BindMode bind_mode = sync::BindMode::kBinding;
  std::string policy = "binpack";
  std::string token;
  std::chrono::milliseconds bind_timeout = 2s;
  // An accepted bind the watch has not confirmed is read back after this long
  // (--reservation-check-seconds).
  std::chrono::milliseconds reservation_check = 30s;
  // A bind call without an answer may land this long after it was sent (--bind-landing-seconds):
  // longer than any delay a test's fake injects.
  std::chrono::milliseconds bind_landing = 5s;
  std::chrono::seconds sync_stale{30};  // --sync-stale-seconds
  std::filesystem::path kubeconfig;     // use this file instead of the fake's own kubeconfig
  // Set: run as one replica of an HA pair (--leader-elect).
  std::optional<apiclient::LeaderElectionConfig> leader_election;
  std::chrono::milliseconds shutdown_grace = 10s;
  kube::ResourceNames names;  // --resource-name and friends, as main hands them on
  bool dra = false;           // also run the DRA sync (--dra auto)
  // Set: a Consolidator (--consolidate), not started: tests run its rounds with run_once().
  // Without act_budget, it acts while the leader gate (if any) says a bind may start.
  std::optional<consolidation::ConsolidatorOptions> consolidation;
};

// Lease timings for tests: kube-scheduler's proportions (15 s / 10 s / 2 s) scaled down, but with
// room for a loaded 2-core CI machine and sanitizer builds, where one lease write can take
// several hundred milliseconds.
inline constexpr std::chrono::milliseconds kTestLeaseDuration{3000};
inline constexpr std::chrono::milliseconds kTestRenewDeadline{2000};
inline constexpr std::chrono::milliseconds kTestRetryPeriod{250};

inline apiclient::LeaderElectionConfig test_election(const std::string& identity) {
  apiclient::LeaderElectionConfig config;
  config.identity = identity;
  config.lease_duration = kTestLeaseDuration;
  config.renew_deadline = kTestRenewDeadline;
  config.retry_period = kTestRetryPeriod;
  return config;
}

inline LiveOptions live_options(std::function<void(LiveOptions&)> edit) {
  LiveOptions options;
  edit(options);
  return options;
}

// The GPU index the bind wrote on pod default/`name` (the device plugin's annotation).
inline std::string gpu_index_of(FakeApiServer& fake, const std::string& name) {
  return fake.get(Resource::Pods, "default", name)
      ->at("metadata")
      .at("annotations")
      .at("ALIYUN_COM_GPU_MEM_IDX");
}

// A fault on the next binding call: answer `status` (0 = no error) after `delay`, optionally
// after performing the binding ("late success").
inline RequestFault binding_fault(int status, std::chrono::milliseconds delay = 0ms,
                                  bool apply_first = false) {
  RequestFault fault;
  fault.verb = Verb::Bind;
  fault.status = status;
  fault.delay = delay;
  fault.apply_first = apply_first;
  return fault;
}

class LiveExtender {
 public:
  LiveExtender(FakeApiServer& fake, LiveOptions options = {})
      : store_(core::make_policy(options.policy)) {
    if (options.kubeconfig.empty()) {
      kubeconfig_ =
          std::filesystem::temp_directory_path() /
          ("gpushare-live-" + std::to_string(reinterpret_cast<std::uintptr_t>(this)) + ".yaml");
      fake.write_kubeconfig(kubeconfig_, options.token);
      owns_kubeconfig_ = true;
    } else {
      kubeconfig_ = options.kubeconfig;
    }
    apiclient::ClientOptions client_options;
    client_options.request_timeout = 5s;
    client_options.retry.base_delay = 10ms;
    client_options.retry.max_delay = 50ms;
    client_ = std::make_unique<apiclient::ApiClient>(apiclient::load_kubeconfig(kubeconfig_),
                                                     client_options);
    sync::SyncOptions sync_options;
    sync_options.names = options.names;
    sync_options.stale_after = options.sync_stale;
    core::LedgerTiming ledger_timing;
    ledger_timing.check_after_ns = std::chrono::nanoseconds(options.reservation_check).count();
    ledger_timing.landing_window_ns = std::chrono::nanoseconds(options.bind_landing).count();
    ledger_timing.retry_initial_ns = std::chrono::nanoseconds(100ms).count();
    ledger_timing.retry_max_ns = std::chrono::nanoseconds(500ms).count();
    store_.set_ledger_timing(ledger_timing);
    sync_options.expiry_interval = 100ms;
    sync_options.tune_reflector = [](apiclient::ReflectorOptions& reflector) {
      reflector.backoff.initial = 20ms;
      reflector.backoff.cap = 200ms;
      reflector.min_healthy_watch = 0ms;
    };
    sync_ = std::make_unique<sync::ClusterSync>(*client_, store_, metrics_, sync_options);
    binder_ = std::make_unique<sync::ApiPodBinder>(*client_, *sync_, options.bind_mode,
                                                   options.bind_timeout);
    service::PodBinder* binder = binder_.get();
    if (options.leader_election) {
      gate_ =
          std::make_unique<sync::LeaderGate>(*client_, *sync_, store_, *options.leader_election);
      leader_binder_ = std::make_unique<sync::LeaderBinder>(*binder_, *gate_, options.bind_timeout);
      binder = leader_binder_.get();
    }
    service::ServiceConfig service_config;
    service_config.names = options.names;
    service_ = std::make_unique<service::SchedulingService>(store_, *binder, metrics_, rejections_,
                                                            service_config);
    http::HttpServerOptions http;
    http.threads = 0;
    http.shutdown_grace = options.shutdown_grace;
    http.not_ready_reason = [this] {
      std::string reason = sync_->not_ready_reason();
      if (reason.empty() && gate_) reason = gate_->not_ready_reason();
      return reason;
    };
    if (gate_) {
      metrics_.add_collector(sync::leader_election_collector(
          [this] { return sync::leader_election_state(gate_->elector()); }));
    }
    if (options.dra) {
      sync::DraSyncOptions dra_options;
      dra_options.tune_reflector = sync_options.tune_reflector;
      dra_options.nodes_listed = [this] { return sync_->synced(); };
      dra_ = std::make_unique<sync::DraSync>(*client_, store_, dra_options);
    }
    cmd::extender::attach_inspect_sources(*sync_, dra_.get(), http);
    if (options.consolidation) {
      consolidation::ConsolidatorOptions consolidation = *options.consolidation;
      if (!consolidation.act_budget && gate_) {
        consolidation.act_budget = [this] { return gate_->bind_budget(); };
      }
      consolidator_ =
          std::make_unique<consolidation::Consolidator>(*client_, store_, metrics_, consolidation);
      http.consolidation = [this] { return consolidator_->report(); };
    }
    server_ = std::make_unique<http::HttpServer>(*service_, store_, metrics_, rejections_, http);
    port_ = server_->bind("127.0.0.1", 0);
    sync_->start();
    if (dra_) dra_->start();
    if (gate_) gate_->start();
    thread_ = std::jthread([this] { server_->serve(); });
    while (!server_->is_running()) std::this_thread::yield();
  }
  ~LiveExtender() {
    if (consolidator_) consolidator_->stop();
    server_->stop();
    if (thread_.joinable()) thread_.join();
    if (gate_) gate_->stop();
    if (dra_) dra_->stop();
    sync_->stop();
    if (owns_kubeconfig_) std::filesystem::remove(kubeconfig_);
  }

  // What main does on SIGTERM: stop accepting, wait for binds in flight, give the lease up
  // (only if they all finished), stop. Returns whether the binds finished in time.
  bool shutdown() {
    const bool drained = server_->stop();
    if (gate_) gate_->stop(drained);
    if (thread_.joinable()) thread_.join();
    sync_->stop();
    return drained;
  }
  // Like a killed process, as far as in-process allows: stops serving and renewing at once,
  // without giving the lease up (binds already in flight still finish).
  void crash() {
    if (gate_) gate_->abandon();
    server_->stop();
    if (thread_.joinable()) thread_.join();
    sync_->stop();
  }
  http::HttpServer& server() { return *server_; }
  sync::LeaderGate* gate() { return gate_.get(); }
  int port() const { return port_; }
  // GET /readyz: the status code, or -1 if nothing answered.
  int readyz() const {
    auto result = http().Get("/readyz");
    return result ? result->status : -1;
  }

  bool wait_for_sync() { return sync_->wait_for_sync(10s); }
  httplib::Client http() const {
    httplib::Client client("127.0.0.1", port_);
    client.set_read_timeout(30);
    return client;
  }
  std::pair<int, Json> post(const std::string& verb, const Json& body) const {
    auto result = http().Post("/gpushare-scheduler/" + verb, body.dump(), "application/json");
    if (!result) return {-1, nullptr};
    return {result->status, Json::parse(result->body, nullptr, false)};
  }
  int bind(const std::string& name, const std::string& uid, const std::string& node,
           const std::string& ns = "default") const {
    return post("bind",
                Json{{"PodName", name}, {"PodNamespace", ns}, {"PodUID", uid}, {"Node", node}})
        .first;
  }

  // Reads the model under its lock.
  template <typename Fn>
  auto read(Fn fn) const {
    return store_.read(
        [&](const core::ClusterModel& model, const core::PlacementPolicy&) { return fn(model); });
  }
  // What the policy has learned (PlacementPolicy::describe_state(), JSON).
  Json policy_state() const {
    return store_.read([](const core::ClusterModel&, const core::PlacementPolicy& policy) {
      return Json::parse(policy.describe_state(), nullptr, false);
    });
  }
  core::Units used_on(const std::string& node, int gpu) const {
    return read([&](const core::ClusterModel& model) -> core::Units {
      const core::NodeState* state = model.find_node(node);
      if (state == nullptr || gpu >= state->gpu_count()) return -1;
      return state->gpus()[static_cast<std::size_t>(gpu)].used;
    });
  }
  core::ClusterModel snapshot() const {
    return read([](const core::ClusterModel& model) { return model; });
  }

  sync::ClusterSync& sync() { return *sync_; }
  sync::DraSync* dra() { return dra_.get(); }  // null unless LiveOptions::dra
  metrics::MetricRegistry& metrics() { return metrics_; }
  consolidation::Consolidator* consolidator() { return consolidator_.get(); }

 private:
  std::filesystem::path kubeconfig_;
  bool owns_kubeconfig_ = false;
  service::ModelStore store_;
  metrics::MetricRegistry metrics_;
  service::RejectionLog rejections_;
  std::unique_ptr<apiclient::ApiClient> client_;
  std::unique_ptr<sync::ClusterSync> sync_;
  std::unique_ptr<sync::DraSync> dra_;  // with LiveOptions::dra
  std::unique_ptr<sync::ApiPodBinder> binder_;
  std::unique_ptr<sync::LeaderGate> gate_;
  std::unique_ptr<sync::LeaderBinder> leader_binder_;
  std::unique_ptr<service::SchedulingService> service_;
  std::unique_ptr<consolidation::Consolidator> consolidator_;  // with LiveOptions::consolidation
  std::unique_ptr<http::HttpServer> server_;
  int port_ = -1;
  std::jthread thread_;
};

}  // namespace gpushare::testing
