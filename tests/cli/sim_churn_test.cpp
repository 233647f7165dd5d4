// gpushare-sim's time mode as a user runs it: the PAI task list and the deployed path.

#include <fmt/format.h>

#include "cli/binaries.h"

namespace gpushare::testing::cli_test {
namespace {

const std::string kSource = GPUSHARE_SOURCE_DIR;

std::vector<std::string> churn_args(const std::string& sim) {
  return {sim,
          "--churn",
          "--nodes",
          kSource + "/bench/data/openb/openb_node_list_all_node.csv",
          "--pods",
          kSource + "/bench/data/pai/task.csv",
          "--seeds",
          "1",
          "--max-lifetime",
          "3600",
          "--warmup",
          "600",
          "--duration",
          "1200",
          "--sample-every",
          "0",
          "--policy",
          "fgd-plus"};
}

TEST(SimChurnCli, TheDeployedPathRunsInTheTimeModeOnThePaiTrace) {
  const std::string sim = binary("gpushare-sim");
  if (sim.empty()) GTEST_SKIP() << "gpushare-sim not built";
  auto args = churn_args(sim);
  for (const char* arg : {"--scheduler-config", "", "--with-ideal"}) args.emplace_back(arg);
  args[args.size() - 2] = kSource + "/deploy/scheduler/kube-scheduler-config.yaml";
  const RunResult result = run_process(args, std::chrono::milliseconds(120000));
  ASSERT_TRUE(result.exit_code.has_value()) << "timed out: " << seen(result);
  ASSERT_EQ(*result.exit_code, 0) << seen(result);
  EXPECT_NE(result.out.find("PAI task list: 10000 tasks read; dropped 0 without both times, 0 "
                            "ending before they start"),
            std::string::npos)
      << result.out;
  EXPECT_NE(result.out.find("1523 nodes, 6212 GPUs; 10000 pods"), std::string::npos) << result.out;
  // One row for the deployed path, one for the policy alone on the same pods.
  EXPECT_NE(result.out.find("| fgd-plus@kube-scheduler-config load 100 % | 1 |"), std::string::npos)
      << result.out;
  EXPECT_NE(result.out.find("| fgd-plus-online load 100 % | 1 |"), std::string::npos) << result.out;
}

TEST(SimChurnCli, TheDeployedPathRefusesConsolidationAndDra) {
  const std::string sim = binary("gpushare-sim");
  if (sim.empty()) GTEST_SKIP() << "gpushare-sim not built";
  for (const auto& [flag, value, expected] :
       {std::tuple{"--consolidate", "0,0.02", "--consolidate runs with the policies alone"},
        std::tuple{"--dra", "", "--churn with --scheduler-config: not with --dra"}}) {
    auto args = churn_args(sim);
    args.emplace_back("--scheduler-config");
    args.emplace_back(kSource + "/deploy/scheduler/kube-scheduler-config.yaml");
    args.emplace_back(flag);
    if (*value != '\0') args.emplace_back(value);
    const RunResult result = run_process(args, std::chrono::milliseconds(60000));
    expect_clean_failure(result, 1);
    EXPECT_NE(seen(result).find(expected), std::string::npos) << seen(result);
  }
}

}  // namespace
}  // namespace gpushare::testing::cli_test
