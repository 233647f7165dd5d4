// gpushare-extender: the kube-scheduler extender service.

#include <pthread.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <functional>
#include <iostream>
#include <ranges>
#include <string_view>
#include <thread>

#include "cmd/extender/inspect_sources.h"
#include "cmd/extender/options.h"
#include "gpushare/apiclient/config_resolution.h"
#include "gpushare/consolidation/consolidator.h"
#include "gpushare/core/placement_policy.h"
#include "gpushare/core/policy_registry.h"
#include "gpushare/core/score_mapping.h"
#include "gpushare/http/http_server.h"
#include "gpushare/http/process_resources.h"
#include "gpushare/logging/logging.h"
#include "gpushare/service/scheduling_service.h"
#include "gpushare/standalone/standalone_cluster.h"
#include "gpushare/sync/api_pod_binder.h"
#include "gpushare/sync/cluster_sync.h"
#include "gpushare/sync/dra_sync.h"
#include "gpushare/sync/leader_binder.h"
#include "gpushare/sync/leader_gate.h"
#include "gpushare/sync/leader_metrics.h"
#include "gpushare/sync/sync_metrics.h"

namespace ext = gpushare::cmd::extender;

namespace {

// Blocks SIGINT/SIGTERM in every thread and waits for them on a dedicated one, so shutdown
// runs as ordinary code rather than inside a signal handler.
class ShutdownSignals {
 public:
  ShutdownSignals() {
    sigemptyset(&set_);
    sigaddset(&set_, SIGINT);
    sigaddset(&set_, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &set_, nullptr);
  }
  template <typename Fn>
  std::jthread on_signal(Fn fn) {
    return std::jthread([this, fn] {
      int signal = 0;
      sigwait(&set_, &signal);
      spdlog::info("signal {}: shutting down", signal);
      fn();
    });
  }

