// --leader-elect and the shutdown flags: kube-scheduler's names, defaults and rules.

#include <gtest/gtest.h>

#include <map>

#include "cmd/extender/options.h"

namespace gpushare::cmd::extender {
namespace {

using Action = ParsedOptions::Action;
using namespace std::chrono_literals;

ParsedOptions parse(std::vector<std::string> args) {
  return parse_options(args,
                       [](const char*) -> std::optional<std::string> { return std::nullopt; });
}

TEST(LeaderOptions, DefaultsAreKubeSchedulers) {
  const auto parsed = parse({"--kubeconfig", "k"});
  ASSERT_EQ(parsed.action, Action::kRun) << parsed.message;
  const Options& o = parsed.options;
  EXPECT_FALSE(o.leader_elect);
  EXPECT_EQ(o.leader_elect_lease_duration, 15s);
  EXPECT_EQ(o.leader_elect_renew_deadline, 10s);
  EXPECT_EQ(o.leader_elect_retry_period, 2s);
  EXPECT_EQ(o.leader_elect_resource_namespace, "kube-system");
  EXPECT_EQ(o.leader_elect_resource_name, "gpushare-extender");
  EXPECT_EQ(o.shutdown_grace_period, 20s);
}

TEST(LeaderOptions, FlagsAsKubeSchedulerSpellsThem) {
  const auto parsed =
      parse({"--kubeconfig", "k", "--leader-elect", "--leader-elect-lease-duration=4s",
             "--leader-elect-renew-deadline", "3s", "--leader-elect-retry-period", "500ms",
             "--leader-elect-resource-namespace", "gpu", "--leader-elect-resource-name", "x",
             "--shutdown-grace-period", "1m"});
  ASSERT_EQ(parsed.action, Action::kRun) << parsed.message;
  const Options& o = parsed.options;
  EXPECT_TRUE(o.leader_elect);
  EXPECT_EQ(o.leader_elect_lease_duration, 4s);
  EXPECT_EQ(o.leader_elect_renew_deadline, 3s);
  EXPECT_EQ(o.leader_elect_retry_period, 500ms);
  EXPECT_EQ(o.leader_elect_resource_namespace, "gpu");
  EXPECT_EQ(o.leader_elect_resource_name, "x");
  EXPECT_EQ(o.shutdown_grace_period, 60s);
  EXPECT_FALSE(parse({"--kubeconfig", "k", "--leader-elect=false"}).options.leader_elect);
}

TEST(LeaderOptions, ClientGosRulesAreEnforced) {
  const std::map<std::vector<std::string>, std::string> bad = {
      {{"--leader-elect", "--leader-elect-lease-duration", "10s"},
       "greater than --leader-elect-renew-deadline"},
      {{"--leader-elect", "--leader-elect-retry-period", "9s"},
       "1.2 x --leader-elect-retry-period"},
      {{"--leader-elect", "--leader-elect-lease-duration", "500ms", "--leader-elect-renew-deadline",
        "400ms", "--leader-elect-retry-period", "100ms"},
       "at least 1s"},
      {{"--leader-elect-lease-duration", "15"}, "bad duration"},
      {{"--leader-elect-retry-period", "-2s"}, "bad duration"},
      {{"--shutdown-grace-period", "soon"}, "--shutdown-grace-period"},
      {{"--leader-elect", "--leader-elect-resource-name", ""}, "must not be empty"},
  };
  for (const auto& [extra, message] : bad) {
    std::vector<std::string> args = {"--kubeconfig", "k"};
    args.insert(args.end(), extra.begin(), extra.end());
    const auto parsed = parse(args);
    EXPECT_EQ(parsed.action, Action::kExitUsage) << extra[0];
    EXPECT_NE(parsed.message.find(message), std::string::npos) << parsed.message;
  }
  // Standalone mode has nothing to elect a leader for.
  const auto parsed = parse({"--cluster-file", "c.yaml", "--leader-elect"});
  EXPECT_EQ(parsed.action, Action::kExitUsage);
  EXPECT_NE(parsed.message.find("--leader-elect"), std::string::npos);
}

TEST(LeaderOptions, GoDurations) {
  EXPECT_EQ(parse_go_duration("15s"), 15s);
  EXPECT_EQ(parse_go_duration("1m30s"), 90s);
  EXPECT_EQ(parse_go_duration("1.5s"), 1500ms);
  EXPECT_EQ(parse_go_duration("250ms"), 250ms);
  EXPECT_EQ(parse_go_duration("2h"), 7200s);
  EXPECT_EQ(parse_go_duration("0"), 0ms);
  EXPECT_EQ(parse_go_duration("1500000us"), 1500ms);
  for (const char* bad : {"", "15", "-1s", "1x", "s", "1..5s", "1s2"})
    EXPECT_FALSE(parse_go_duration(bad)) << bad;
}

}  // namespace
}  // namespace gpushare::cmd::extender
