#pragma once
// Which cluster config to use: explicit --kubeconfig, else $KUBECONFIG, else in-cluster.

#include <filesystem>
#include <optional>
#include <string>

#include "gpushare/apiclient/cluster_config.h"
#include "gpushare/apiclient/in_cluster.h"

namespace gpushare::apiclient {

struct ConfigSources {
  std::filesystem::path explicit_kubeconfig;  // --kubeconfig; empty when not given
  std::string context_override;               // --context; empty = current-context
  InClusterOptions in_cluster;                // also supplies the environment ($KUBECONFIG)
};

// The first existing file in a colon-separated $KUBECONFIG value. Unlike kubectl we do not merge
// several files: the first one that exists is used whole.
std::optional<std::filesystem::path> first_existing_kubeconfig(std::string_view kubeconfig_env);

// The kubeconfig path that would be used (explicit, else from $KUBECONFIG), if any.
std::optional<std::filesystem::path> selected_kubeconfig(const ConfigSources& sources);

// Loads the config in order: explicit path (must exist), $KUBECONFIG, in-cluster. Throws
// ConfigError if the chosen source is broken or if none is available.
ClusterConfig resolve_cluster_config(const ConfigSources& sources);

}  // namespace gpushare::apiclient
