#pragma once
// kubeconfig files (clientcmd v1) as kubectl reads them, minus exec/auth-provider plugins.

#include <filesystem>
#include <string>
#include <string_view>

#include "gpushare/apiclient/cluster_config.h"

namespace gpushare::apiclient {

// Loads `path` and resolves `context_override` (or, if empty, `current-context`) to its cluster
// and user. `*-data` fields (base64 PEM) win over their file counterparts; relative file paths
// resolve against the kubeconfig's directory. Throws ConfigError naming the file and the missing
// or invalid piece (context/cluster/user, bad base64, insecure together with a CA, exec or
// auth-provider users, basic auth).
ClusterConfig load_kubeconfig(const std::filesystem::path& path,
                              std::string_view context_override = {});

// Same, from YAML text; `base_dir` is used for relative paths and `origin` in messages.
ClusterConfig parse_kubeconfig(std::string_view yaml_text, const std::filesystem::path& base_dir,
                               std::string_view origin, std::string_view context_override = {});

}  // namespace gpushare::apiclient
