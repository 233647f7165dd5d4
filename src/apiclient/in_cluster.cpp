#include "gpushare/apiclient/in_cluster.h"

#include <fmt/format.h>

#include "file_util.h"

namespace gpushare::apiclient {
namespace {

std::string env_value(const EnvLookup& env, std::string_view name) {
  return env(name).value_or(std::string());
}

// net.JoinHostPort: an IPv6 literal (it contains ':') gets brackets.
std::string join_host_port(std::string_view host, std::string_view port) {
  if (host.find(':') != std::string_view::npos) return fmt::format("[{}]:{}", host, port);
  return fmt::format("{}:{}", host, port);
}

}  // namespace

bool in_cluster_environment_present(const EnvLookup& env) {
  return !env_value(env, "KUBERNETES_SERVICE_HOST").empty() &&
         !env_value(env, "KUBERNETES_SERVICE_PORT").empty();
}

ClusterConfig load_in_cluster_config(const InClusterOptions& options) {
  const std::string host = env_value(options.env, "KUBERNETES_SERVICE_HOST");
  const std::string port = env_value(options.env, "KUBERNETES_SERVICE_PORT");
  if (host.empty() || port.empty()) {
    throw ConfigError(
        "unable to load in-cluster configuration, KUBERNETES_SERVICE_HOST and "
        "KUBERNETES_SERVICE_PORT must be defined");
  }

  const auto token_path = options.service_account_dir / "token";
  const auto ca_path = options.service_account_dir / "ca.crt";
  const auto token = detail::read_file(token_path);
  if (!token) {
    throw ConfigError(
        fmt::format("in-cluster: cannot read service-account token {}", token_path.string()));
  }
  if (!detail::read_file(ca_path)) {
    throw ConfigError(fmt::format("in-cluster: cannot read CA {}", ca_path.string()));
  }

  ClusterConfig config;
  config.server = "https://" + join_host_port(host, port);
  config.bearer_token = std::string(detail::trim(*token));
  config.token_file = token_path.string();
  config.ca_file = ca_path.string();
  if (const auto ns = detail::read_file(options.service_account_dir / "namespace")) {
    const auto trimmed = detail::trim(*ns);
    if (!trimmed.empty()) config.namespace_name = std::string(trimmed);
  }
  config.source = fmt::format("in-cluster service account ({})", config.server);
  return config;
}

}  // namespace gpushare::apiclient
