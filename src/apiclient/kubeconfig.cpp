#include "gpushare/apiclient/kubeconfig.h"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include "base64.h"
#include "file_util.h"

namespace gpushare::apiclient {
namespace {

// Reading one kubeconfig, with every error message naming the file.
class KubeconfigReader {
 public:
  KubeconfigReader(const YAML::Node& root, std::filesystem::path base_dir, std::string origin)
      : root_(root), base_dir_(std::move(base_dir)), origin_(std::move(origin)) {}

  ClusterConfig read(std::string_view context_override) const {
    std::string context_name(context_override);
    if (context_name.empty()) context_name = string_field(root_, "current-context", "");
    if (context_name.empty()) {
      fail("no current-context is set and no context was given");
    }
    const YAML::Node context = find_named("contexts", "context", context_name);
    if (!context) fail(fmt::format("context \"{}\" not found", context_name));

    const std::string where = fmt::format("context \"{}\"", context_name);
    const std::string cluster_name = string_field(context, "cluster", where);
    if (cluster_name.empty()) fail(fmt::format("{} names no cluster", where));
    const YAML::Node cluster = find_named("clusters", "cluster", cluster_name);
    if (!cluster) {
      fail(fmt::format("cluster \"{}\" (used by {}) not found", cluster_name, where));
    }

    ClusterConfig config;
    read_cluster(cluster, fmt::format("cluster \"{}\"", cluster_name), config);

    const std::string user_name = string_field(context, "user", where);
    if (!user_name.empty()) {
      const YAML::Node user = find_named("users", "user", user_name);
      if (!user) fail(fmt::format("user \"{}\" (used by {}) not found", user_name, where));
      read_user(user, fmt::format("user \"{}\"", user_name), config);
    }

    const std::string namespace_name = string_field(context, "namespace", where);
    config.namespace_name = namespace_name.empty() ? "default" : namespace_name;
    config.source = fmt::format("kubeconfig {} (context {})", origin_, context_name);
    return config;
  }

 private:
  [[noreturn]] void fail(std::string_view what) const {
    throw ConfigError(fmt::format("kubeconfig {}: {}", origin_, what));
  }

  // The `body_key` map of the entry named `name` in the list `list_key`, or an undefined node.
  YAML::Node find_named(std::string_view list_key, std::string_view body_key,
                        std::string_view name) const {
    const YAML::Node list = root_[std::string(list_key)];
    if (!list || list.IsNull()) return YAML::Node(YAML::NodeType::Undefined);
    if (!list.IsSequence()) fail(fmt::format("{} must be a list", list_key));
    for (const auto& entry : list) {
      if (!entry.IsMap()) fail(fmt::format("every entry of {} must be a map", list_key));
      if (string_field(entry, "name", list_key) != name) continue;
      const YAML::Node body = entry[std::string(body_key)];
      if (!body || body.IsNull()) return YAML::Node(YAML::NodeType::Map);  // present but empty
      if (!body.IsMap()) fail(fmt::format("{} \"{}\": {} must be a map", list_key, name, body_key));
      return body;
    }
    return YAML::Node(YAML::NodeType::Undefined);
  }

  std::string string_field(const YAML::Node& map, std::string_view key,
                           std::string_view where) const {
    const YAML::Node value = map[std::string(key)];
    if (!value || value.IsNull()) return {};
    if (!value.IsScalar()) fail(fmt::format("{}: {} must be a string", where, key));
    return value.Scalar();
  }

  bool bool_field(const YAML::Node& map, std::string_view key, std::string_view where) const {
    const YAML::Node value = map[std::string(key)];
    if (!value || value.IsNull()) return false;
    bool result = false;
    if (!value.IsScalar() || !YAML::convert<bool>::decode(value, result)) {
      fail(fmt::format("{}: {} must be true or false", where, key));
    }
    return result;
  }

  std::string decoded_data(const YAML::Node& map, std::string_view key,
                           std::string_view where) const {
    const std::string encoded = string_field(map, key, where);
    if (encoded.empty()) return {};
    auto decoded = detail::decode_base64(encoded);
    if (!decoded) fail(fmt::format("{}: {} is not valid base64", where, key));
    return std::move(*decoded);
  }