 private:
  sigset_t set_{};
};

// `on_drained` runs on a signal after the server stopped accepting and the binds in flight
// finished (argument true) or the grace period ran out (false): e.g. to give up the lease.
int serve(
    const ext::Options& options, gpushare::service::SchedulingService& service,
    gpushare::service::ModelStore& store, gpushare::metrics::MetricRegistry& metrics,
    gpushare::service::RejectionLog& rejections, std::function<std::string()> not_ready_reason,
    ShutdownSignals& signals, std::function<void(bool drained)> on_drained = nullptr,
    const std::function<void(gpushare::http::HttpServerOptions&)>& add_inspect_sources = nullptr) {
  gpushare::http::HttpServerOptions http;
  if (add_inspect_sources) add_inspect_sources(http);
  http.shutdown_grace = options.shutdown_grace_period;
  http.connections = options.connections;
  http.threads = options.http_threads;
  // Each connection is a file descriptor; keep room for the API-server connections, logs and
  // the listening socket.
  const std::size_t open_files = gpushare::http::raise_open_file_limit();
  constexpr std::size_t kReservedFiles = 128;
  const std::size_t most =
      open_files > 2 * kReservedFiles ? open_files - kReservedFiles : open_files / 2;
  http.connections.max_connections = std::min(options.connections.max_connections, most);
  if (http.connections.max_connections < options.connections.max_connections) {
    spdlog::warn("--max-connections {} lowered to {}: the open-file limit is {}",
                 options.connections.max_connections, http.connections.max_connections, open_files);
  }
  http.tls_cert_file = options.tls_cert_file;
  http.tls_private_key_file = options.tls_private_key_file;
  http.access = {options.allowed_clients, options.tls_client_ca_file};
  http.not_ready_reason = std::move(not_ready_reason);
  gpushare::http::HttpServer server(service, store, metrics, rejections, http);
  const int port = server.bind(options.listen_host(), options.listen_port());
  if (port < 0) return 1;
  spdlog::info("{} serving {} on {}:{} with policy {}, bind mode {}", ext::version_string(),
               options.tls_cert_file.empty() ? "HTTP" : "HTTPS", options.listen_host(), port,
               options.policy, options.bind_mode);
  spdlog::info("scheduling verbs accepted from {}",
               gpushare::http::ClientAccess(http.access).describe());
  // Loading the cluster (a sync, or a cluster file) leaves freed memory in the heap.
  gpushare::http::release_free_memory();
  std::atomic<bool> served{false};
  auto waiter = signals.on_signal([&] {
    const bool drained = server.stop();  // stop accepting; wait for binds in flight
    if (on_drained) on_drained(drained);
    // httplib notices the stop on an idle keep-alive connection (kube-scheduler keeps them)
    // only when that connection's keep-alive time-out (90 s) runs out, long after the kubelet's
    // SIGKILL. Binds are answered and the lease is given up by now: do not wait for them.
    for (int i = 0; i < 300 && !served; ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    if (!served) {
      spdlog::info("exiting; idle keep-alive connections are closed with the process");
      spdlog::shutdown();
      std::_Exit(0);
    }
  });
  server.serve();
  served = true;
  spdlog::info("stopped serving");
  // The signal waiter may still be blocked in sigwait (we stopped for another reason): wake it
  // so it can be joined. A waiter that already returned ignores this.
  pthread_kill(waiter.native_handle(), SIGTERM);
  return 0;
}

int run_standalone(const ext::Options& options, ShutdownSignals& signals) {
  std::unique_ptr<gpushare::standalone::StandaloneCluster> cluster;
  try {
    std::optional<gpushare::core::DraConfig> dra;
    if (options.dra)
      dra = gpushare::core::DraConfig{options.dra_driver, options.dra_bytes_per_unit};
    cluster = std::make_unique<gpushare::standalone::StandaloneCluster>(
        gpushare::standalone::load_cluster_file(options.cluster_file, options.names), options.names,
        dra);
  } catch (const std::exception& e) {
    // A line per mistake: the logger would escape the newlines of one message.
    for (const auto line : std::views::split(std::string_view(e.what()), '\n')) {
      spdlog::critical("{}", std::string_view(line.begin(), line.end()));
    }
    return 1;
  }
  gpushare::service::ModelStore store(gpushare::core::make_policy(options.policy));
  store.write([&](gpushare::core::ClusterModel& model, gpushare::core::PlacementPolicy&) {
    cluster->populate(model);
  });
  const auto [nodes, pods] = store.read([](const gpushare::core::ClusterModel& model, const auto&) {
    return std::pair{model.node_count(), model.gpu_pod_count()};
  });
  spdlog::info("standalone mode: {} nodes, {} pods holding GPU memory, from {}", nodes, pods,
               options.cluster_file);

  gpushare::metrics::MetricRegistry metrics;
  // Live mode's families, at 0: dashboards and alerts find every name in both modes.
  const gpushare::sync::SyncMetrics sync_metrics(metrics);
  gpushare::service::RejectionLog rejections;
  gpushare::service::ServiceConfig config;
  config.names = options.names;
  config.score_mapping =
      *gpushare::core::score_mapping_named(options.score_mapping);  // validated by the flag
  gpushare::service::SchedulingService service(store, *cluster, metrics, rejections, config);
  auto phases = [&cluster](gpushare::http::HttpServerOptions& http) {
    http.pod_phase = cluster->pod_phases();
  };
  return serve(
      options, service, store, metrics, rejections, [] { return std::string(); }, signals, nullptr,
      phases);
}

int run_live(const ext::Options& options, ShutdownSignals& signals) {
  namespace api = gpushare::apiclient;
  api::ClusterConfig cluster;
  try {
    api::ConfigSources sources;
    if (options.source == ext::ClusterSource::kKubeconfig)
      sources.explicit_kubeconfig = options.kubeconfig;
    cluster = api::resolve_cluster_config(sources);
  } catch (const std::exception& e) {
    spdlog::critical("cluster configuration: {}", e.what());
    return 1;
  }
  spdlog::info("API server {} ({})", cluster.server, cluster.source);
  api::ClientOptions client_options;
  client_options.stall_warning = options.api_stall_warning;
  api::ApiClient client(cluster, client_options);
  gpushare::service::ModelStore store(gpushare::core::make_policy(options.policy));
  gpushare::metrics::MetricRegistry metrics;
  gpushare::service::RejectionLog rejections;
  gpushare::sync::SyncOptions sync_options;
  sync_options.names = options.names;
  sync_options.stale_after = std::chrono::seconds(options.sync_stale_seconds);
  if (options.assume_ttl_seconds != 0) {
    spdlog::warn(
        "--assume-ttl-seconds is deprecated and ignored: a bind's reservation now ends only on "
        "what the API server shows (see --reservation-check-seconds)");
  }
  gpushare::core::LedgerTiming ledger_timing;
  ledger_timing.check_after_ns = std::int64_t{options.reservation_check_seconds} * 1'000'000'000;
  ledger_timing.landing_window_ns = std::int64_t{options.bind_landing_seconds} * 1'000'000'000;
  store.set_ledger_timing(ledger_timing);
  gpushare::sync::ClusterSync sync(client, store, metrics, sync_options);
  constexpr std::chrono::seconds kBindTimeout{10};
  gpushare::sync::ApiPodBinder binder(client, sync,
                                      options.bind_mode == "patch-bind"
                                          ? gpushare::sync::BindMode::kPatchBind
                                          : gpushare::sync::BindMode::kBinding,
                                      kBindTimeout);
  // --leader-elect: only the caught-up holder of the Lease binds and reports ready.
  std::unique_ptr<gpushare::sync::LeaderGate> gate;
  std::unique_ptr<gpushare::sync::LeaderBinder> leader_binder;
  if (options.leader_elect) {
    gpushare::apiclient::LeaderElectionConfig election;
    election.lease_namespace = options.leader_elect_resource_namespace;
    election.lease_name = options.leader_elect_resource_name;
    election.lease_duration = options.leader_elect_lease_duration;
    election.renew_deadline = options.leader_elect_renew_deadline;
    election.retry_period = options.leader_elect_retry_period;
    try {
      gate = std::make_unique<gpushare::sync::LeaderGate>(client, sync, store, election);
    } catch (const std::exception& e) {
      spdlog::critical("{}", e.what());
      return 2;
    }
    leader_binder = std::make_unique<gpushare::sync::LeaderBinder>(binder, *gate, kBindTimeout);
  }
  gpushare::service::ServiceConfig config;
  config.names = options.names;
  config.score_mapping =
      *gpushare::core::score_mapping_named(options.score_mapping);  // validated by the flag
  gpushare::service::SchedulingService service(
      store, leader_binder ? static_cast<gpushare::service::PodBinder&>(*leader_binder) : binder,
      metrics, rejections, config);
  sync.start();
  gpushare::sync::DraSyncOptions dra_options;
  dra_options.config.driver = options.dra_driver;
  dra_options.config.bytes_per_unit = options.dra_bytes_per_unit;
  dra_options.nodes_listed = [&sync] { return sync.synced(); };
  gpushare::sync::DraSync dra(client, store, dra_options);
  if (options.dra) {
    dra.start();
  } else {
    spdlog::info("DRA off (--dra off)");
  }
  if (gate) gate->start();
  auto not_ready = [&sync, &gate] {
    std::string reason = sync.not_ready_reason();
    if (reason.empty() && gate) reason = gate->not_ready_reason();
    return reason;
  };
  // Give the lease up only when no bind of ours can still land; else let it expire.
  auto on_drained = [&gate](bool drained) {
    if (gate) gate->stop(drained);
  };
  if (gate) {
    metrics.add_collector(gpushare::sync::leader_election_collector(
        [&gate] { return gpushare::sync::leader_election_state(gate->elector()); }));
  }
  // --consolidate plan|evict: plans on the model; in evict mode only the caught-up leader acts.
  std::unique_ptr<gpushare::consolidation::Consolidator> consolidator;
  if (options.consolidate != "off") {
    gpushare::consolidation::ConsolidatorOptions consolidation;
    consolidation.mode = *gpushare::consolidation::mode_named(options.consolidate);
    consolidation.opt_in.namespaces = {options.consolidate_namespaces.begin(),
                                       options.consolidate_namespaces.end()};
    consolidation.max_moves_per_hour = options.consolidate_max_moves_per_hour;
    consolidation.interval = options.consolidate_interval;
    consolidation.replacement_timeout = options.consolidate_replacement_timeout;
    consolidation.not_ready = [&sync] { return sync.not_ready_reason(); };
    consolidation.act_budget = [&gate]() -> std::optional<std::chrono::milliseconds> {
      if (!gate) return kBindTimeout;
      return gate->bind_budget();
    };
    consolidator = std::make_unique<gpushare::consolidation::Consolidator>(client, store, metrics,
                                                                           consolidation);
    consolidator->start();
    spdlog::info("consolidation: {} mode, every {} s, at most {} moves per hour",
                 options.consolidate, options.consolidate_interval.count() / 1000,
                 options.consolidate_max_moves_per_hour);
  }
  auto inspect_sources = [&sync, &dra, &consolidator](gpushare::http::HttpServerOptions& http) {
    gpushare::cmd::extender::attach_inspect_sources(sync, &dra, http);
    if (consolidator) http.consolidation = [&consolidator] { return consolidator->report(); };
  };
  const int code = serve(options, service, store, metrics, rejections, not_ready, signals,
                         on_drained, inspect_sources);
  if (consolidator) consolidator->stop();
  if (gate) gate->stop(true);  // every request has been answered by now
  dra.stop();
  sync.stop();
  return code;
}

}  // namespace

int main(int argc, char** argv) {
  ShutdownSignals signals;
  const std::vector<std::string> args(argv + 1, argv + argc);
  const ext::ParsedOptions parsed =
      ext::parse_options(args, [](const char* name) -> std::optional<std::string> {
        const char* value = std::getenv(name);
        return value ? std::optional<std::string>(value) : std::nullopt;
      });
  switch (parsed.action) {
    case ext::ParsedOptions::Action::kExitSuccess:
      std::cout << parsed.message;
      return 0;
    case ext::ParsedOptions::Action::kExitUsage:
      std::cerr << "gpushare-extender: " << parsed.message << " (see --help)\n";
      return 2;
    case ext::ParsedOptions::Action::kRun:
      break;
  }
  const ext::Options& options = parsed.options;
  gpushare::logging::configure_logging(options.log_level, options.log_format);
  gpushare::http::tune_allocator();
  gpushare::http::install_allocation_reserve();
  switch (options.source) {
    case ext::ClusterSource::kClusterFile:
      return run_standalone(options, signals);
    case ext::ClusterSource::kKubeconfig:
    case ext::ClusterSource::kInCluster:
      return run_live(options, signals);
  }
  return 2;
}
