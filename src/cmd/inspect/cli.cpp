#include "cmd/inspect/cli.h"

#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <filesystem>

#include "cmd/inspect/sources.h"
#include "cmd/resource_name_flags.h"
#include "gpushare/apiclient/api_client.h"
#include "gpushare/apiclient/config_resolution.h"
#include "gpushare/core/quantity.h"
#include "gpushare/inspect/render.h"
#include "gpushare/inspect/view.h"
#include "gpushare/version.h"

namespace gpushare::cmd::inspect {
namespace {

struct CliOptions {
  std::string node;
  bool details = false;
  bool consolidation = false;
  std::string output = "table";
  std::string kubeconfig;
  std::string context;
  std::string extender;
  bool insecure_skip_tls_verify = false;
  std::string memory_unit;  // "" = guess
  int timeout_seconds = 30;
  kube::ResourceNames names;
  core::DraConfig dra;  // as the extender's --dra-driver / --dra-memory-unit
  std::string dra_memory_unit = "1Gi";
};

// kubectl's order: --kubeconfig, $KUBECONFIG, ~/.kube/config; then in-cluster (the API client
// itself knows the first two and in-cluster, not kubectl's home-directory default).
apiclient::ClusterConfig cluster_config(const CliOptions& o, const EnvLookup& env) {
  apiclient::ConfigSources sources;
  sources.context_override = o.context;
  sources.in_cluster.env = [env](std::string_view name) { return env(name); };
  if (!o.kubeconfig.empty()) {
    sources.explicit_kubeconfig = o.kubeconfig;
  } else if (auto value = env("KUBECONFIG"); !value || value->empty()) {
    if (auto home = env("HOME"); home && !home->empty()) {
      const std::filesystem::path path = std::filesystem::path(*home) / ".kube" / "config";
      std::error_code ec;
      if (std::filesystem::exists(path, ec)) sources.explicit_kubeconfig = path;
    }
  }
  return apiclient::resolve_cluster_config(sources);
}

kube::Json fetch(const CliOptions& o, const std::optional<std::string>& node, const EnvLookup& env,
                 std::vector<std::string>& warnings) {
  if (!o.extender.empty()) {
    ExtenderSource source;
    source.url = o.extender;
    source.insecure_skip_tls_verify = o.insecure_skip_tls_verify;
    source.timeout = std::chrono::seconds(o.timeout_seconds);
    return fetch_from_extender(source, node);
  }
  apiclient::ClusterConfig config;
  try {
    config = cluster_config(o, env);
  } catch (const apiclient::ConfigError& e) {
    throw gpushare::inspect::InspectError(
        fmt::format("{} (or read the extender instead: --extender http://HOST:32766)", e.what()));
  }
  apiclient::ClientOptions options;
  options.request_timeout = std::chrono::seconds(o.timeout_seconds);
  options.connect_timeout = std::chrono::seconds(std::min(o.timeout_seconds, 10));
  options.retry.max_attempts = 3;  // a command line should fail fast
  options.stall_warning =
      std::chrono::milliseconds(0);  // its own time-out reports; stdout is the table
  apiclient::ApiClient client(std::move(config), options);
  return fetch_from_api(client, o.names, o.dra, node, warnings);
}

// Keeps only `node` in an extender document that lists every node (older extenders have no
// /inspect/{node}).
void keep_node(kube::Json& snapshot, const std::string& node) {
  auto& nodes = snapshot["nodes"];
  kube::Json kept = kube::Json::array();
  for (auto& n : nodes) {
    if (n.is_object() && n.value("name", "") == node) kept.push_back(std::move(n));
  }
  nodes = std::move(kept);
}

}  // namespace

int run_cli(const std::vector<std::string>& args, std::ostream& out, std::ostream& err,
            const EnvLookup& env) {
  CliOptions o;
  CLI::App app{
      "kubectl inspect gpushare: GPU memory allocated and free on each shared GPU.\n"
      "Reads nodes, pods and DRA ResourceSlices and ResourceClaims from the API server "
      "(kubeconfig),\n"
      "or the extender's /inspect with --extender.",
      "kubectl-inspect-gpushare"};
  app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  app.set_version_flag("--version", gpushare::version_string());
  app.add_option("node", o.node, "only this node");
  app.add_flag("-d,--details", o.details, "per node: every pod and its memory on each GPU");
  app.add_flag("--consolidation", o.consolidation,
               "the extender's consolidation plan (needs --extender): pods to move, GPUs freed, "
               "the move in flight");
  app.add_option("-o,--output", o.output, "table or json")
      ->check(CLI::IsMember({"table", "json"}))
      ->capture_default_str();
  app.add_option("--kubeconfig", o.kubeconfig,
                 "kubeconfig file (default: $KUBECONFIG, then ~/.kube/config)");
  app.add_option("--context", o.context, "kubeconfig context (default: current-context)");
  app.add_option(
      "--extender", o.extender,
      "read the extender's /inspect instead, e.g. http://NODE-IP:32766 or http://127.0.0.1:39999");
  app.add_flag("--insecure-skip-tls-verify", o.insecure_skip_tls_verify,
               "with an https --extender URL");
  app.add_option("--memory-unit", o.memory_unit,
                 "unit shown in the header (default: guessed like the original)")
      ->check(CLI::IsMember({"GiB", "MiB"}));
  app.add_option("--request-timeout", o.timeout_seconds, "seconds per request")
      ->check(CLI::Range(1, 3600))
      ->capture_default_str();
  gpushare::cmd::add_resource_name_flags(app, o.names);
  app.add_option("--dra-driver", o.dra.driver,
                 "DRA driver whose devices with a memory capacity are GPUs (the extender's flag)")
      ->capture_default_str();
  app.add_option("--dra-memory-unit", o.dra_memory_unit,
                 "bytes of DRA memory per unit of --resource-name (the extender's flag)")
      ->capture_default_str();

  std::vector<std::string> reversed(args.rbegin(), args.rend());  // CLI11 consumes from the back
  try {
    app.parse(reversed);
  } catch (const CLI::CallForHelp&) {
    out << app.help();
    return 0;
  } catch (const CLI::CallForVersion&) {
    out << gpushare::version_string() << "\n";
    return 0;
  } catch (const CLI::ParseError& e) {
    std::string message = e.what();
    std::replace(message.begin(), message.end(), '\n', ' ');
    err << "kubectl-inspect-gpushare: " << message << " (see --help)\n";
    return 2;
  }

  try {
    o.dra.bytes_per_unit = core::Quantity::parse(o.dra_memory_unit).units_ceil();
  } catch (const core::QuantityError&) {
    o.dra.bytes_per_unit = 0;
  }
  if (o.dra.bytes_per_unit <= 0) {
    err << fmt::format(
        "kubectl-inspect-gpushare: --dra-memory-unit: \"{}\" is not a positive quantity (e.g. "
        "1Gi) (see --help)\n",
        o.dra_memory_unit);
    return 2;
  }

  if (o.consolidation) {
    if (o.extender.empty()) {
      err << "kubectl-inspect-gpushare: --consolidation reads the extender's plan: give "
             "--extender URL (see --help)\n";
      return 2;
    }
    ExtenderSource source;
    source.url = o.extender;
    source.insecure_skip_tls_verify = o.insecure_skip_tls_verify;
    source.timeout = std::chrono::seconds(o.timeout_seconds);
    try {
      const kube::Json report = fetch_consolidation(source);
      out << (o.output == "json"
                  ? report.dump(2, ' ', false, kube::Json::error_handler_t::replace) + "\n"
                  : render_consolidation(report));
    } catch (const std::exception& e) {
      err << "kubectl-inspect-gpushare: " << e.what() << "\n";
      return 1;
    }
    return 0;
  }

  const std::optional<std::string> node =
      o.node.empty() ? std::nullopt : std::optional<std::string>(o.node);
  std::vector<std::string> warnings;
  kube::Json snapshot;
  gpushare::inspect::ClusterView view;
  try {
    snapshot = fetch(o, node, env, warnings);
    if (node) keep_node(snapshot, *node);
    view = gpushare::inspect::cluster_view(snapshot);
    if (node && view.nodes.empty())
      throw gpushare::inspect::InspectError(fmt::format("node {} not found", *node));
  } catch (const std::exception& e) {
    for (const auto& warning : warnings) err << "warning: " << warning << "\n";
    err << "kubectl-inspect-gpushare: " << e.what() << "\n";
    return 1;
  }
  for (const auto& warning : warnings) err << "warning: " << warning << "\n";

  if (o.output == "json") {
    out << snapshot.dump(2, ' ', false, kube::Json::error_handler_t::replace) << "\n";
    return 0;
  }
  if (node && view.nodes.front().total <= 0) {
    err << fmt::format("kubectl-inspect-gpushare: node {} has no {}{}\n", *node, o.names.memory,
                       view.nodes.front().misconfiguration.empty()
                           ? ""
                           : " usable: " + view.nodes.front().misconfiguration);
    return 1;
  }
  const std::string unit =
      o.memory_unit.empty() ? gpushare::inspect::guess_unit(view) : o.memory_unit;
  out << (o.details ? gpushare::inspect::render_details(view)
                    : gpushare::inspect::render_summary(view, unit));
  // Not on stdout, whose layout is the original plugin's (scripts read it).
  err << gpushare::inspect::render_notes(view, o.details);
  return 0;
}

}  // namespace gpushare::cmd::inspect
