#include "cmd/extender/options.h"

#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cctype>
#include <charconv>
#include <optional>
#include <tuple>

#include "cmd/resource_name_flags.h"
#include "gpushare/core/placement_policy.h"
#include "gpushare/core/policy_registry.h"
#include "gpushare/core/quantity.h"
#include "gpushare/files/text_file.h"
#include "gpushare/files/yaml_json.h"
#include "gpushare/version.h"

namespace gpushare::cmd::extender {
namespace {

// Turns the YAML config file into "--key=value" arguments placed before the real ones, so the
// command line (parsed later, last value wins) overrides the file.
std::vector<std::string> config_file_args(const std::string& path) {
  const std::string text = files::read_text_file(path, "--config file");
  nlohmann::json config;
  try {
    config = files::yaml_to_json(text);
  } catch (const std::exception& e) {
    throw std::runtime_error(fmt::format("--config {}: {}", path, e.what()));
  }
  if (config.is_null()) return {};
  if (!config.is_object())
    throw std::runtime_error(fmt::format("--config {}: must be a mapping", path));
  std::vector<std::string> args;
  for (auto it = config.begin(); it != config.end(); ++it) {
    if (it.key() == "config")
      throw std::runtime_error("--config: a config file cannot name another");
    const auto& value = it.value();
    std::string text_value;
    if (value.is_string()) {
      text_value = value.get<std::string>();
    } else if (value.is_number_integer() || value.is_boolean()) {
      text_value = value.dump();
    } else {
      throw std::runtime_error(fmt::format("--config {}: key {} must be a scalar", path, it.key()));
    }
    args.push_back(fmt::format("--{}={}", it.key(), text_value));
  }
  return args;
}

std::optional<std::string> find_config_flag(const std::vector<std::string>& args) {
  for (std::size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--config" && i + 1 < args.size()) return args[i + 1];
    if (args[i].starts_with("--config=")) return args[i].substr(9);
  }
  return std::nullopt;
}

// Flags read as text, converted and checked once every flag is parsed.
struct FlagText {
  std::string allowed_clients;
  std::string header_timeout = "10s", body_timeout = "60s";
  std::string dra = "auto", dra_memory_unit = "1Gi";
  std::string lease_duration = "15s", renew_deadline = "10s", retry_period = "2s",
              shutdown_grace = "20s", api_stall_warning = "30s";
  std::string consolidate_interval = "1m", consolidate_replacement_timeout = "5m";
  std::string consolidate_namespaces;
};

// The flags in the order --help lists them, by group.
void add_serving_flags(CLI::App& app, Options& o, FlagText& text) {
  app.add_option("--listen", o.listen, "address:port to serve on")->capture_default_str();
  app.add_option("--tls-cert-file", o.tls_cert_file, "serve HTTPS with this certificate (PEM)");
  app.add_option("--tls-private-key-file", o.tls_private_key_file,
                 "private key for --tls-cert-file");
  app.add_option("--tls-client-ca", o.tls_client_ca_file,
                 "with HTTPS: filter, prioritize, bind and preempt require a client certificate "
                 "signed by a CA in this PEM file (mutual TLS; probes, /metrics and /inspect stay "
                 "open)");
  app.add_option("--allowed-clients", text.allowed_clients,
                 "filter, prioritize, bind and preempt only from these networks, e.g. "
                 "10.0.0.0/8,127.0.0.1/32,fd00::/8 (others get 403; default: any)");
}

void add_scheduling_flags(CLI::App& app, Options& o) {
  const auto names = core::policy_names();
  app.add_option("--policy", o.policy, "placement policy")
      ->check(CLI::IsMember(names))
      ->capture_default_str();
  app.add_option(
         "--score-mapping", o.score_mapping,
         "how prioritize maps the policy's scores onto kube-scheduler's 0..10: rank (the ten "
         "best distinct scores get 10..1) or minmax (linear between worst and best)")
      ->check(CLI::IsMember({"rank", "minmax"}))
      ->capture_default_str();
  app.add_option(
         "--bind-mode", o.bind_mode,
         "binding: one pods/binding POST carrying the annotations; patch-bind: patch, then bind")
      ->check(CLI::IsMember({"binding", "patch-bind"}))
      ->capture_default_str();
  add_resource_name_flags(app, o.names);
}

void add_cluster_flags(CLI::App& app, Options& o) {
  app.add_option("--log-level", o.log_level, "debug, info, warn or error")
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error"}))
      ->capture_default_str();
  app.add_option("--log-format", o.log_format, "text or json")
      ->check(CLI::IsMember({"text", "json"}))
      ->capture_default_str();
  app.add_option("--kubeconfig", o.kubeconfig,
                 "kubeconfig of the cluster (else $KUBECONFIG, else in-cluster)");
  app.add_option("--cluster-file", o.cluster_file,
                 "standalone mode: a v1 List (YAML or JSON) of Nodes, Pods and ConfigMaps");
  app.add_option("--config", o.config_file, "YAML file with any of these flags as keys");
}

void add_connection_flags(CLI::App& app, Options& o, FlagText& text) {
  app.add_option("--max-request-bytes", o.connections.max_request_bytes,
                 "largest request body accepted")
      ->check(CLI::Range(std::size_t{1024}, std::size_t{1} << 32))
      ->capture_default_str();
  app.add_option("--http-threads", o.http_threads,
                 "Most HTTP requests answered at once (0 = 512); connections waiting for a request "
                 "hold no thread")
      ->check(CLI::Range(0, 4096));
  app.add_option("--max-connections", o.connections.max_connections,
                 "most open HTTP connections; beyond, new ones wait in the listen backlog (bounded "
                 "by the open-file limit)")
      ->check(CLI::Range(std::size_t{1}, std::size_t{1} << 20))
      ->capture_default_str();
  app.add_option("--max-connections-per-client", o.connections.max_connections_per_client,
                 "most open HTTP connections from one client IP; beyond, 503 and close")
      ->check(CLI::Range(std::size_t{1}, std::size_t{1} << 20))
      ->capture_default_str();
  app.add_option("--http-header-timeout", text.header_timeout,
                 "a request's line and headers must arrive within this of its first byte (or of "
                 "the connection); else 408 and close")
      ->capture_default_str();
  app.add_option("--http-body-timeout", text.body_timeout,
                 "a request's body must arrive within this of its headers; else 408 and close")
      ->capture_default_str();
  app.add_option("--max-buffered-body-bytes", o.connections.body_budget_bytes,
                 "request bodies buffered at once; a body beyond waits unread until others are "
                 "answered (one is always admitted)")
      ->check(CLI::Range(std::size_t{1024}, std::size_t{1} << 40))
      ->capture_default_str();
}

void add_live_flags(CLI::App& app, Options& o, FlagText& text) {
  app.add_option(
         "--reservation-check-seconds", o.reservation_check_seconds,
         "live mode: read a bound pod back if the watch has not shown it bound after this long "
         "(a reservation ends only when the API server shows the pod bound, pending or gone)")
      ->check(CLI::Range(1, 3600))
      ->capture_default_str();
  app.add_option(
         "--bind-landing-seconds", o.bind_landing_seconds,
         "live mode: how long the API server may still apply a bind call that got no answer "
         "(kube-apiserver's --request-timeout); until then a read-back showing the pod unbound "
         "does not release its GPU memory")
      ->check(CLI::Range(1, 3600))
      ->capture_default_str();
  app.add_option(
         "--sync-stale-seconds", o.sync_stale_seconds,
         "live mode: /readyz reports not ready while a list/watch has been failing this long")
      ->check(CLI::Range(1, 86400))
      ->capture_default_str();
  app.add_option("--dra", text.dra,
                 "live mode: read resource.k8s.io/v1 ResourceSlices and ResourceClaims and score "
                 "DRA pods (auto: when the API server serves it)")
      ->check(CLI::IsMember({"auto", "off"}))
      ->capture_default_str();
  app.add_option("--dra-driver", o.dra_driver,
                 "DRA driver whose devices with a memory capacity are GPUs")
      ->capture_default_str();
  app.add_option("--dra-memory-unit", text.dra_memory_unit,
                 "bytes of DRA memory per unit of --resource-name (1Gi when the device plugin "
                 "advertises GiB, 1Mi for MiB)")
      ->capture_default_str();
  app.add_option("--assume-ttl-seconds", o.assume_ttl_seconds,
                 "deprecated, ignored: reservations no longer expire by time (see "
                 "--reservation-check-seconds)")
      ->check(CLI::Range(1, 86400));
}

void add_leader_election_flags(CLI::App& app, Options& o, FlagText& text) {
  app.add_flag(
      "--leader-elect", o.leader_elect,
      "live mode: run several replicas; only the one holding the Lease binds (and is ready)");
  app.add_option("--leader-elect-lease-duration", text.lease_duration,
                 "how long followers wait after the last renewal before taking over")
      ->capture_default_str();
  app.add_option("--leader-elect-renew-deadline", text.renew_deadline,
                 "how long the leader keeps retrying a renewal before it steps down")
      ->capture_default_str();
  app.add_option("--leader-elect-retry-period", text.retry_period,
                 "wait between acquire/renew attempts")
      ->capture_default_str();
  app.add_option("--leader-elect-resource-namespace", o.leader_elect_resource_namespace,
                 "namespace of the Lease")
      ->capture_default_str();
  app.add_option("--leader-elect-resource-name", o.leader_elect_resource_name, "name of the Lease")
      ->capture_default_str();
  app.add_option("--shutdown-grace-period", text.shutdown_grace,
                 "on SIGTERM, how long to wait for binds in flight before exiting")
      ->capture_default_str();
  app.add_option(
         "--api-stall-warning", text.api_stall_warning,
         "live mode: log a warning when the API server has not answered a request for this long "
         "(then with back-off); 0 = never")
      ->capture_default_str();
}

void add_consolidation_flags(CLI::App& app, Options& o, FlagText& text) {
  app.add_option("--consolidate", o.consolidate,
                 "live mode: off; plan (report moves that free whole GPUs at "
                 "/gpushare-scheduler/consolidation); evict (the leader also carries them out, "
                 "one pod at a time, through the Eviction API)")
      ->check(CLI::IsMember({"off", "plan", "evict"}))
      ->capture_default_str();
  app.add_option("--consolidate-namespaces", text.consolidate_namespaces,
                 "comma-separated namespaces whose pods all opt in to consolidation (else only "
                 "pods labelled gpushare.aliyun.com/consolidate=true)");
  app.add_option("--consolidate-max-moves-per-hour", o.consolidate_max_moves_per_hour,
                 "most pods consolidation evicts in any hour")
      ->check(CLI::Range(1, 10000))
      ->capture_default_str();
  app.add_option("--consolidate-interval", text.consolidate_interval,
                 "how often consolidation plans (and, in evict mode, starts a move)")
      ->capture_default_str();
  app.add_option("--consolidate-replacement-timeout", text.consolidate_replacement_timeout,
                 "how long an evicted pod's owner has to get its replacement bound before the "
                 "plan stops")
      ->capture_default_str();
}

std::optional<std::string> check_consolidation(Options& o, const FlagText& text) {
  // Durations are converted with the others (convert_durations).
  if (o.consolidate_interval.count() < 1000 || o.consolidate_replacement_timeout.count() < 1000) {
    return std::string(
        "--consolidate-interval and --consolidate-replacement-timeout must be at least 1s");
  }
  o.consolidate_namespaces.clear();
  std::string_view rest = text.consolidate_namespaces;
  while (!rest.empty()) {
    const auto comma = rest.find(',');
    const std::string_view name = rest.substr(0, comma);
    rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
    if (name.empty()) continue;
    if (name.size() > 63 || !std::all_of(name.begin(), name.end(), [](char c) {
          return std::islower(static_cast<unsigned char>(c)) ||
                 std::isdigit(static_cast<unsigned char>(c)) || c == '-';
        }))
      return std::string(fmt::format("--consolidate-namespaces: \"{}\" is not a namespace name",
                                     std::string(name)));
    o.consolidate_namespaces.emplace_back(name);
  }
  return std::nullopt;
}

// Each check below answers the usage error of the first flag it finds wrong, or nothing.
std::optional<std::string> check_serving(Options& o, const FlagText& text) {
  if (o.listen_port() < 0)
    return std::string(fmt::format("--listen: bad address \"{}\" (want host:port)", o.listen));
  if (o.tls_cert_file.empty() != o.tls_private_key_file.empty()) {
    return std::string("--tls-cert-file and --tls-private-key-file must be given together");
  }
  if (!o.tls_client_ca_file.empty() && o.tls_cert_file.empty()) {
    return std::string(
        "--tls-client-ca needs HTTPS: give --tls-cert-file and --tls-private-key-file");
  }
  try {
    o.allowed_clients = http::ClientNetworks::parse(text.allowed_clients);
  } catch (const std::invalid_argument& e) {
    return std::string(fmt::format("--allowed-clients: {}", e.what()));
  }
  if (o.names.memory.empty() || o.names.count.empty()) {
    return std::string("--resource-name and --count-name must not be empty");
  }
  if (!kube::is_label_key(o.names.gpu_model_label)) {
    return std::string(fmt::format(
        "--gpu-model-label \"{}\" is not a label key ([prefix/]name, as nvidia.com/gpu.product)",
        o.names.gpu_model_label));
  }
  return std::nullopt;
}

std::optional<std::string> convert_durations(Options& o, const FlagText& text) {
  for (auto [flag, value, out] :
       {std::tuple{"--leader-elect-lease-duration", &text.lease_duration,
                   &o.leader_elect_lease_duration},
        std::tuple{"--leader-elect-renew-deadline", &text.renew_deadline,
                   &o.leader_elect_renew_deadline},
        std::tuple{"--leader-elect-retry-period", &text.retry_period, &o.leader_elect_retry_period},
        std::tuple{"--shutdown-grace-period", &text.shutdown_grace, &o.shutdown_grace_period},
        std::tuple{"--api-stall-warning", &text.api_stall_warning, &o.api_stall_warning},
        std::tuple{"--consolidate-interval", &text.consolidate_interval, &o.consolidate_interval},
        std::tuple{"--consolidate-replacement-timeout", &text.consolidate_replacement_timeout,
                   &o.consolidate_replacement_timeout},
        std::tuple{"--http-header-timeout", &text.header_timeout, &o.connections.header_timeout},
        std::tuple{"--http-body-timeout", &text.body_timeout, &o.connections.body_timeout}}) {
    const auto duration = parse_go_duration(*value);
    if (!duration)
      return std::string(
          fmt::format("{}: bad duration \"{}\" (e.g. 15s, 500ms, 1m)", flag, *value));
    *out = *duration;
  }
  if (o.connections.header_timeout.count() <= 0 || o.connections.body_timeout.count() <= 0) {
    return std::string("--http-header-timeout and --http-body-timeout must be positive");
  }
  return std::nullopt;
}

std::optional<std::string> convert_dra(Options& o, const FlagText& text) {
  o.dra = text.dra != "off";
  try {
    o.dra_bytes_per_unit = core::Quantity::parse(text.dra_memory_unit).units_ceil();
  } catch (const std::exception&) {
    o.dra_bytes_per_unit = 0;
  }
  if (o.dra_bytes_per_unit <= 0)
    return std::string(fmt::format(
        "--dra-memory-unit: \"{}\" is not a positive quantity (e.g. 1Gi)", text.dra_memory_unit));
  return std::nullopt;
}

std::optional<std::string> check_leader_election(const Options& o) {
  if (o.leader_elect) {
    // client-go's rules (leaderelection.NewLeaderElector).
    if (o.leader_elect_lease_duration < std::chrono::seconds(1)) {
      return std::string("--leader-elect-lease-duration must be at least 1s");
    }
    if (o.leader_elect_lease_duration <= o.leader_elect_renew_deadline) {
      return std::string(
          "--leader-elect-lease-duration must be greater than --leader-elect-renew-deadline");
    }
    if (o.leader_elect_retry_period.count() <= 0 ||
        o.leader_elect_renew_deadline * 10 <= o.leader_elect_retry_period * 12) {
      return std::string(
          "--leader-elect-renew-deadline must be greater than 1.2 x --leader-elect-retry-period");
    }
    if (o.leader_elect_resource_namespace.empty() || o.leader_elect_resource_name.empty()) {
      return std::string(
          "--leader-elect-resource-namespace and --leader-elect-resource-name must not be empty");
    }
  }
  return std::nullopt;
}

// Exactly one cluster source.
std::optional<std::string> choose_cluster_source(
    Options& o, const std::function<std::optional<std::string>(const char*)>& getenv) {
  std::string kubeconfig = o.kubeconfig;
  if (kubeconfig.empty() && o.cluster_file.empty()) {
    if (auto env = getenv("KUBECONFIG"); env && !env->empty()) kubeconfig = *env;
  }
  const bool in_cluster = getenv("KUBERNETES_SERVICE_HOST").has_value() &&
                          getenv("KUBERNETES_SERVICE_PORT").has_value();
  if (!o.cluster_file.empty() && !o.kubeconfig.empty()) {
    return std::string("give only one of --cluster-file and --kubeconfig");
  }
  if (!o.cluster_file.empty()) {
    if (o.leader_elect)
      return std::string("--leader-elect needs a live cluster (not --cluster-file)");
    if (o.consolidate != "off")
      return std::string("--consolidate needs a live cluster (not --cluster-file)");
    o.source = ClusterSource::kClusterFile;
  } else if (!kubeconfig.empty()) {
    o.source = ClusterSource::kKubeconfig;
    o.kubeconfig = kubeconfig;
  } else if (in_cluster) {
    o.source = ClusterSource::kInCluster;
  } else {
    return std::string(
        "no cluster to serve: give --cluster-file FILE (standalone), --kubeconfig FILE (or set "
        "$KUBECONFIG), or run in a pod (KUBERNETES_SERVICE_HOST/PORT)");
  }
  return std::nullopt;
}

}  // namespace

std::optional<std::chrono::milliseconds> parse_go_duration(std::string_view text) {
  if (text == "0") return std::chrono::milliseconds(0);
  if (text.empty()) return std::nullopt;
  double total_ms = 0;
  std::size_t i = 0;
  while (i < text.size()) {
    const std::size_t start = i;
    while (i < text.size() && (std::isdigit(static_cast<unsigned char>(text[i])) || text[i] == '.'))
      ++i;
    if (i == start) return std::nullopt;
    double value = 0;
    const std::string number(text.substr(start, i - start));
    std::size_t used = 0;
    try {
      value = std::stod(number, &used);
    } catch (const std::exception&) {
      return std::nullopt;
    }
    if (used != number.size()) return std::nullopt;
    const std::size_t unit_start = i;
    while (i < text.size() && !std::isdigit(static_cast<unsigned char>(text[i])) && text[i] != '.')
      ++i;
    const std::string_view unit = text.substr(unit_start, i - unit_start);
    double scale = 0;
    if (unit == "ns")
      scale = 1e-6;
    else if (unit == "us" || unit == "\u00b5s" || unit == "\u03bcs")
      scale = 1e-3;
    else if (unit == "ms")
      scale = 1;
    else if (unit == "s")
      scale = 1e3;
    else if (unit == "m")
      scale = 60e3;
    else if (unit == "h")
      scale = 3600e3;
    else
      return std::nullopt;
    total_ms += value * scale;
  }
  if (total_ms > 1e15) return std::nullopt;
  return std::chrono::milliseconds(static_cast<std::int64_t>(total_ms));
}

std::string version_string() {
  return gpushare::version_string();
}

std::string Options::listen_host() const {
  const auto colon = listen.rfind(':');
  std::string host = colon == std::string::npos ? listen : listen.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']')
    host = host.substr(1, host.size() - 2);
  return host.empty() ? "0.0.0.0" : host;
}

