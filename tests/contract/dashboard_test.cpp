// deploy/monitoring: the Grafana dashboard is valid JSON and the alert rules valid YAML, and every
// gpushare_* metric their queries name is one the extender exports, as read from a real /metrics
// scrape (after requests that give every family samples); every gpushare:* series they read is
// recorded by the reserved-vs-used rules. promtool checks the PromQL itself
// (tests/monitoring/check_monitoring.sh).

#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "contract/extender_fixture.h"
#include "gpushare/sync/leader_metrics.h"
#include "gpushare/sync/sync_metrics.h"

namespace gpushare::testing {
namespace {

const std::string kMonitoring = std::string(GPUSHARE_SOURCE_DIR) + "/deploy/monitoring";

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// Metric families by name -> type, from the # TYPE lines, plus the names of all samples.
struct Exported {
  std::map<std::string, std::string> families;
  std::set<std::string> samples;
};

Exported scrape_exported_metrics() {
  ExtenderUnderTest extender(cluster_list(
      {node_object("n1", 2, 32), pod_object("pending", "uid-pending", 5),
       pod_object("big", "uid-big", 64), pod_object("held", "uid-held", 10, "n1", 0)}));
  auto args = [](const std::string& name, const std::string& uid) {
    Json pod = pod_object(name, uid, name == "big" ? 64 : 5);
    return Json{{"Pod", pod}, {"NodeNames", Json::array({"n1"})}};
  };
  extender.post("filter", args("pending", "uid-pending"));
  extender.post("filter", args("big", "uid-big"));  // a rejection, with its reason
  extender.post("prioritize", args("pending", "uid-pending"));
  extender.post("bind", Json{{"PodName", "pending"},
                             {"PodNamespace", "default"},
                             {"PodUID", "uid-pending"},
                             {"Node", "n1"}});
  extender.post(
      "bind",
      Json{
          {"PodName", "nobody"}, {"PodNamespace", "default"}, {"PodUID", "uid-x"}, {"Node", "n1"}});
  extender.post("preempt", std::string("{}"));
  extender.inspect();
  // Sync series come from live mode's ClusterSync; feed them as it does.
  sync::SyncMetrics sync_metrics(extender.metrics());
  sync_metrics.count_watch_restart("pods");
  sync_metrics.count_relist("pods");
  sync_metrics.set_last_sync(1'700'000'000);
  // And the leader-election series, as a --leader-elect replica's collector adds them.
  extender.metrics().add_collector(sync::leader_election_collector([] {
    return sync::LeaderElectionState{
        .leader = true, .acquisitions = 1, .lost = 0, .failed_attempts = 0};
  }));

  auto res = extender.client().Get("/metrics");
  EXPECT_TRUE(res && res->status == 200);
  Exported exported;
  if (!res) return exported;
  std::istringstream lines(res->body);
  const std::regex type_line(R"(^# TYPE ([a-zA-Z_:][a-zA-Z0-9_:]*) ([a-z]+)$)");
  const std::regex sample_line(R"(^([a-zA-Z_:][a-zA-Z0-9_:]*)[{ ])");
  std::smatch match;
  for (std::string line; std::getline(lines, line);) {
    if (std::regex_match(line, match, type_line)) {
      exported.families[match[1]] = match[2];
    } else if (!line.starts_with("#") && std::regex_search(line, match, sample_line)) {
      exported.samples.insert(match[1]);
    }
  }
  return exported;
}

const Exported& exported() {
  static const Exported metrics = scrape_exported_metrics();
  return metrics;
}

// gpushare_* names in a PromQL expression; histogram series suffixes map to their family.
std::set<std::string> metric_names(const std::string& expr) {
  std::set<std::string> names;
  const std::regex name(R"(gpushare_[a-z_]+)");
  for (auto it = std::sregex_iterator(expr.begin(), expr.end(), name); it != std::sregex_iterator();
       ++it) {
    std::string metric = it->str();
    for (const std::string suffix : {"_bucket", "_sum", "_count"}) {
      if (!metric.ends_with(suffix)) continue;
      const std::string base = metric.substr(0, metric.size() - suffix.size());
      auto family = exported().families.find(base);
      if (family != exported().families.end() && family->second == "histogram") metric = base;
    }
    names.insert(metric);
  }
  return names;
}

// Parentheses, brackets and braces nest and quotes close: catches most hand-editing slips.
bool balanced(const std::string& expr) {
  std::string stack;
  char quote = 0;
  for (char c : expr) {
    if (quote) {
      if (c == quote) quote = 0;
      continue;
    }
    if (c == '"' || c == '\'') {
      quote = c;
    } else if (c == '(' || c == '[' || c == '{') {
      stack.push_back(c);
    } else if (c == ')' || c == ']' || c == '}') {
      const char open = c == ')' ? '(' : c == ']' ? '[' : '{';
      if (stack.empty() || stack.back() != open) return false;
      stack.pop_back();
    }
  }
  return stack.empty() && !quote;
}

void collect_exprs(const Json& value, std::vector<std::string>& out) {
  if (value.is_object()) {
    for (const auto& [key, child] : value.items()) {
      if ((key == "expr" || key == "definition") && child.is_string()) {
        out.push_back(child.get<std::string>());
      } else if (key == "query" && child.is_string()) {
        out.push_back(child.get<std::string>());
      } else {
        collect_exprs(child, out);
      }
    }
  } else if (value.is_array()) {
    for (const Json& child : value) collect_exprs(child, out);
  }
}

// gpushare:* recording-rule names in a PromQL expression.
std::set<std::string> recorded_names(const std::string& expr) {
  std::set<std::string> names;
  const std::regex name(R"(gpushare:[a-z_]+:[a-z_]+)");
  for (auto it = std::sregex_iterator(expr.begin(), expr.end(), name); it != std::sregex_iterator();
       ++it) {
    names.insert(it->str());
  }
  return names;
}

// The reserved-vs-used rules: recorded name -> expression.
std::map<std::string, std::string> load_recording_rules() {
  const YAML::Node root = YAML::LoadFile(kMonitoring + "/gpushare-reserved-vs-used.yaml");
  std::map<std::string, std::string> rules;
  for (const auto& group : root["groups"]) {
    for (const auto& rule : group["rules"]) {
      if (rule["record"]) rules[rule["record"].as<std::string>()] = rule["expr"].as<std::string>();
    }
  }
  return rules;
}

Json load_dashboard() {
  const std::string text = read_file(kMonitoring + "/gpushare-dashboard.json");
  EXPECT_FALSE(text.empty()) << "deploy/monitoring/gpushare-dashboard.json missing";
  return Json::parse(text);  // throws, failing the test, on invalid JSON
}

std::vector<std::pair<std::string, std::string>> load_alert_rules() {
  const YAML::Node root = YAML::LoadFile(kMonitoring + "/gpushare-alerts.yaml");
  std::vector<std::pair<std::string, std::string>> rules;
  for (const auto& group : root["groups"]) {
    for (const auto& rule : group["rules"]) {
      rules.emplace_back(rule["alert"].as<std::string>(), rule["expr"].as<std::string>());
    }
  }
  return rules;
}

TEST(Monitoring, TheScrapeSeesEveryFamilyTheDashboardIsBuiltOn) {
  // Guards the test itself: if the scrape were empty, every check below would pass vacuously.
  for (const char* family :
       {"gpushare_requests_total", "gpushare_request_duration_seconds", "gpushare_binds_total",
        "gpushare_watch_restarts_total", "gpushare_gpu_memory_allocated",
        "gpushare_last_sync_timestamp_seconds"}) {
    EXPECT_TRUE(exported().families.count(family)) << family;
  }
  EXPECT_EQ(exported().families.at("gpushare_request_duration_seconds"), "histogram");
  EXPECT_TRUE(exported().samples.count("gpushare_request_duration_seconds_bucket"));
}

TEST(Monitoring, DashboardIsValidAndQueriesOnlyExportedMetrics) {
  const Json dashboard = load_dashboard();
  ASSERT_TRUE(dashboard.contains("panels"));
  EXPECT_FALSE(dashboard.value("uid", "").empty());
  EXPECT_FALSE(dashboard.value("title", "").empty());
  std::set<int> ids;
  std::set<std::string> used;
  for (const Json& panel : dashboard["panels"]) {
    ASSERT_TRUE(panel.contains("id") && panel.contains("type") && panel.contains("gridPos"))
        << panel.dump();
    EXPECT_TRUE(ids.insert(panel["id"].get<int>()).second) << "duplicate panel id " << panel["id"];
    if (panel["type"] == "row") continue;
    ASSERT_TRUE(panel.contains("targets")) << panel["title"];
    for (const Json& target : panel["targets"]) {
      const std::string expr = target.value("expr", "");
      SCOPED_TRACE(panel["title"].get<std::string>() + ": " + expr);
      EXPECT_FALSE(expr.empty());
      EXPECT_TRUE(balanced(expr));
      const auto names = metric_names(expr);
      EXPECT_FALSE(names.empty() && recorded_names(expr).empty()) << "queries no gpushare metric";
      used.insert(names.begin(), names.end());
    }
  }
  std::vector<std::string> exprs;
  collect_exprs(dashboard, exprs);
  for (const std::string& expr : exprs) {
    for (const std::string& name : metric_names(expr)) {
      EXPECT_TRUE(exported().families.count(name))
          << name << " in " << expr << " is not exported by /metrics";
    }
  }
  // What the dashboard must show.
  for (const char* family : {"gpushare_node_gpu_memory_allocated", "gpushare_gpu_memory_allocated",
                             "gpushare_request_duration_seconds", "gpushare_binds_total",
                             "gpushare_watch_restarts_total"}) {
    EXPECT_TRUE(used.count(family)) << "no panel shows " << family;
  }
  const auto recorded = load_recording_rules();
  std::set<std::string> read;
  for (const std::string& expr : exprs) {
    for (const std::string& name : recorded_names(expr)) {
      EXPECT_TRUE(recorded.count(name)) << name << " in " << expr << " is not recorded";
      read.insert(name);
    }
  }
  EXPECT_TRUE(read.count("gpushare:gpu_memory_used:mib")) << "no panel shows used memory per GPU";
  EXPECT_TRUE(read.count("gpushare:pod_gpu_memory_over_reservation:mib"))
      << "no panel shows pods over";
  bool percentiles = false;
  for (const std::string& expr : exprs) {
    percentiles |= expr.find("histogram_quantile") != std::string::npos &&
                   expr.find("by (le, verb)") != std::string::npos;
  }
  EXPECT_TRUE(percentiles) << "latency percentiles per verb";
}

TEST(Monitoring, AlertRulesAreValidAndQueryOnlyExportedMetrics) {
  const auto rules = load_alert_rules();
  ASSERT_FALSE(rules.empty());
  std::set<std::string> alerts;
  std::set<std::string> used;
  for (const auto& [alert, expr] : rules) {
    SCOPED_TRACE(alert + ": " + expr);
    EXPECT_TRUE(alerts.insert(alert).second) << "duplicate alert name";
    EXPECT_TRUE(balanced(expr));
    for (const std::string& name : metric_names(expr)) {
      EXPECT_TRUE(exported().families.count(name)) << name << " is not exported by /metrics";
      used.insert(name);
    }
  }
  const YAML::Node root = YAML::LoadFile(kMonitoring + "/gpushare-alerts.yaml");
  for (const auto& group : root["groups"]) {
    for (const auto& rule : group["rules"]) {
      const std::string alert = rule["alert"].as<std::string>();
      EXPECT_TRUE(rule["labels"]["severity"].IsScalar()) << alert;
      EXPECT_TRUE(rule["annotations"]["summary"].IsScalar()) << alert;
    }
  }
  // What the alerting rules must cover.
  EXPECT_TRUE(alerts.count("GpushareExtenderDown"));
  EXPECT_TRUE(alerts.count("GpushareExtenderNotReady"));
  EXPECT_TRUE(used.count("gpushare_binds_total")) << "bind failure rate";
  EXPECT_TRUE(used.count("gpushare_last_sync_timestamp_seconds")) << "sync age";
}

TEST(Monitoring, ReservedVsUsedRulesReadOnlyExportedMetrics) {
  const auto rules = load_recording_rules();
  ASSERT_FALSE(rules.empty());
  std::set<std::string> used;
  for (const auto& [record, expr] : rules) {
    SCOPED_TRACE(record + ": " + expr);
    EXPECT_TRUE(balanced(expr));
    for (const std::string& name : metric_names(expr)) {
      EXPECT_TRUE(exported().families.count(name)) << name << " is not exported by /metrics";
      used.insert(name);
    }
  }
  EXPECT_TRUE(used.count("gpushare_gpu_memory_allocated")) << "the per-GPU reservation";
}

TEST(Monitoring, MetricNameExtractionSeesThroughHistogramSuffixesOnly) {
  EXPECT_EQ(metric_names("rate(gpushare_request_duration_seconds_bucket[5m])"),
            std::set<std::string>{"gpushare_request_duration_seconds"});
  // A counter's name is kept as written: gpushare_binds_count would be wrong, and must show.
  EXPECT_EQ(metric_names("gpushare_binds_count + gpushare_pods"),
            (std::set<std::string>{"gpushare_binds_count", "gpushare_pods"}));
  EXPECT_FALSE(exported().families.count("gpushare_binds_count"));
  EXPECT_FALSE(balanced("sum(rate(x[5m])"));
}

}  // namespace
}  // namespace gpushare::testing
