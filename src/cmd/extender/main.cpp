// gpushare-extender: the kube-scheduler extender service.

#include <pthread.h>

#include <csignal>
#include <functional>
#include <cstdlib>
#include <iostream>
#include <thread>

#include <spdlog/spdlog.h>

#include "gpushare/core/placement_policy.h"
#include "gpushare/extender/http_server.h"
#include "gpushare/extender/logging.h"
#include "gpushare/extender/options.h"
#include "gpushare/extender/scheduling_service.h"
#include "gpushare/extender/standalone_cluster.h"
#ifdef GPUSHARE_HAVE_SYNC
#include "gpushare/apiclient/config_resolution.h"
#include "gpushare/sync/api_pod_binder.h"
#include "gpushare/sync/cluster_sync.h"
#endif

namespace ext = gpushare::extender;

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

int serve(const ext::Options& options, ext::SchedulingService& service, ext::ModelStore& store,
          ext::Metrics& metrics, ext::RejectionLog& rejections,
          std::function<std::string()> not_ready_reason, ShutdownSignals& signals) {
  ext::HttpServerOptions http;
  http.max_request_bytes = options.max_request_bytes;
  http.threads = options.http_threads;
  http.tls_cert_file = options.tls_cert_file;
  http.tls_private_key_file = options.tls_private_key_file;
  http.policy_name = options.policy;
  http.not_ready_reason = std::move(not_ready_reason);
  ext::HttpServer server(service, store, metrics, rejections, http);
  const int port = server.bind(options.listen_host(), options.listen_port());
  if (port < 0) return 1;
  spdlog::info("{} serving {} on {}:{} with policy {}, bind mode {}", ext::version_string(),
               options.tls_cert_file.empty() ? "HTTP" : "HTTPS", options.listen_host(), port,
               options.policy, options.bind_mode);
  auto waiter = signals.on_signal([&server] { server.stop(); });
  server.serve();
  spdlog::info("stopped serving");
  // The signal waiter may still be blocked in sigwait (we stopped for another reason): wake it
  // so it can be joined. A waiter that already returned ignores this.
  pthread_kill(waiter.native_handle(), SIGTERM);
  return 0;
}

int run_standalone(const ext::Options& options, ShutdownSignals& signals) {
  std::unique_ptr<ext::StandaloneCluster> cluster;
  try {
    cluster = std::make_unique<ext::StandaloneCluster>(ext::read_cluster_file(options.cluster_file),
                                                       options.names);
  } catch (const std::exception& e) {
    spdlog::critical("{}", e.what());
    return 1;
  }
  ext::ModelStore store(gpushare::core::make_policy(options.policy));
  store.write([&](gpushare::core::ClusterModel& model, gpushare::core::PlacementPolicy&) {
    cluster->populate(model);
  });
  const auto [nodes, pods] = store.read([](const gpushare::core::ClusterModel& model, const auto&) {
    return std::pair{model.node_count(), model.pod_count()};
  });
  spdlog::info("standalone mode: {} nodes, {} pods holding GPU memory, from {}", nodes, pods,
               options.cluster_file);

  ext::Metrics metrics;
  ext::RejectionLog rejections;
  ext::ServiceConfig config;
  config.names = options.names;
  ext::SchedulingService service(store, *cluster, metrics, rejections, config);
  return serve(options, service, store, metrics, rejections, [] { return std::string(); }, signals);
}

#ifdef GPUSHARE_HAVE_SYNC
int run_live(const ext::Options& options, ShutdownSignals& signals) {
  namespace api = gpushare::apiclient;
  api::ClusterConfig cluster;
  try {
    api::ConfigSources sources;
    if (options.source == ext::ClusterSource::kKubeconfig) sources.explicit_kubeconfig = options.kubeconfig;
    cluster = api::resolve_cluster_config(sources);
  } catch (const std::exception& e) {
    spdlog::critical("cluster configuration: {}", e.what());
    return 1;
  }
  spdlog::info("API server {} ({})", cluster.server, cluster.source);
  api::ApiClient client(cluster);
  ext::ModelStore store(gpushare::core::make_policy(options.policy));
  ext::Metrics metrics;
  ext::RejectionLog rejections;
  gpushare::sync::SyncOptions sync_options;
  sync_options.names = options.names;
  sync_options.assume_ttl = std::chrono::seconds(options.assume_ttl_seconds);
  gpushare::sync::ClusterSync sync(client, store, metrics, sync_options);
  gpushare::sync::ApiPodBinder binder(
      client, sync,
      options.bind_mode == "patch-bind" ? gpushare::sync::BindMode::kPatchBind : gpushare::sync::BindMode::kBinding);
  ext::ServiceConfig config;
  config.names = options.names;
  ext::SchedulingService service(store, binder, metrics, rejections, config);
  sync.start();
  const int code = serve(options, service, store, metrics, rejections,
                         [&sync] { return sync.not_ready_reason(); }, signals);
  sync.stop();
  return code;
}
#endif

}  // namespace

int main(int argc, char** argv) {
  ShutdownSignals signals;
  const std::vector<std::string> args(argv + 1, argv + argc);
  const ext::ParsedOptions parsed = ext::parse_options(args, [](const char* name) -> std::optional<std::string> {
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
  ext::configure_logging(options.log_level, options.log_format);
  switch (options.source) {
    case ext::ClusterSource::kClusterFile:
      return run_standalone(options, signals);
    case ext::ClusterSource::kKubeconfig:
    case ext::ClusterSource::kInCluster:
#ifdef GPUSHARE_HAVE_SYNC
      return run_live(options, signals);
#else
      std::cerr << "gpushare-extender: built without the API-server client; use --cluster-file\n";
      return 2;
#endif
  }
  return 2;
}