int Options::listen_port() const {
  const auto colon = listen.rfind(':');
  int port = -1;
  if (colon == std::string::npos) return port;
  const std::string_view digits(listen.data() + colon + 1, listen.size() - colon - 1);
  auto [ptr, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), port);
  if (ec != std::errc() || ptr != digits.data() + digits.size() || port < 0 || port > 65535)
    return -1;
  return port;
}

ParsedOptions parse_options(const std::vector<std::string>& raw_args,
                            const std::function<std::optional<std::string>(const char*)>& getenv) {
  ParsedOptions parsed;
  Options& o = parsed.options;
  o.policy = std::string(core::kDefaultPolicy);

  CLI::App app{"gpushare-extender: kube-scheduler extender that shares GPUs by memory",
               "gpushare-extender"};
  app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  app.set_version_flag("--version", version_string());
  FlagText text;
  add_serving_flags(app, o, text);
  add_scheduling_flags(app, o);
  add_cluster_flags(app, o);
  add_connection_flags(app, o, text);
  add_live_flags(app, o, text);
  add_leader_election_flags(app, o, text);
  add_consolidation_flags(app, o, text);

  std::vector<std::string> args;
  try {
    if (auto config = find_config_flag(raw_args)) args = config_file_args(*config);
  } catch (const std::exception& e) {
    parsed.action = ParsedOptions::Action::kExitUsage;
    parsed.message = e.what();
    return parsed;
  }
  args.insert(args.end(), raw_args.begin(), raw_args.end());
  std::vector<std::string> reversed(args.rbegin(), args.rend());  // CLI11 consumes from the back
  try {
    app.parse(reversed);
  } catch (const CLI::CallForHelp&) {
    parsed.action = ParsedOptions::Action::kExitSuccess;
    parsed.message = app.help();
    return parsed;
  } catch (const CLI::CallForVersion&) {
    parsed.action = ParsedOptions::Action::kExitSuccess;
    parsed.message = version_string() + "\n";
    return parsed;
  } catch (const CLI::ParseError& e) {
    parsed.action = ParsedOptions::Action::kExitUsage;
    std::string message = e.what();
    std::replace(message.begin(), message.end(), '\n', ' ');
    parsed.message = message;
    return parsed;
  }

  std::optional<std::string> error = check_serving(o, text);
  if (!error) error = convert_durations(o, text);
  if (!error) error = convert_dra(o, text);
  if (!error) error = check_leader_election(o);
  if (!error) error = check_consolidation(o, text);
  if (!error) error = choose_cluster_source(o, getenv);
  if (error) {
    parsed.action = ParsedOptions::Action::kExitUsage;
    parsed.message = std::move(*error);
  }
  return parsed;
}

}  // namespace gpushare::cmd::extender
