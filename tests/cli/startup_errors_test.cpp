// Start-up mistakes a new user makes, as the programs report them: the file or address, the
// operating system's reason and a hint, a non-zero exit, never an abort.

#include <fmt/format.h>

#include <fstream>

#include "cli/binaries.h"

namespace gpushare::testing::cli_test {
namespace {

const std::string kSample = std::string(GPUSHARE_SOURCE_DIR) + "/deploy/samples/cluster.yaml";

TEST(ExtenderStartup, APortInUseNamesTheReasonAndTheFlag) {
  const std::string extender = binary("gpushare-extender");
  if (extender.empty()) GTEST_SKIP() << "gpushare-extender not built";
  SilentListener busy;
  const RunResult result = run_process(
      {extender, "--cluster-file", kSample, "--listen", fmt::format("127.0.0.1:{}", busy.port())});
  expect_clean_failure(result, 1);
  EXPECT_NE(seen(result).find(
                fmt::format("cannot listen on 127.0.0.1:{}: Address already in use; is another "
                            "gpushare-extender",
                            busy.port())),
            std::string::npos)
      << seen(result);
  EXPECT_NE(seen(result).find("--listen 127.0.0.1:PORT"), std::string::npos) << seen(result);
}

TEST(ExtenderStartup, AMissingOrUnreadableClusterFileIsNamed) {
  const std::string extender = binary("gpushare-extender");
  if (extender.empty()) GTEST_SKIP() << "gpushare-extender not built";
  RunResult result = run_process({extender, "--cluster-file", "/nonexistent/cluster.yaml"});
  expect_clean_failure(result, 1);
  EXPECT_NE(seen(result).find(
                "cannot read cluster file /nonexistent/cluster.yaml: No such file or directory"),
            std::string::npos)
      << seen(result);
  result = run_process({extender, "--cluster-file", GPUSHARE_SOURCE_DIR});
  expect_clean_failure(result, 1);
  EXPECT_NE(seen(result).find(
                fmt::format("cannot read cluster file {}: Is a directory", GPUSHARE_SOURCE_DIR)),
            std::string::npos)
      << seen(result);
}

TEST(ExtenderStartup, AMissingConfigFileIsNamed) {
  const std::string extender = binary("gpushare-extender");
  if (extender.empty()) GTEST_SKIP() << "gpushare-extender not built";
  const RunResult result = run_process({extender, "--config", "/nonexistent/gpushare.yaml"});
  expect_clean_failure(result, 2);
  EXPECT_NE(seen(result).find(
                "cannot read --config file /nonexistent/gpushare.yaml: No such file or directory"),
            std::string::npos)
      << seen(result);
}

TEST(ExtenderStartup, AMissingKubeconfigIsNamed) {
  const std::string extender = binary("gpushare-extender");
  if (extender.empty()) GTEST_SKIP() << "gpushare-extender not built";
  const RunResult result = run_process({extender, "--kubeconfig", "/nonexistent/kubeconfig"});
  expect_clean_failure(result, 1);
  EXPECT_NE(seen(result).find(
                "cannot read kubeconfig /nonexistent/kubeconfig: No such file or directory"),
            std::string::npos)
      << seen(result);
}

TEST(PluginStartup, AMissingKubeconfigIsNamedWithTheWayAround) {
  const std::string plugin = binary("kubectl-inspect-gpushare");
  if (plugin.empty()) GTEST_SKIP() << "kubectl-inspect-gpushare not built";
  const RunResult result = run_process({plugin, "--kubeconfig", "/nonexistent/kubeconfig"});
  expect_clean_failure(result, 1);
  EXPECT_NE(
      result.err.find("cannot read kubeconfig /nonexistent/kubeconfig: No such file or directory"),
      std::string::npos)
      << seen(result);
  EXPECT_NE(result.err.find("--extender"), std::string::npos) << seen(result);
  EXPECT_TRUE(result.out.empty()) << result.out;
}

TEST(SimStartup, AMisspeltPolicyListsTheValidOnes) {
  const std::string sim = binary("gpushare-sim");
  if (sim.empty()) GTEST_SKIP() << "gpushare-sim not built";
  const RunResult result =
      run_process({sim, "--nodes", "n.csv", "--pods", "p.csv", "--policy", "binpak"});
  ASSERT_TRUE(result.exit_code.has_value());
  EXPECT_NE(*result.exit_code, 0);
  EXPECT_LT(*result.exit_code, 128) << "killed by a signal: " << seen(result);
  EXPECT_NE(seen(result).find("unknown policy 'binpak' (valid: "), std::string::npos)
      << seen(result);
  for (const char* policy : {"binpack", "fgd-plus", "spread"}) {
    EXPECT_NE(seen(result).find(policy), std::string::npos) << policy << ": " << seen(result);
  }
}

TEST(FakeApiServerStartup, ABadSeedNamesTheFileAndTheProblem) {
  const std::string fake = binary("gpushare-fake-apiserver");
  if (fake.empty()) GTEST_SKIP() << "gpushare-fake-apiserver not built";
  TempDir dir;
  const std::string kubeconfig = (dir.path() / "fake.kubeconfig").string();
  auto seed_with = [&](const std::string& name, const std::string& text) {
    const auto path = dir.path() / name;
    std::ofstream(path) << text;
    return path.string();
  };
  struct Case {
    std::string seed;
    std::string expected;
  };
  const std::vector<Case> cases = {
      {"/nonexistent/seed.yaml",
       "--seed /nonexistent/seed.yaml: cannot read cluster file /nonexistent/seed.yaml: No such "
       "file or directory"},
      {seed_with("broken.yaml", "items: [\n  - kind: Node\n    metadata: {name: a\n"),
       "broken.yaml: cluster file "},
      {seed_with("not-a-list.yaml", "kind: Node\nmetadata:\n  name: a\n"),
       "not-a-list.yaml: not a v1 List: no items array"},
      {seed_with("deployment.yaml", "items:\n- kind: Deployment\n  metadata:\n    name: web\n"),
       "deployment.yaml: items[0]: kind \"Deployment\" is not served (Node, Pod, ConfigMap, "
       "Lease, ResourceSlice, ResourceClaim, ResourceClaimTemplate, DeviceClass, "
       "PodDisruptionBudget, Event)"},
      {seed_with(
           "twice.yaml",
           "items:\n- kind: Node\n  metadata: {name: a}\n- kind: Node\n  metadata: {name: a}\n"),
       "twice.yaml: items[1] (Node a): nodes \"a\" already exists"},
  };
  for (const Case& c : cases) {
    const RunResult result = run_process({fake, "--kubeconfig-out", kubeconfig, "--seed", c.seed});
    expect_clean_failure(result, 1);
    EXPECT_NE(result.err.find(c.expected), std::string::npos) << c.seed << ": " << seen(result);
  }
}

}  // namespace
}  // namespace gpushare::testing::cli_test
