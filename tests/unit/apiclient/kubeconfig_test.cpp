#include "gpushare/apiclient/kubeconfig.h"

#include <gtest/gtest.h>

#include "gpushare/apiclient/config_resolution.h"
#include "test_util.h"

namespace gpushare::apiclient {
namespace {

using testing::TempDir;

// base64 of the literal strings "CA-PEM", "CERT-PEM", "KEY-PEM".
constexpr const char* kCaData = "Q0EtUEVN";
constexpr const char* kCertData = "Q0VSVC1QRU0=";
constexpr const char* kKeyData = "S0VZLVBFTQ==";

std::string kubeconfig(const std::string& cluster_body, const std::string& user_body,
                       const std::string& extra_context = "") {
  return "apiVersion: v1\nkind: Config\ncurrent-context: main\n"
         "clusters:\n- name: c1\n  cluster:\n" +
         cluster_body + "users:\n- name: u1\n  user:\n" + user_body +
         "contexts:\n- name: main\n  context:\n    cluster: c1\n    user: u1\n"
         "    namespace: team-a\n" +
         extra_context;
}

std::string error_of(const std::function<void()>& load) {
  try {
    load();
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "<no error>";
}

TEST(Kubeconfig, DataFieldsAreDecoded) {
  TempDir dir;
  const auto path = dir.write(
      "config", kubeconfig("    server: https://10.1.2.3:6443\n    certificate-authority-data: " +
                               std::string(kCaData) + "\n    tls-server-name: api.internal\n",
                           "    client-certificate-data: " + std::string(kCertData) +
                               "\n    client-key-data: " + kKeyData + "\n"));
  const ClusterConfig config = load_kubeconfig(path);
  EXPECT_EQ(config.server, "https://10.1.2.3:6443");
  EXPECT_EQ(config.ca_pem, "CA-PEM");
  EXPECT_TRUE(config.ca_file.empty());
  EXPECT_EQ(config.client_cert_pem, "CERT-PEM");
  EXPECT_EQ(config.client_key_pem, "KEY-PEM");
  EXPECT_EQ(config.tls_server_name, "api.internal");
  EXPECT_EQ(config.namespace_name, "team-a");
  EXPECT_FALSE(config.insecure_skip_tls_verify);
  EXPECT_NE(config.source.find("context main"), std::string::npos);
  EXPECT_NE(config.source.find(path.string()), std::string::npos);
}

TEST(Kubeconfig, RelativeFilesResolveAgainstTheKubeconfigDirectory) {
  TempDir dir;
  dir.write("pki/ca.crt", "ca");
  dir.write("pki/client.crt", "cert");
  dir.write("pki/client.key", "key");
  const auto path =
      dir.write("sub/../config",
                kubeconfig("    server: https://h:6443\n    certificate-authority: pki/ca.crt\n",
                           "    client-certificate: pki/client.crt\n    client-key: " +
                               (dir.path() / "pki/client.key").string() + "\n"));
  const ClusterConfig config = load_kubeconfig(path);
  EXPECT_EQ(config.ca_file, (dir.path() / "pki/ca.crt").string());
  EXPECT_TRUE(config.ca_pem.empty());
  EXPECT_EQ(config.client_cert_file, (dir.path() / "pki/client.crt").string());
  EXPECT_EQ(config.client_key_file, (dir.path() / "pki/client.key").string());
}

TEST(Kubeconfig, DataWinsOverFile) {
  TempDir dir;
  const auto path = dir.write(
      "config", kubeconfig("    server: https://h\n    certificate-authority: does-not-exist.crt\n"
                           "    certificate-authority-data: " +
                               std::string(kCaData) + "\n",
                           "    token: abc\n"));
  const ClusterConfig config = load_kubeconfig(path);
  EXPECT_EQ(config.ca_pem, "CA-PEM");
  EXPECT_TRUE(config.ca_file.empty());
}

TEST(Kubeconfig, MissingFileIsReported) {
  TempDir dir;
  const auto path = dir.write(
      "config", kubeconfig("    server: https://h\n    certificate-authority: missing/ca.crt\n",
                           "    token: t\n"));
  const auto message = error_of([&] { load_kubeconfig(path); });
  EXPECT_NE(message.find("certificate-authority"), std::string::npos) << message;
  EXPECT_NE(message.find("missing/ca.crt"), std::string::npos) << message;
}

TEST(Kubeconfig, TokenAndTokenFile) {
  TempDir dir;
  dir.write("token", "file-token\n");
  const auto with_token =
      dir.write("a", kubeconfig("    server: https://h\n", "    token: inline\n"));
  const ClusterConfig a = load_kubeconfig(with_token);
  EXPECT_EQ(a.bearer_token, "inline");
  EXPECT_TRUE(a.token_file.empty());

  const auto with_file =
      dir.write("b", kubeconfig("    server: https://h\n", "    tokenFile: token\n"));
  const ClusterConfig b = load_kubeconfig(with_file);
  EXPECT_TRUE(b.bearer_token.empty());
  EXPECT_EQ(b.token_file, (dir.path() / "token").string());
}

TEST(Kubeconfig, InsecureWithCaIsRejectedWithClientGoText) {
  TempDir dir;
  const auto path =
      dir.write("config", kubeconfig("    server: https://h\n    insecure-skip-tls-verify: true\n  "
                                     "  certificate-authority-data: " +
                                         std::string(kCaData) + "\n",
                                     "    token: t\n"));
  const auto message = error_of([&] { load_kubeconfig(path); });
  EXPECT_NE(
      message.find("specifying a root certificates file with the insecure flag is not allowed"),
      std::string::npos)
      << message;
}

TEST(Kubeconfig, InsecureWithoutCa) {
  TempDir dir;
  const auto path = dir.write(
      "config",
      kubeconfig("    server: https://h\n    insecure-skip-tls-verify: true\n", "    token: t\n"));
  EXPECT_TRUE(load_kubeconfig(path).insecure_skip_tls_verify);
}

TEST(Kubeconfig, ContextOverrideAndMissingPieces) {
  TempDir dir;
  const std::string extra =
      "- name: other\n  context:\n    cluster: c1\n    user: u1\n"
      "- name: no-cluster\n  context:\n    cluster: ghost\n    user: u1\n"
      "- name: no-user\n  context:\n    cluster: c1\n    user: nobody\n";
  const auto path =
      dir.write("config", kubeconfig("    server: https://h\n", "    token: t\n", extra));

  const ClusterConfig other = load_kubeconfig(path, "other");
  EXPECT_EQ(other.namespace_name, "default");  // no namespace in that context
  EXPECT_NE(other.source.find("context other"), std::string::npos);

  auto message = error_of([&] { load_kubeconfig(path, "absent"); });
  EXPECT_NE(message.find("context \"absent\" not found"), std::string::npos) << message;
  message = error_of([&] { load_kubeconfig(path, "no-cluster"); });
  EXPECT_NE(message.find("cluster \"ghost\""), std::string::npos) << message;
  message = error_of([&] { load_kubeconfig(path, "no-user"); });
  EXPECT_NE(message.find("user \"nobody\""), std::string::npos) << message;
}

TEST(Kubeconfig, NoCurrentContext) {
  TempDir dir;
  const auto path = dir.write("config", "apiVersion: v1\nclusters: []\n");
  const auto message = error_of([&] { load_kubeconfig(path); });
  EXPECT_NE(message.find("current-context"), std::string::npos) << message;
}

TEST(Kubeconfig, ExecAndAuthProviderAreNotSupported) {
  TempDir dir;
  const auto exec = dir.write(
      "exec",
      kubeconfig(
          "    server: https://h\n",
          "    exec:\n      apiVersion: client.authentication.k8s.io/v1\n      command: aws\n"));
  auto message = error_of([&] { load_kubeconfig(exec); });
  EXPECT_NE(message.find("exec"), std::string::npos) << message;
  EXPECT_NE(message.find("not supported"), std::string::npos) << message;
  EXPECT_NE(message.find("user \"u1\""), std::string::npos) << message;

  const auto provider = dir.write(
      "provider", kubeconfig("    server: https://h\n", "    auth-provider:\n      name: gcp\n"));
  message = error_of([&] { load_kubeconfig(provider); });
  EXPECT_NE(message.find("auth-provider"), std::string::npos) << message;
  EXPECT_NE(message.find("not supported"), std::string::npos) << message;
}

TEST(Kubeconfig, BadBase64AndHalfAClientCert) {
  TempDir dir;
  const auto bad =
      dir.write("bad", kubeconfig("    server: https://h\n    certificate-authority-data: '%%%'\n",
                                  "    token: t\n"));
  auto message = error_of([&] { load_kubeconfig(bad); });
  EXPECT_NE(message.find("certificate-authority-data is not valid base64"), std::string::npos)
      << message;

  const auto half = dir.write(
      "half", kubeconfig("    server: https://h\n",
                         "    client-certificate-data: " + std::string(kCertData) + "\n"));
  message = error_of([&] { load_kubeconfig(half); });
  EXPECT_NE(message.find("client-key"), std::string::npos) << message;
}

TEST(Kubeconfig, InvalidYamlAndMissingServer) {
  TempDir dir;
  const auto broken = dir.write("broken", "clusters: [\n");
  EXPECT_NE(error_of([&] { load_kubeconfig(broken); }).find("invalid YAML"), std::string::npos);
  const auto no_server = dir.write("noserver", kubeconfig("    server: ''\n", "    token: t\n"));
  EXPECT_NE(error_of([&] { load_kubeconfig(no_server); }).find("has no server"), std::string::npos);
  EXPECT_NE(error_of([&] { load_kubeconfig(dir.path() / "nope"); }).find("cannot read kubeconfig"),
            std::string::npos);
}

// --- choosing the source -------------------------------------------------------------------

EnvLookup fake_env(std::map<std::string, std::string> values) {
  return [values = std::move(values)](std::string_view name) -> std::optional<std::string> {
    const auto it = values.find(std::string(name));
    if (it == values.end()) return std::nullopt;
    return it->second;
  };
}

TEST(ConfigResolution, FirstExistingKubeconfigInList) {
  TempDir dir;
  const auto second = dir.write("second", "x");
  const auto third = dir.write("third", "x");
  const std::string list =
      (dir.path() / "first").string() + "::" + second.string() + ":" + third.string();
  EXPECT_EQ(first_existing_kubeconfig(list), second);
  EXPECT_EQ(first_existing_kubeconfig((dir.path() / "none").string()), std::nullopt);
  EXPECT_EQ(first_existing_kubeconfig(""), std::nullopt);
}

TEST(ConfigResolution, ExplicitThenEnvThenInCluster) {
  TempDir dir;
  const auto from_env =
      dir.write("env-config", kubeconfig("    server: https://env\n", "    token: t\n"));
  const auto explicit_path =
      dir.write("explicit-config", kubeconfig("    server: https://explicit\n", "    token: t\n"));
  dir.write("sa/token", "sa-token");
  dir.write("sa/ca.crt", "ca");

  ConfigSources sources;
  sources.in_cluster.service_account_dir = dir.path() / "sa";
  sources.in_cluster.env = fake_env({{"KUBECONFIG", from_env.string()},
                                     {"KUBERNETES_SERVICE_HOST", "10.0.0.1"},
                                     {"KUBERNETES_SERVICE_PORT", "443"}});
  sources.explicit_kubeconfig = explicit_path;
  EXPECT_EQ(resolve_cluster_config(sources).server, "https://explicit");

  sources.explicit_kubeconfig.clear();
  EXPECT_EQ(resolve_cluster_config(sources).server, "https://env");

  sources.in_cluster.env =
      fake_env({{"KUBERNETES_SERVICE_HOST", "10.0.0.1"}, {"KUBERNETES_SERVICE_PORT", "443"}});
  EXPECT_EQ(resolve_cluster_config(sources).server, "https://10.0.0.1:443");

  sources.in_cluster.env = fake_env({});
  EXPECT_NE(error_of([&] { resolve_cluster_config(sources); }).find("--kubeconfig"),
            std::string::npos);

  // An explicit path that does not exist is an error, not a fall-through.
  sources.explicit_kubeconfig = dir.path() / "missing";
  EXPECT_NE(error_of([&] { resolve_cluster_config(sources); }).find("cannot read kubeconfig"),
            std::string::npos);
}

}  // namespace
}  // namespace gpushare::apiclient
