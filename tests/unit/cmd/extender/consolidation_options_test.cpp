// The consolidation flags (docs/operations.md, "Consolidation"): their defaults, what parses,
// and the usage error each bad value gets: one line naming the flag.
#include <gtest/gtest.h>

#include <map>

#include "cmd/extender/options.h"

namespace gpushare::cmd::extender {
namespace {

using Action = ParsedOptions::Action;

ParsedOptions parse(std::vector<std::string> args) {
  return parse_options(args, [](const char*) { return std::optional<std::string>(); });
}

TEST(ConsolidationOptions, DefaultsAreOffSixAnHourEveryMinuteAndFiveMinutesToReplace) {
  const auto parsed = parse({"--kubeconfig", "k"});
  ASSERT_EQ(parsed.action, Action::kRun) << parsed.message;
  const Options& o = parsed.options;
  EXPECT_EQ(o.consolidate, "off");
  EXPECT_TRUE(o.consolidate_namespaces.empty());
  EXPECT_EQ(o.consolidate_max_moves_per_hour, 6);
  EXPECT_EQ(o.consolidate_interval, std::chrono::minutes(1));
  EXPECT_EQ(o.consolidate_replacement_timeout, std::chrono::minutes(5));
}

TEST(ConsolidationOptions, EveryFlagParses) {
  const auto parsed =
      parse({"--kubeconfig", "k", "--consolidate", "evict", "--consolidate-namespaces",
             "ml,batch-2,,ml", "--consolidate-max-moves-per-hour", "12", "--consolidate-interval",
             "90s", "--consolidate-replacement-timeout", "2m30s"});
  ASSERT_EQ(parsed.action, Action::kRun) << parsed.message;
  const Options& o = parsed.options;
  EXPECT_EQ(o.consolidate, "evict");
  // Empty names are skipped; a name given twice is kept as given.
  EXPECT_EQ(o.consolidate_namespaces, (std::vector<std::string>{"ml", "batch-2", "ml"}));
  EXPECT_EQ(o.consolidate_max_moves_per_hour, 12);
  EXPECT_EQ(o.consolidate_interval, std::chrono::seconds(90));
  EXPECT_EQ(o.consolidate_replacement_timeout, std::chrono::seconds(150));
  for (const char* mode : {"off", "plan", "evict"}) {
    const auto each = parse({"--kubeconfig", "k", "--consolidate", mode});
    ASSERT_EQ(each.action, Action::kRun) << mode << ": " << each.message;
    EXPECT_EQ(each.options.consolidate, mode);
  }
  // The smallest durations allowed.
  const auto least = parse({"--kubeconfig", "k", "--consolidate-interval", "1s",
                            "--consolidate-replacement-timeout", "1000ms"});
  ASSERT_EQ(least.action, Action::kRun) << least.message;
  EXPECT_EQ(least.options.consolidate_interval, std::chrono::seconds(1));
}

TEST(ConsolidationOptions, BadValuesGetAOneLineErrorNamingTheFlag) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--consolidate", "yes"}, "--consolidate"},
      {{"--consolidate", "Evict"}, "--consolidate"},
      {{"--consolidate", ""}, "--consolidate"},
      {{"--consolidate-max-moves-per-hour", "0"}, "--consolidate-max-moves-per-hour"},
      {{"--consolidate-max-moves-per-hour", "-3"}, "--consolidate-max-moves-per-hour"},
      {{"--consolidate-max-moves-per-hour", "10001"}, "--consolidate-max-moves-per-hour"},
      {{"--consolidate-max-moves-per-hour", "six"}, "--consolidate-max-moves-per-hour"},
      {{"--consolidate-interval", "soon"}, "--consolidate-interval"},
      {{"--consolidate-interval", "60"}, "--consolidate-interval"},  // no unit
      {{"--consolidate-interval", "500ms"}, "--consolidate-interval"},
      {{"--consolidate-interval", "0s"}, "--consolidate-interval"},
      {{"--consolidate-replacement-timeout", "-5m"}, "--consolidate-replacement-timeout"},
      {{"--consolidate-replacement-timeout", "999ms"}, "--consolidate-replacement-timeout"},
      {{"--consolidate-namespaces", "ml,Prod"}, "--consolidate-namespaces"},
      {{"--consolidate-namespaces", "a_b"}, "--consolidate-namespaces"},
      {{"--consolidate-namespaces", std::string(64, 'a')}, "--consolidate-namespaces"},
  };
  for (const auto& [flags, flag] : cases) {
    std::vector<std::string> args = {"--kubeconfig", "k"};
    args.insert(args.end(), flags.begin(), flags.end());
    const auto parsed = parse(args);
    EXPECT_EQ(parsed.action, Action::kExitUsage) << flags[0] << " " << flags[1];
    EXPECT_NE(parsed.message.find(flag), std::string::npos)
        << flags[0] << " " << flags[1] << ": " << parsed.message;
    EXPECT_EQ(parsed.message.find('\n'), std::string::npos) << parsed.message;
  }
}

TEST(ConsolidationOptions, ConsolidationNeedsALiveCluster) {
  for (const char* mode : {"plan", "evict"}) {
    const auto parsed = parse({"--cluster-file", "c.yaml", "--consolidate", mode});
    EXPECT_EQ(parsed.action, Action::kExitUsage) << mode;
    EXPECT_NE(parsed.message.find("--consolidate needs a live cluster"), std::string::npos)
        << parsed.message;
  }
  EXPECT_EQ(parse({"--cluster-file", "c.yaml", "--consolidate", "off"}).action, Action::kRun);
}

}  // namespace
}  // namespace gpushare::cmd::extender