  // A file field, resolved against the kubeconfig's directory and checked to be readable now
  // (client-go validates the same), so a typo is reported at start-up.
  std::string file_field(const YAML::Node& map, std::string_view key,
                         std::string_view where) const {
    const std::string path = detail::resolve_path(string_field(map, key, where), base_dir_);
    std::string reason;
    if (!path.empty() && !detail::read_file(path, &reason)) {
      fail(fmt::format("{}: cannot read {} {}: {}", where, key, path, reason));
    }
    return path;
  }

  void read_cluster(const YAML::Node& cluster, const std::string& where,
                    ClusterConfig& config) const {
    config.server = string_field(cluster, "server", where);
    if (config.server.empty()) fail(fmt::format("{} has no server", where));
    config.insecure_skip_tls_verify = bool_field(cluster, "insecure-skip-tls-verify", where);
    config.tls_server_name = string_field(cluster, "tls-server-name", where);
    config.proxy_url = string_field(cluster, "proxy-url", where);
    config.ca_pem = decoded_data(cluster, "certificate-authority-data", where);
    if (config.ca_pem.empty()) {
      config.ca_file = file_field(cluster, "certificate-authority", where);
    }
    if (config.insecure_skip_tls_verify && config.has_ca()) {
      // The exact text of client-go's validation error.
      fail(
          fmt::format("{}: specifying a root certificates file with the insecure flag is not "
                      "allowed",
                      where));
    }
  }

  void read_user(const YAML::Node& user, const std::string& where, ClusterConfig& config) const {
    if (user["exec"] && !user["exec"].IsNull()) {
      fail(
          fmt::format("{} uses an exec credential plugin, which is not supported; use a token, "
                      "tokenFile or client certificate",
                      where));
    }
    if (user["auth-provider"] && !user["auth-provider"].IsNull()) {
      fail(
          fmt::format("{} uses an auth-provider, which is not supported; use a token, tokenFile "
                      "or client certificate",
                      where));
    }
    if (!string_field(user, "username", where).empty() ||
        !string_field(user, "password", where).empty()) {
      fail(fmt::format("{} uses basic auth (username/password), which is not supported", where));
    }
    if (!string_field(user, "as", where).empty()) {
      fail(fmt::format("{} uses impersonation (as), which is not supported", where));
    }

    config.client_cert_pem = decoded_data(user, "client-certificate-data", where);
    if (config.client_cert_pem.empty()) {
      config.client_cert_file = file_field(user, "client-certificate", where);
    }
    config.client_key_pem = decoded_data(user, "client-key-data", where);
    if (config.client_key_pem.empty()) {
      config.client_key_file = file_field(user, "client-key", where);
    }
    const bool has_key = !config.client_key_pem.empty() || !config.client_key_file.empty();
    if (config.has_client_cert() != has_key) {
      fail(fmt::format("{}: client-certificate and client-key must be given together", where));
    }

    config.bearer_token = string_field(user, "token", where);
    config.token_file = file_field(user, "tokenFile", where);
  }

  const YAML::Node root_;
  const std::filesystem::path base_dir_;
  const std::string origin_;
};

}  // namespace

ClusterConfig parse_kubeconfig(std::string_view yaml_text, const std::filesystem::path& base_dir,
                               std::string_view origin, std::string_view context_override) {
  YAML::Node root;
  try {
    root = YAML::Load(std::string(yaml_text));
  } catch (const YAML::Exception& e) {
    throw ConfigError(fmt::format("kubeconfig {}: invalid YAML: {}", origin, e.what()));
  }
  if (!root.IsMap()) throw ConfigError(fmt::format("kubeconfig {}: not a YAML map", origin));
  try {
    return KubeconfigReader(root, base_dir, std::string(origin)).read(context_override);
  } catch (const YAML::Exception& e) {
    throw ConfigError(fmt::format("kubeconfig {}: {}", origin, e.what()));
  }
}

ClusterConfig load_kubeconfig(const std::filesystem::path& path,
                              std::string_view context_override) {
  std::string reason;
  const auto text = detail::read_file(path, &reason);
  if (!text) throw ConfigError(fmt::format("cannot read kubeconfig {}: {}", path.string(), reason));
  const auto absolute = std::filesystem::absolute(path);
  return parse_kubeconfig(*text, absolute.parent_path(), path.string(), context_override);
}

}  // namespace gpushare::apiclient
