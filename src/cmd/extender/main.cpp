// gpushare-extender: the kube-scheduler extender service.

#include <csignal>
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
      spdlog::info("received signal {}, shutting down", signal);
      fn();
    });
  }

 private:
  sigset_t set_{};
};

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
  ext::HttpServerOptions http;
  http.max_request_bytes = options.max_request_bytes;
  http.threads = options.http_threads;
  http.tls_cert_file = options.tls_cert_file;
  http.tls_private_key_file = options.tls_private_key_file;
  http.policy_name = options.policy;
  ext::HttpServer server(service, store, metrics, rejections, http);
  const int port = server.bind(options.listen_host(), options.listen_port());
  if (port < 0) return 1;
  spdlog::info("{} serving {} on {}:{} with policy {}", ext::version_string(),
               options.tls_cert_file.empty() ? "HTTP" : "HTTPS", options.listen_host(), port,
               options.policy);
  auto waiter = signals.on_signal([&server] { server.stop(); });
  server.serve();
  spdlog::info("stopped");
  std::_Exit(0);  // the signal waiter may still be blocked in sigwait
}

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
      std::cerr << "gpushare-extender: API-server mode (--kubeconfig / in-cluster) is not built yet; "
                   "use --cluster-file\n";
      return 2;
  }
  return 2;
}
