#pragma once
// In-cluster configuration from the pod's service account (client-go's rest.InClusterConfig).

#include <filesystem>

#include "gpushare/apiclient/cluster_config.h"

namespace gpushare::apiclient {

inline constexpr const char* kServiceAccountDir = "/var/run/secrets/kubernetes.io/serviceaccount";

struct InClusterOptions {
  std::filesystem::path service_account_dir = kServiceAccountDir;  // token, ca.crt, namespace
  EnvLookup env = process_environment();
};

// True when KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT are both set (non-empty).
bool in_cluster_environment_present(const EnvLookup& env);

// Server https://host:port (IPv6 hosts bracketed), token file (read now to fail early, re-read
// later by the client), CA file, namespace (default "default" when the file is absent).
// Throws ConfigError when the variables are missing or the token or CA is unreadable.
ClusterConfig load_in_cluster_config(const InClusterOptions& options = {});

}  // namespace gpushare::apiclient
