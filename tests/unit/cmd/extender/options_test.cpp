#include "cmd/extender/options.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>

#include "gpushare/standalone/standalone_cluster.h"

namespace gpushare::cmd::extender {
namespace {

using Action = ParsedOptions::Action;

ParsedOptions parse(std::vector<std::string> args, std::map<std::string, std::string> env = {}) {
  return parse_options(args, [env](const char* name) -> std::optional<std::string> {
    auto it = env.find(name);
    return it == env.end() ? std::nullopt : std::optional<std::string>(it->second);
  });
}

TEST(Options, DefaultsMatchTheProductSpec) {
  const auto parsed = parse({"--cluster-file", "c.yaml"});
  ASSERT_EQ(parsed.action, Action::kRun) << parsed.message;
  const Options& o = parsed.options;
  EXPECT_EQ(o.listen, "0.0.0.0:39999");
  EXPECT_EQ(o.listen_port(), 39999);
  EXPECT_EQ(o.policy, "fgd-plus");  // the spec's "binpack until benchmarks prove a better default"
  EXPECT_EQ(o.score_mapping, "rank");
  EXPECT_EQ(o.bind_mode, "binding");
  EXPECT_EQ(o.names.memory, "aliyun.com/gpu-mem");
  EXPECT_EQ(o.names.count, "aliyun.com/gpu-count");
  EXPECT_EQ(o.names.unhealthy_namespace, "kube-system");
  EXPECT_EQ(o.names.gpu_model_label, "nvidia.com/gpu.product");
  EXPECT_EQ(o.log_level, "info");
  EXPECT_EQ(o.log_format, "text");
  EXPECT_EQ(o.source, ClusterSource::kClusterFile);
  EXPECT_EQ(o.reservation_check_seconds, 30);
  EXPECT_EQ(o.bind_landing_seconds, 60);
  EXPECT_EQ(o.sync_stale_seconds, 30);
}

// Reservations do not expire by time: --assume-ttl-seconds still parses (manifests that set it
// keep working) and is only remembered so that main can warn about it.
TEST(Options, TheAssumeTtlFlagIsAcceptedAndTheNewReservationFlagsParse) {
  const auto parsed = parse({"--cluster-file", "c.yaml", "--assume-ttl-seconds", "120",
                             "--reservation-check-seconds", "5", "--sync-stale-seconds", "60",
                             "--bind-landing-seconds", "90"});
  ASSERT_EQ(parsed.action, Action::kRun) << parsed.message;
  EXPECT_EQ(parsed.options.assume_ttl_seconds, 120);
  EXPECT_EQ(parsed.options.reservation_check_seconds, 5);
  EXPECT_EQ(parsed.options.sync_stale_seconds, 60);
  EXPECT_EQ(parsed.options.bind_landing_seconds, 90);
  EXPECT_NE(parse({"--cluster-file", "c.yaml", "--sync-stale-seconds", "0"}).action, Action::kRun);
  EXPECT_NE(parse({"--cluster-file", "c.yaml", "--bind-landing-seconds", "0"}).action,
            Action::kRun);
}

TEST(Options, ExactlyOneClusterSource) {
  auto parsed = parse({});
  EXPECT_EQ(parsed.action, Action::kExitUsage);
  EXPECT_NE(parsed.message.find("--cluster-file"), std::string::npos);
  EXPECT_NE(parsed.message.find("--kubeconfig"), std::string::npos);
  EXPECT_EQ(parsed.message.find('\n'), std::string::npos);
  parsed = parse({"--cluster-file", "a", "--kubeconfig", "b"});
  EXPECT_EQ(parsed.action, Action::kExitUsage);
  parsed = parse({}, {{"KUBECONFIG", "/k"}});
  ASSERT_EQ(parsed.action, Action::kRun);
  EXPECT_EQ(parsed.options.source, ClusterSource::kKubeconfig);
  EXPECT_EQ(parsed.options.kubeconfig, "/k");
  parsed = parse({}, {{"KUBERNETES_SERVICE_HOST", "10.0.0.1"}, {"KUBERNETES_SERVICE_PORT", "443"}});
  EXPECT_EQ(parsed.options.source, ClusterSource::kInCluster);
}

TEST(Options, BadValuesNameTheFlag) {
  for (const auto& args : std::vector<std::vector<std::string>>{
           {"--cluster-file", "c", "--policy", "magic"},
           {"--cluster-file", "c", "--bind-mode", "yolo"},
           {"--cluster-file", "c", "--log-format", "xml"},
           {"--cluster-file", "c", "--listen", "nowhere"},
           {"--cluster-file", "c", "--frobnicate"},
           {"--cluster-file", "c", "--gpu-model-label", "gpu product"},
           {"--cluster-file", "c", "--gpu-model-label", "a/b/c"},
           {"--cluster-file", "c", "--tls-cert-file", "x.pem"}}) {
    const auto parsed = parse(args);
    EXPECT_EQ(parsed.action, Action::kExitUsage) << args[2];
    const std::string flag = args[2].substr(0, args[2].find('='));
    EXPECT_NE(parsed.message.find(flag.substr(2)), std::string::npos) << parsed.message;
    EXPECT_EQ(parsed.message.find('\n'), std::string::npos) << parsed.message;
  }
}

TEST(Options, TheGpuModelLabelIsConfigurable) {
  const auto parsed =
      parse({"--cluster-file", "c", "--gpu-model-label", "example.com/accelerator"});
  ASSERT_EQ(parsed.action, Action::kRun) << parsed.message;
  EXPECT_EQ(parsed.options.names.gpu_model_label, "example.com/accelerator");
  EXPECT_NE(parse({"--help"}).message.find("--gpu-model-label"), std::string::npos);
}

TEST(Options, HelpAndVersion) {
  auto parsed = parse({"--help"});
  EXPECT_EQ(parsed.action, Action::kExitSuccess);
  EXPECT_NE(parsed.message.find("--bind-mode"), std::string::npos);
  parsed = parse({"--version"});
  EXPECT_EQ(parsed.action, Action::kExitSuccess);
  EXPECT_EQ(parsed.message.rfind("gpushare ", 0), 0u);
}

TEST(Options, ConfigFileWithFlagsWinning) {
  const auto path = std::filesystem::temp_directory_path() / "gpushare-options-test.yaml";
  {
    std::ofstream out(path);
    out << "cluster-file: from-config.yaml\npolicy: spread\nlisten: 127.0.0.1:8080\nlog-format: "
           "json\n";
  }
  const auto parsed = parse({"--config", path.string(), "--policy", "binpack"});
  ASSERT_EQ(parsed.action, Action::kRun) << parsed.message;
  EXPECT_EQ(parsed.options.cluster_file, "from-config.yaml");
  EXPECT_EQ(parsed.options.policy, "binpack");
  EXPECT_EQ(parsed.options.listen_port(), 8080);
  EXPECT_EQ(parsed.options.log_format, "json");
  {
    std::ofstream out(path);
    out << "no-such-flag: 1\ncluster-file: x\n";
  }
  EXPECT_EQ(parse({"--config", path.string()}).action, Action::kExitUsage);
  std::filesystem::remove(path);
  EXPECT_EQ(parse({"--config", "/nonexistent.yaml"}).action, Action::kExitUsage);
}

TEST(Options, AnUnreadableConfigFileIsNamedWithTheReason) {
  auto parsed = parse({"--config", "/nonexistent/gpushare.yaml"});
  EXPECT_EQ(parsed.action, Action::kExitUsage);
  EXPECT_EQ(parsed.message,
            "cannot read --config file /nonexistent/gpushare.yaml: No such file or directory");
  parsed = parse({"--config", "/"});
  EXPECT_EQ(parsed.message, "cannot read --config file /: Is a directory");
  const auto path = std::filesystem::temp_directory_path() / "gpushare-options-bad-yaml.yaml";
  std::ofstream(path) << "policy: [unclosed\n";
  parsed = parse({"--config", path.string()});
  std::filesystem::remove(path);
  EXPECT_EQ(parsed.action, Action::kExitUsage);
  EXPECT_EQ(parsed.message.rfind("--config " + path.string() + ": YAML error at line", 0), 0u)
      << parsed.message;
}

TEST(Options, ApiStallWarningTakesAGoDuration) {
  EXPECT_EQ(parse({"--kubeconfig", "k"}).options.api_stall_warning, std::chrono::seconds(30));
  EXPECT_EQ(parse({"--kubeconfig", "k", "--api-stall-warning", "250ms"}).options.api_stall_warning,
            std::chrono::milliseconds(250));
  EXPECT_EQ(parse({"--kubeconfig", "k", "--api-stall-warning", "0"}).options.api_stall_warning,
            std::chrono::milliseconds(0));
  const auto bad = parse({"--kubeconfig", "k", "--api-stall-warning", "soon"});
  EXPECT_EQ(bad.action, Action::kExitUsage);
  EXPECT_NE(bad.message.find("--api-stall-warning"), std::string::npos) << bad.message;
}

TEST(Options, AMissingClusterFileIsNamedWithTheReason) {
  try {
    standalone::read_cluster_file("/nonexistent/cluster.yaml");
    FAIL() << "no error";
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(),
                 "cannot read cluster file /nonexistent/cluster.yaml: No such file or directory");
  }
}

}  // namespace
}  // namespace gpushare::cmd::extender
