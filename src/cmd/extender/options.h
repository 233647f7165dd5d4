#pragma once
// Command-line flags of gpushare-extender (docs/operations.md, "Flags"), optionally from a YAML
// --config file whose keys are the flag names without dashes; flags given on the command line win.

#include <chrono>
#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gpushare/core/policy_registry.h"
#include "gpushare/http/client_access.h"
#include "gpushare/http/connection_limits.h"
#include "gpushare/kube/resource_names.h"

namespace gpushare::cmd::extender {

enum class ClusterSource { kClusterFile, kKubeconfig, kInCluster };

struct Options {
  std::string listen = "0.0.0.0:39999";
  std::string tls_cert_file;
  std::string tls_private_key_file;
  // Who may call the scheduling verbs (client_access.h, docs/hardening.md).
  std::string tls_client_ca_file;        // require a client certificate signed by these CAs
  http::ClientNetworks allowed_clients;  // --allowed-clients; empty: any address
  std::string policy;                    // defaults to core::kDefaultPolicy
  std::string bind_mode = "binding";
  std::string score_mapping = "rank";  // core::ScoreMapping: how prioritize maps onto 0..10
  kube::ResourceNames names;
  std::string log_level = "info";
  std::string log_format = "text";
  std::string kubeconfig;
  std::string cluster_file;
  std::string config_file;
  // --max-request-bytes, --max-connections(-per-client), --http-*-timeout,
  // --max-buffered-body-bytes.
  http::ConnectionLimits connections;
  int http_threads = 0;  // 0 = automatic
  // How long a bind may stay unconfirmed by the watch before its reservation is dropped.
  int assume_ttl_seconds = 0;  // deprecated and ignored (warned about when set)
  int reservation_check_seconds = 30;
  int bind_landing_seconds = 60;  // kube-apiserver's --request-timeout default
  int sync_stale_seconds = 30;
  // Dynamic Resource Allocation (live mode): on unless the API server lacks resource.k8s.io/v1.
  bool dra = true;
  std::string dra_driver = "gpu.nvidia.com";
  std::int64_t dra_bytes_per_unit = std::int64_t{1} << 30;  // --dra-memory-unit
  // High availability (live mode only), with kube-scheduler's flag names and defaults.
  bool leader_elect = false;
  std::chrono::milliseconds leader_elect_lease_duration{15000};
  std::chrono::milliseconds leader_elect_renew_deadline{10000};
  std::chrono::milliseconds leader_elect_retry_period{2000};
  std::string leader_elect_resource_namespace = "kube-system";
  std::string leader_elect_resource_name = "gpushare-extender";
  // On SIGTERM: how long to wait for binds in flight before giving up on them.
  std::chrono::milliseconds shutdown_grace_period{20000};
  // Live mode: warn when the API server has not answered a request (list, watch, bind, ...) for
  // this long, then with back-off; 0 = never.
  std::chrono::milliseconds api_stall_warning{30000};
  // Consolidation (live mode; docs/operations.md, "Consolidation"): off, plan (report only) or
  // evict (the leader carries the plan out through the Eviction API).
  std::string consolidate = "off";
  std::vector<std::string> consolidate_namespaces;  // every pod there opts in
  int consolidate_max_moves_per_hour = 6;
  std::chrono::milliseconds consolidate_interval{60000};
  std::chrono::milliseconds consolidate_replacement_timeout{300000};

  ClusterSource source = ClusterSource::kClusterFile;
  std::string listen_host() const;
  int listen_port() const;
};

struct ParsedOptions {
  enum class Action { kRun, kExitSuccess, kExitUsage } action = Action::kRun;
  std::string message;  // usage/version text (kExitSuccess) or a one-line error (kExitUsage)
  Options options;
};

// `args` excludes the program name. `getenv` is injectable for tests ($KUBECONFIG,
// KUBERNETES_SERVICE_HOST).
ParsedOptions parse_options(const std::vector<std::string>& args,
                            const std::function<std::optional<std::string>(const char*)>& getenv);

std::string version_string();

// A Go duration ("15s", "1m30s", "500ms", "1.5h"), as kube-scheduler's flags take them;
// nullopt if malformed or negative.
std::optional<std::chrono::milliseconds> parse_go_duration(std::string_view text);

}  // namespace gpushare::cmd::extender
