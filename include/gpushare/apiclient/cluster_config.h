#pragma once
// Where the API server is and how to authenticate to it, independent of where that came from
// (kubeconfig or in-cluster service account).

#include <cstdlib>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

namespace gpushare::apiclient {

// Thrown by the config loaders. Loading happens once at start-up on the main thread, so an
// exception with a message a person can act on is the right shape here.
class ConfigError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct ClusterConfig {
  std::string server;  // e.g. https://10.0.0.1:6443 (may carry a path prefix)

  // Trust: PEM bytes win over the file when both are set. The file is kept as a path (not read
  // into memory) so that a rotated CA on disk is picked up on new connections.
  std::string ca_pem;
  std::string ca_file;
  std::string client_cert_pem;
  std::string client_cert_file;
  std::string client_key_pem;
  std::string client_key_file;
  bool insecure_skip_tls_verify = false;
  std::string tls_server_name;  // overrides the name used for SNI and certificate verification
  std::string proxy_url;

  // Bearer auth: the file, when set, is re-read periodically and its last successfully read
  // content wins over `bearer_token` (client-go's rule).
  std::string bearer_token;
  std::string token_file;

  std::string namespace_name = "default";
  std::string source;  // human-readable origin, e.g. "kubeconfig /x/config (context kind-a)"

  bool has_ca() const { return !ca_pem.empty() || !ca_file.empty(); }
  bool has_client_cert() const { return !client_cert_pem.empty() || !client_cert_file.empty(); }
};

// Environment lookup, injectable for tests. Returns nullopt for unset variables.
using EnvLookup = std::function<std::optional<std::string>(std::string_view name)>;
EnvLookup process_environment();

}  // namespace gpushare::apiclient
