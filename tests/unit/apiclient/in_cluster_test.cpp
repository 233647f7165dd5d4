#include "gpushare/apiclient/in_cluster.h"

#include <gtest/gtest.h>

#include "test_util.h"

namespace gpushare::apiclient {
namespace {

using testing::TempDir;

EnvLookup env_with(std::string host, std::string port) {
  return [host, port](std::string_view name) -> std::optional<std::string> {
    if (name == "KUBERNETES_SERVICE_HOST") return host;
    if (name == "KUBERNETES_SERVICE_PORT") return port;
    return std::nullopt;
  };
}

TEST(InCluster, ReadsServiceAccountDirectory) {
  TempDir dir;
  dir.write("token", "  sa-token-1\n");
  dir.write("ca.crt", "PEM");
  dir.write("namespace", "gpu-system\n");
  const ClusterConfig config = load_in_cluster_config({dir.path(), env_with("10.96.0.1", "443")});
  EXPECT_EQ(config.server, "https://10.96.0.1:443");
  EXPECT_EQ(config.bearer_token, "sa-token-1");
  EXPECT_EQ(config.token_file, (dir.path() / "token").string());
  EXPECT_EQ(config.ca_file, (dir.path() / "ca.crt").string());
  EXPECT_EQ(config.namespace_name, "gpu-system");
  EXPECT_NE(config.source.find("in-cluster"), std::string::npos);
}

TEST(InCluster, Ipv6HostIsBracketedAndNamespaceDefaults) {
  TempDir dir;
  dir.write("token", "t");
  dir.write("ca.crt", "PEM");
  const ClusterConfig config = load_in_cluster_config({dir.path(), env_with("fd00::1", "6443")});
  EXPECT_EQ(config.server, "https://[fd00::1]:6443");
  EXPECT_EQ(config.namespace_name, "default");
}

TEST(InCluster, Errors) {
  TempDir dir;
  dir.write("ca.crt", "PEM");
  EXPECT_FALSE(in_cluster_environment_present(env_with("", "443")));
  EXPECT_TRUE(in_cluster_environment_present(env_with("h", "443")));
  try {
    (void)load_in_cluster_config({dir.path(), env_with("h", "")});
    FAIL() << "expected an error";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("KUBERNETES_SERVICE_PORT must be defined"),
              std::string::npos);
  }
  try {
    (void)load_in_cluster_config({dir.path(), env_with("h", "443")});
    FAIL() << "expected an error";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("token"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace gpushare::apiclient
