#include "gpushare/apiclient/config_resolution.h"

#include <fmt/format.h>

#include <system_error>

#include "gpushare/apiclient/kubeconfig.h"

namespace gpushare::apiclient {
namespace {

bool is_existing_file(const std::filesystem::path& path) {
  std::error_code ignored;
  return std::filesystem::is_regular_file(path, ignored);
}

}  // namespace

std::optional<std::filesystem::path> first_existing_kubeconfig(std::string_view kubeconfig_env) {
  std::size_t start = 0;
  while (start <= kubeconfig_env.size()) {
    auto end = kubeconfig_env.find(':', start);
    if (end == std::string_view::npos) end = kubeconfig_env.size();
    const auto entry = kubeconfig_env.substr(start, end - start);
    if (!entry.empty() && is_existing_file(std::filesystem::path(entry))) {
      return std::filesystem::path(entry);
    }
    start = end + 1;
  }
  return std::nullopt;
}

std::optional<std::filesystem::path> selected_kubeconfig(const ConfigSources& sources) {
  if (!sources.explicit_kubeconfig.empty()) return sources.explicit_kubeconfig;
  if (const auto env = sources.in_cluster.env("KUBECONFIG"); env && !env->empty()) {
    return first_existing_kubeconfig(*env);
  }
  return std::nullopt;
}

ClusterConfig resolve_cluster_config(const ConfigSources& sources) {
  if (const auto path = selected_kubeconfig(sources)) {
    return load_kubeconfig(*path, sources.context_override);
  }
  if (in_cluster_environment_present(sources.in_cluster.env)) {
    return load_in_cluster_config(sources.in_cluster);
  }
  const auto env = sources.in_cluster.env("KUBECONFIG");
  if (env && !env->empty()) {
    throw ConfigError(fmt::format(
        "no file in $KUBECONFIG ({}) exists and KUBERNETES_SERVICE_HOST/PORT are not set", *env));
  }
  throw ConfigError(
      "no cluster configuration: give --kubeconfig, set $KUBECONFIG, or run in a cluster "
      "(KUBERNETES_SERVICE_HOST/PORT)");
}

}  // namespace gpushare::apiclient
