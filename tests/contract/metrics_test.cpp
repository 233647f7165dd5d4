// /metrics over real HTTP: the text exposition format parses, names follow Prometheus
// conventions, and the model's gauges say what the sample cluster holds.

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cctype>
#include <charconv>
#include <cmath>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "contract/extender_fixture.h"
#include "gpushare/consolidation/consolidation_metrics.h"
#include "gpushare/core/cluster_model.h"
#include "gpushare/http/request_metrics.h"
#include "gpushare/kube/dra_objects.h"
#include "gpushare/metrics/metric_registry.h"
#include "gpushare/metrics/model_metrics.h"
#include "gpushare/metrics/scheduling_metrics.h"
#include "gpushare/sync/leader_metrics.h"
#include "gpushare/sync/sync_metrics.h"

namespace gpushare::testing {
namespace {

// Every component's families on one registry, as the extender's main (live mode) has them.
struct AllMetrics {
  metrics::MetricRegistry registry;
  http::RequestMetrics requests{registry};
  metrics::SchedulingMetrics scheduling{registry};
  sync::SyncMetrics sync{registry};
  sync::LeaderElectionState leader;
  bool leader_elect = false;

  // What a --leader-elect replica's collector reports from now on.
  void set_leader_election(sync::LeaderElectionState state) {
    leader = state;
    if (!leader_elect)
      registry.add_collector(sync::leader_election_collector([this] { return leader; }));
    leader_elect = true;
  }
  std::string render(const metrics::ModelGauges* gauges = nullptr) const {
    if (gauges == nullptr) return registry.render();
    return registry.render([gauges](std::vector<prometheus::MetricFamily>& out) {
      metrics::collect_model(out, *gauges);
    });
  }
};

using Labels = std::map<std::string, std::string>;

struct Sample {
  std::string name;  // as written, e.g. x_bucket
  Labels labels;
  double value = 0;
};

struct Family {
  std::string type;
  std::string help;
  bool has_help = false;
  std::vector<Sample> samples;
};

// A strict reader of the Prometheus text format 0.0.4: anything it cannot place is an error.
struct Exposition {
  std::map<std::string, Family> families;
  std::vector<std::string> order;  // family names as declared
  std::vector<std::string> errors;

  const Family* family(const std::string& name) const {
    auto it = families.find(name);
    return it == families.end() ? nullptr : &it->second;
  }
  // The value of the sample `name` with exactly these labels, or nullopt.
  std::optional<double> value(const std::string& family_name, const std::string& sample_name,
                              const Labels& labels = {}) const {
    const Family* f = family(family_name);
    if (f == nullptr) return std::nullopt;
    for (const auto& s : f->samples) {
      if (s.name == sample_name && s.labels == labels) return s.value;
    }
    return std::nullopt;
  }
  std::optional<double> value(const std::string& name, const Labels& labels = {}) const {
    return value(name, name, labels);
  }
};

bool is_name_start(char c) {
  return std::isalpha(static_cast<unsigned char>(c)) || c == '_' || c == ':';
}
bool is_name_char(char c) {
  return is_name_start(c) || std::isdigit(static_cast<unsigned char>(c));
}

std::optional<double> parse_value(std::string_view text) {
  if (text == "+Inf") return INFINITY;
  if (text == "-Inf") return -INFINITY;
  if (text == "NaN") return NAN;
  double value = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || ptr != text.data() + text.size()) return std::nullopt;
  return value;
}

Exposition parse_exposition(std::string_view text) {
  Exposition out;
  std::size_t line_no = 0;
  auto fail = [&](std::string_view line, std::string_view why) {
    out.errors.push_back("line " + std::to_string(line_no) + " (" + std::string(line) +
                         "): " + std::string(why));
  };
  while (!text.empty()) {
    const auto nl = text.find('\n');
    if (nl == std::string_view::npos) {
      fail(text, "last line not terminated by a newline");
      break;
    }
    const std::string_view line = text.substr(0, nl);
    text.remove_prefix(nl + 1);
    ++line_no;
    if (line.empty()) continue;
    if (line.starts_with("# HELP ") || line.starts_with("# TYPE ")) {
      const bool help = line[2] == 'H';
      const std::string_view rest = line.substr(7);
      const auto space = rest.find(' ');
      if (space == std::string_view::npos) {
        fail(line, "no text after the name");
        continue;
      }
      const std::string name(rest.substr(0, space));
      const std::string value(rest.substr(space + 1));
      Family& f = out.families[name];
      if (f.type.empty() && !f.has_help) out.order.push_back(name);
      if (help) {
        if (f.has_help) fail(line, "second HELP for " + name);
        f.has_help = true;
        f.help = value;
      } else {
        if (!f.type.empty()) fail(line, "second TYPE for " + name);
        if (!f.samples.empty()) fail(line, "TYPE after samples of " + name);
        static const std::set<std::string> types{"counter", "gauge", "histogram", "summary",
                                                 "untyped"};
        if (!types.contains(value)) fail(line, "unknown type " + value);
        f.type = value;
      }
      continue;
    }
    if (line.front() == '#') continue;  // other comments are allowed

    Sample sample;
    std::size_t i = 0;
    if (!is_name_start(line[0])) {
      fail(line, "bad metric name");
      continue;
    }
    while (i < line.size() && is_name_char(line[i])) ++i;
    sample.name = std::string(line.substr(0, i));
    bool ok = true;
    if (i < line.size() && line[i] == '{') {
      ++i;
      while (ok && i < line.size() && line[i] != '}') {
        const std::size_t start = i;
        if (!(std::isalpha(static_cast<unsigned char>(line[i])) || line[i] == '_')) ok = false;
        while (i < line.size() &&
               (std::isalnum(static_cast<unsigned char>(line[i])) || line[i] == '_'))
          ++i;
        const std::string label(line.substr(start, i - start));
        if (!ok || i + 1 >= line.size() || line[i] != '=' || line[i + 1] != '"') {
          ok = false;
          break;
        }
        i += 2;
        std::string value;
        while (i < line.size() && line[i] != '"') {
          if (line[i] == '\\' && i + 1 < line.size()) {
            const char e = line[i + 1];
            if (e == 'n') {
              value += '\n';
            } else if (e == '\\' || e == '"') {
              value += e;
            } else {
              ok = false;
            }
            i += 2;
          } else {
            value += line[i++];
          }
        }
        if (i >= line.size()) {
          ok = false;
          break;
        }
        ++i;  // closing quote
        if (sample.labels.contains(label)) ok = false;
        sample.labels[label] = value;
        if (i < line.size() && line[i] == ',') ++i;
      }
      if (i >= line.size() || line[i] != '}') ok = false;
      ++i;
    }
    if (!ok || i >= line.size() || line[i] != ' ') {
      fail(line, "bad labels or missing value");
      continue;
    }
    std::string_view value_text = line.substr(i + 1);
    if (auto space = value_text.find(' '); space != std::string_view::npos) {
      value_text = value_text.substr(0, space);  // a timestamp may follow
    }
    const auto value = parse_value(value_text);
    if (!value) {
      fail(line, "bad value");
      continue;
    }
    sample.value = *value;

    // The family: the sample's own name, or a histogram's base name for its suffixed series.
    std::string family_name = sample.name;
    if (!out.families.contains(family_name) || out.families[family_name].type.empty()) {
      for (std::string_view suffix : {"_bucket", "_sum", "_count"}) {
        if (sample.name.ends_with(suffix)) {
          const std::string base = sample.name.substr(0, sample.name.size() - suffix.size());
          auto it = out.families.find(base);
          if (it != out.families.end() && it->second.type == "histogram") family_name = base;
        }
      }
    }
    auto it = out.families.find(family_name);
    if (it == out.families.end() || it->second.type.empty()) {
      fail(line, "sample before its TYPE");
      continue;
    }
    if (family_name != out.order.back()) fail(line, "sample not grouped with its family");
    it->second.samples.push_back(std::move(sample));
  }
  return out;
}

// One row of docs/operations.md's metrics table: a documented family, its type and label names.
struct DocumentedMetric {
  std::string name;
  std::string type;
  std::set<std::string> labels;
  bool conditional = false;  // only with --leader-elect, or only in live mode
};

std::vector<std::string> backticked(std::string_view text) {
  std::vector<std::string> out;
  for (auto open = text.find('`'); open != std::string_view::npos; open = text.find('`')) {
    const auto close = text.find('`', open + 1);
    if (close == std::string_view::npos) break;
    out.emplace_back(text.substr(open + 1, close - open - 1));
    text.remove_prefix(close + 1);
  }
  return out;
}

// The table under "## Metrics" (| metric | type | labels | meaning |): what dashboards, alerts and
// operators were told exists, so a renamed or retyped family fails here.
std::vector<DocumentedMetric> documented_metrics() {
  std::ifstream file(std::string(GPUSHARE_SOURCE_DIR) + "/docs/operations.md");
  std::string line;
  bool in_section = false;
  std::vector<DocumentedMetric> out;
  while (std::getline(file, line)) {
    if (line.starts_with("## ")) in_section = line == "## Metrics";
    if (!in_section || !line.starts_with("| `gpushare_")) continue;
    std::vector<std::string> cells;
    std::stringstream row(line.substr(1));
    for (std::string cell; std::getline(row, cell, '|');) cells.push_back(cell);
    if (cells.size() < 4) continue;
    std::string type = cells[1];
    std::erase(type, ' ');
    const auto labels = backticked(cells[2]);
    const bool conditional = cells[3].find("`--leader-elect` only") != std::string::npos ||
                             cells[3].starts_with(" live mode");
    for (const auto& name : backticked(cells[0])) {
      out.push_back({name, type, {labels.begin(), labels.end()}, conditional});
    }
  }
  return out;
}

// Checks `e` against the documented table: each family present (unless conditional and
// `conditional_optional`), with its documented TYPE and exactly its documented label names.
void expect_documented(const Exposition& e, bool conditional_optional) {
  const auto documented = documented_metrics();
  ASSERT_GE(documented.size(), 30u) << "the table in docs/operations.md was not found";
  for (const auto& metric : documented) {
    SCOPED_TRACE(metric.name);
    const Family* f = e.family(metric.name);
    if (f == nullptr && metric.conditional && conditional_optional) continue;
    ASSERT_NE(f, nullptr) << "documented but not rendered";
    EXPECT_EQ(f->type, metric.type);
    EXPECT_FALSE(f->samples.empty());
    for (const auto& sample : f->samples) {
      std::set<std::string> keys;
      for (const auto& [key, value] : sample.labels) {
        if (key != "le") keys.insert(key);
      }
      EXPECT_EQ(keys, metric.labels) << sample.name;
    }
  }
}

Json sample_cluster() {
  return standalone::read_cluster_file(std::string(GPUSHARE_SOURCE_DIR) +
                                       "/deploy/samples/cluster.yaml");
}

Json pending_pod(const Json& cluster, const std::string& name) {
  for (const auto& item : cluster["items"]) {
    if (item["kind"] == "Pod" && item["metadata"]["name"] == name) return item;
  }
  return nullptr;
}

struct Scrape {
  int status = 0;
  std::string content_type;
  std::string body;
};

Scrape scrape(const ExtenderUnderTest& extender) {
  auto result = extender.client().Get("/metrics");
  if (!result) return {};
  return {result->status, result->get_header_value("Content-Type"), result->body};
}

// Exercises every verb so that counters and histograms have series.
void drive_traffic(const ExtenderUnderTest& extender, const Json& cluster) {
  const Json pod = pending_pod(cluster, "demo-pending");
  const Json args = {{"Pod", pod},
                     {"Nodes", nullptr},
                     {"NodeNames", {"gpu-node-a", "gpu-node-b", "gpu-node-c", "cpu-node-a"}}};
  ASSERT_EQ(extender.post("filter", args).first, 200);
  ASSERT_EQ(extender.post("prioritize", args).first, 200);
  ASSERT_EQ(extender
                .post("bind", Json{{"PodName", "demo-pending"},
                                   {"PodNamespace", "default"},
                                   {"PodUID", "3f1c2a9e-0000-4000-8000-000000000010"},
                                   {"Node", "gpu-node-a"}})
                .first,
            200);
  ASSERT_EQ(extender.post("filter", std::string("{not json")).first, 400);
}

TEST(Metrics, ExpositionParsesAndFollowsNamingConventions) {
  const Json cluster = sample_cluster();
  ExtenderUnderTest extender(cluster);
  drive_traffic(extender, cluster);
  const Scrape s = scrape(extender);
  ASSERT_EQ(s.status, 200);
  EXPECT_EQ(s.content_type, "text/plain; version=0.0.4");
  const Exposition e = parse_exposition(s.body);
  for (const auto& error : e.errors) ADD_FAILURE() << error;
  ASSERT_FALSE(e.families.empty());
  for (const auto& [name, family] : e.families) {
    SCOPED_TRACE(name);
    EXPECT_TRUE(name.starts_with("gpushare_"));
    EXPECT_TRUE(family.has_help);
    EXPECT_FALSE(family.help.empty());
    EXPECT_FALSE(family.type.empty());
    if (family.type == "counter") {
      EXPECT_TRUE(name.ends_with("_total"));
    } else {
      EXPECT_FALSE(name.ends_with("_total")) << "_total is for counters";
    }
    if (family.type == "histogram") {
      EXPECT_TRUE(name.ends_with("_seconds"));
    }
    // No two samples of one family with the same name and labels.
    std::set<std::pair<std::string, Labels>> seen;
    for (const auto& sample : family.samples) {
      EXPECT_TRUE(seen.emplace(sample.name, sample.labels).second) << sample.name;
    }
  }
  // The families operators rely on (docs/operations.md), by name and type.
  const std::map<std::string, std::string> required{
      {"gpushare_requests_total", "counter"},
      {"gpushare_request_duration_seconds", "histogram"},
      {"gpushare_filter_rejections_total", "counter"},
      {"gpushare_binds_total", "counter"},
      {"gpushare_watch_restarts_total", "counter"},
      {"gpushare_relists_total", "counter"},
      {"gpushare_last_sync_timestamp_seconds", "gauge"},
      {"gpushare_ready", "gauge"},
      {"gpushare_assumed_pods", "gauge"},
      {"gpushare_pods", "gauge"},
      {"gpushare_nodes", "gauge"},
      {"gpushare_gpu_memory_capacity", "gauge"},
      {"gpushare_gpu_memory_allocated", "gauge"},
      {"gpushare_node_gpu_memory_capacity", "gauge"},
      {"gpushare_node_gpu_memory_allocated", "gauge"},
      {"gpushare_build_info", "gauge"},
      {"gpushare_http_connections", "gauge"},
      {"gpushare_http_connections_waiting", "gauge"},
      {"gpushare_http_connection_limit", "gauge"},
      {"gpushare_http_body_bytes", "gauge"},
      {"gpushare_http_parser_bytes", "gauge"},
  };
  for (const auto& [name, type] : required) {
    const Family* f = e.family(name);
    ASSERT_NE(f, nullptr) << name;
    EXPECT_EQ(f->type, type) << name;
  }
  expect_documented(e, /*conditional_optional=*/true);
  EXPECT_EQ(e.value("gpushare_requests_total", {{"verb", "filter"}, {"code", "200"}}), 1);
  EXPECT_EQ(e.value("gpushare_requests_total", {{"verb", "filter"}, {"code", "400"}}), 1);
  EXPECT_EQ(e.value("gpushare_requests_total", {{"verb", "bind"}, {"code", "200"}}), 1);
  EXPECT_EQ(e.value("gpushare_binds_total", {{"outcome", "success"}}), 1);
  EXPECT_EQ(e.value("gpushare_ready", Labels{}), 1);  // standalone: ready at once
  EXPECT_EQ(e.family("gpushare_leader"), nullptr) << "leader series only with --leader-elect";
  // The filter's parser, kept 10 s after it.
  EXPECT_GT(e.value("gpushare_http_parser_bytes", Labels{}), 0);
  EXPECT_EQ(e.value("gpushare_http_connection_limit", Labels{}), 4096);  // --max-connections
  EXPECT_GE(e.value("gpushare_http_connections", Labels{}), 1);          // this scrape's own
  // cpu-node-a has no GPU memory; gpu-node-b cannot fit 6 more on either GPU? It can (32-24=8
  // on GPU0), so the only rejection is the CPU node.
  double rejections = 0;
  for (const auto& sample : e.family("gpushare_filter_rejections_total")->samples)
    rejections += sample.value;
  EXPECT_EQ(rejections, 1);
}

TEST(Metrics, HistogramBucketsAreCumulativeAndEndAtCount) {
  const Json cluster = sample_cluster();
  ExtenderUnderTest extender(cluster);
  drive_traffic(extender, cluster);
  const Exposition e = parse_exposition(scrape(extender).body);
  ASSERT_TRUE(e.errors.empty());
  const Family* h = e.family("gpushare_request_duration_seconds");
  ASSERT_NE(h, nullptr);
  std::set<std::string> verbs;
  for (const auto& sample : h->samples) {
    ASSERT_TRUE(sample.labels.contains("verb"));
    verbs.insert(sample.labels.at("verb"));
  }
  EXPECT_EQ(verbs, (std::set<std::string>{"bind", "filter", "prioritize"}));
  for (const auto& verb : verbs) {
    SCOPED_TRACE(verb);
    std::vector<std::pair<double, double>> buckets;  // (le, count)
    for (const auto& sample : h->samples) {
      if (sample.name != "gpushare_request_duration_seconds_bucket" ||
          sample.labels.at("verb") != verb)
        continue;
      ASSERT_TRUE(sample.labels.contains("le"));
      ASSERT_EQ(sample.labels.size(), 2u);
      buckets.emplace_back(*parse_value(sample.labels.at("le")), sample.value);
    }
    ASSERT_GE(buckets.size(), 2u);
    for (std::size_t i = 1; i < buckets.size(); ++i) {
      EXPECT_LT(buckets[i - 1].first, buckets[i].first) << "le values ascend";
      EXPECT_LE(buckets[i - 1].second, buckets[i].second) << "buckets are cumulative";
    }
    EXPECT_TRUE(std::isinf(buckets.back().first));
    const auto count = e.value("gpushare_request_duration_seconds",
                               "gpushare_request_duration_seconds_count", {{"verb", verb}});
    ASSERT_TRUE(count.has_value());
    EXPECT_EQ(buckets.back().second, *count);
    EXPECT_GE(*count, 1);
    const auto sum = e.value("gpushare_request_duration_seconds",
                             "gpushare_request_duration_seconds_sum", {{"verb", verb}});
    ASSERT_TRUE(sum.has_value());
    EXPECT_GE(*sum, 0);
  }
}

TEST(Metrics, ModelGaugesDescribeTheSampleCluster) {
  ExtenderUnderTest extender(sample_cluster());
  const Exposition e = parse_exposition(scrape(extender).body);
  ASSERT_TRUE(e.errors.empty());
  auto gpu = [&](const std::string& name, const std::string& node, int index) {
    return e.value(name, {{"node", node}, {"gpu", std::to_string(index)}});
  };
  EXPECT_EQ(gpu("gpushare_gpu_memory_capacity", "gpu-node-a", 0), 16);
  EXPECT_EQ(gpu("gpushare_gpu_memory_allocated", "gpu-node-a", 0), 10);
  EXPECT_EQ(gpu("gpushare_gpu_memory_allocated", "gpu-node-a", 1), 14);
  EXPECT_EQ(gpu("gpushare_gpu_memory_allocated", "gpu-node-a", 2), 0);
  EXPECT_EQ(gpu("gpushare_gpu_memory_capacity", "gpu-node-b", 1), 32);
  EXPECT_EQ(gpu("gpushare_gpu_memory_allocated", "gpu-node-b", 0), 24);
  EXPECT_EQ(gpu("gpushare_gpu_memory_allocated", "gpu-node-c", 2), 8);
  // The finished pod batch-finished holds nothing on gpu-node-c GPU1.
  EXPECT_EQ(gpu("gpushare_gpu_memory_allocated", "gpu-node-c", 1), 0);
  EXPECT_EQ(gpu("gpushare_gpu_healthy", "gpu-node-c", 3), 0);
  EXPECT_EQ(gpu("gpushare_gpu_healthy", "gpu-node-c", 2), 1);

  EXPECT_EQ(e.value("gpushare_node_gpu_memory_capacity", {{"node", "gpu-node-c"}}), 128);
  EXPECT_EQ(e.value("gpushare_node_gpu_memory_allocated", {{"node", "gpu-node-a"}}), 24);
  EXPECT_EQ(e.value("gpushare_node_unschedulable", {{"node", "gpu-node-a"}}), 0);
  EXPECT_EQ(e.value("gpushare_cluster_gpu_memory_capacity"), 256);
  EXPECT_EQ(e.value("gpushare_cluster_gpu_memory_allocated"), 56);
  EXPECT_EQ(e.value("gpushare_nodes"), 3);
  EXPECT_EQ(e.value("gpushare_pods"), 4);
  EXPECT_EQ(e.value("gpushare_assumed_pods"), 0);
  EXPECT_EQ(e.value("gpushare_gpus", {{"healthy", "true"}}), 13);
  EXPECT_EQ(e.value("gpushare_gpus", {{"healthy", "false"}}), 1);

  // Bounded labels: exactly {node, gpu} per GPU series, one per GPU, no CPU-only node.
  const Family* per_gpu = e.family("gpushare_gpu_memory_allocated");
  ASSERT_NE(per_gpu, nullptr);
  EXPECT_EQ(per_gpu->samples.size(), 4u + 2u + 8u);
  for (const auto& sample : per_gpu->samples) {
    std::set<std::string> keys;
    for (const auto& [key, value] : sample.labels) keys.insert(key);
    EXPECT_EQ(keys, (std::set<std::string>{"node", "gpu"}));
    EXPECT_NE(sample.labels.at("node"), "cpu-node-a");
  }
  EXPECT_FALSE(e.value("gpushare_node_gpu_memory_capacity", {{"node", "cpu-node-a"}}).has_value());
}

TEST(Metrics, GaugesFollowBindsAndCordons) {
  Json cluster = cluster_list({node_object("n1", 2, 32), pod_object("p", "uid-p", 5)});
  cluster["items"][0]["spec"] = {{"unschedulable", true}};
  ExtenderUnderTest extender(cluster);
  Exposition before = parse_exposition(scrape(extender).body);
  ASSERT_TRUE(before.errors.empty());
  EXPECT_EQ(before.value("gpushare_node_unschedulable", {{"node", "n1"}}), 1);
  EXPECT_EQ(before.value("gpushare_cluster_gpu_memory_allocated"), 0);

  ASSERT_EQ(extender
                .post("bind", Json{{"PodName", "p"},
                                   {"PodNamespace", "default"},
                                   {"PodUID", "uid-p"},
                                   {"Node", "n1"}})
                .first,
            200);
  Exposition after = parse_exposition(scrape(extender).body);
  ASSERT_TRUE(after.errors.empty());
  EXPECT_EQ(after.value("gpushare_cluster_gpu_memory_allocated"), 5);
  EXPECT_EQ(after.value("gpushare_node_gpu_memory_allocated", {{"node", "n1"}}), 5);
  const double on_gpus =
      *after.value("gpushare_gpu_memory_allocated", {{"node", "n1"}, {"gpu", "0"}}) +
      *after.value("gpushare_gpu_memory_allocated", {{"node", "n1"}, {"gpu", "1"}});
  EXPECT_EQ(on_gpus, 5);
  EXPECT_EQ(after.value("gpushare_pods"), 1);
}

// A DRA claim holds memory of its GPU as a pod does: the allocated gauges (per GPU, per node,
// cluster) count it, and gpushare_dra_claim_allocations counts the allocation; it is no pod.
TEST(Metrics, AllocatedGaugesCountDraClaims) {
  core::ClusterModel model;
  core::NodeSpec node;
  node.name = "dra-1";
  model.upsert_node(node);
  model.update_dra([](core::DraState& dra) {
    dra.upsert_slice(kube::parse_resource_slice(R"({"apiVersion":"resource.k8s.io/v1",
      "kind":"ResourceSlice","metadata":{"name":"dra-1-gpus"},"spec":{"driver":"gpu.nvidia.com",
      "nodeName":"dra-1","pool":{"name":"dra-1","generation":1,"resourceSliceCount":1},
      "devices":[{"name":"gpu-0","allowMultipleAllocations":true,"capacity":{"memory":{"value":"40Gi"}}},
                 {"name":"gpu-1","allowMultipleAllocations":true,"capacity":{"memory":{"value":"40Gi"}}}]}})"));
    dra.upsert_claim(kube::parse_resource_claim(R"({"apiVersion":"resource.k8s.io/v1",
      "kind":"ResourceClaim","metadata":{"name":"notebook-gpu","namespace":"ml","uid":"c1"},
      "spec":{"devices":{"requests":[{"name":"gpu","exactly":{"deviceClassName":"gpu.nvidia.com",
        "capacity":{"requests":{"memory":"30Gi"}}}}]}},
      "status":{"allocation":{"devices":{"results":[{"request":"gpu","driver":"gpu.nvidia.com",
        "pool":"dra-1","device":"gpu-1","consumedCapacity":{"memory":"30Gi"}}]},
        "nodeSelector":{"nodeSelectorTerms":[{"matchFields":[{"key":"metadata.name",
          "operator":"In","values":["dra-1"]}]}]}},
        "reservedFor":[{"resource":"pods","name":"notebook","uid":"p1"}]}})"));
  });
  const metrics::ModelGauges gauges = metrics::model_gauges(model);
  AllMetrics metrics;
  const Exposition e = parse_exposition(metrics.render(&gauges));
  ASSERT_TRUE(e.errors.empty());
  EXPECT_EQ(e.value("gpushare_gpu_memory_capacity", {{"node", "dra-1"}, {"gpu", "1"}}), 40);
  EXPECT_EQ(e.value("gpushare_gpu_memory_allocated", {{"node", "dra-1"}, {"gpu", "0"}}), 0);
  EXPECT_EQ(e.value("gpushare_gpu_memory_allocated", {{"node", "dra-1"}, {"gpu", "1"}}), 30);
  EXPECT_EQ(e.value("gpushare_node_gpu_memory_allocated", {{"node", "dra-1"}}), 30);
  EXPECT_EQ(e.value("gpushare_cluster_gpu_memory_allocated"), 30);
  EXPECT_EQ(e.value("gpushare_cluster_gpu_memory_capacity"), 80);
  EXPECT_EQ(e.value("gpushare_dra_claim_allocations"), 1);
  EXPECT_EQ(e.value("gpushare_pods"), 0);
}

TEST(Metrics, LabelValuesAreEscaped) {
  AllMetrics metrics;
  metrics.scheduling.count_bind("odd\"outcome\\with\nnewline");
  metrics::ModelGauges gauges;
  metrics::NodeGauge node;
  node.name = "we\"ird\\node";
  node.capacity = 8;
  node.gpus.push_back({0, 8, 3, true});
  gauges.nodes.push_back(node);
  const Exposition e = parse_exposition(metrics.render(&gauges));
  for (const auto& error : e.errors) ADD_FAILURE() << error;
  EXPECT_EQ(e.value("gpushare_binds_total", {{"outcome", "odd\"outcome\\with\nnewline"}}), 1);
  EXPECT_EQ(e.value("gpushare_gpu_memory_allocated", {{"node", "we\"ird\\node"}, {"gpu", "0"}}), 3);
}

TEST(Metrics, LeaderElectionSeriesOnceSet) {
  AllMetrics metrics;
  metrics.set_leader_election({.leader = true, .acquisitions = 2, .lost = 1, .failed_attempts = 7});
  const Exposition e = parse_exposition(metrics.render());
  ASSERT_TRUE(e.errors.empty()) << e.errors.front();
  const std::map<std::string, std::pair<std::string, double>> expected{
      {"gpushare_leader", {"gauge", 1}},
      {"gpushare_leader_acquisitions_total", {"counter", 2}},
      {"gpushare_leader_lost_total", {"counter", 1}},
      {"gpushare_leader_failed_attempts_total", {"counter", 7}},
  };
  for (const auto& [name, type_value] : expected) {
    const Family* f = e.family(name);
    ASSERT_NE(f, nullptr) << name;
    EXPECT_EQ(f->type, type_value.first) << name;
    EXPECT_EQ(e.value(name, Labels{}), type_value.second) << name;
  }
  metrics.set_leader_election(
      {.leader = false, .acquisitions = 2, .lost = 2, .failed_attempts = 9});
  EXPECT_EQ(parse_exposition(metrics.render()).value("gpushare_leader", Labels{}), 0);
}

TEST(Metrics, EveryDocumentedFamilyIsRenderedWithItsTypeAndLabels) {
  AllMetrics metrics;
  metrics.requests.observe_request("filter", 200, 0.0002);
  metrics.scheduling.count_filter_rejection("no_gpus");
  metrics.scheduling.count_bind("success");
  metrics.sync.count_watch_restart("pods");
  metrics.sync.count_relist("nodes");
  metrics.scheduling.count_reservation_end(core::ReservationOutcome::kConfirmed, "watch");
  metrics.sync.set_sync_failing("pods", 3);
  metrics.set_leader_election({.leader = true, .acquisitions = 1, .lost = 0, .failed_attempts = 0});
  metrics.sync.set_config_warnings({{"unknown_key", 1}, {"bad_value", 0}});
  // Live mode with --consolidate only.
  consolidation::ConsolidationMetrics consolidation(metrics.registry);
  consolidation.set_plan(1, 1);
  consolidation.count_gpus_freed(1);
  metrics::ModelGauges gauges;
  gauges.nodes.push_back(
      {.name = "n1", .capacity = 16, .allocated = 4, .gpus = {{0, 16, 4, true}}});
  const Exposition e = parse_exposition(metrics.render(&gauges));
  for (const auto& error : e.errors) ADD_FAILURE() << error;
  expect_documented(e, /*conditional_optional=*/false);
  // And the other way round: nothing rendered that operators were not told about.
  std::set<std::string> names;
  for (const auto& metric : documented_metrics()) names.insert(metric.name);
  for (const auto& [name, family] : e.families)
    EXPECT_TRUE(names.contains(name)) << name << " is not documented";
  EXPECT_EQ(e.value("gpushare_sync_failing_seconds", {{"resource", "pods"}}), 3);
  EXPECT_EQ(e.value("gpushare_reservations_ended_total",
                    {{"outcome", "confirmed"}, {"evidence", "watch"}}),
            1);
  EXPECT_EQ(
      e.value("gpushare_reservations_ended_total", {{"outcome", "released"}, {"evidence", "list"}}),
      0);
  EXPECT_EQ(e.value("gpushare_config_warnings", {{"kind", "unknown_key"}}), 1);
  // A kind absent from the report loses its series.
  metrics.sync.set_config_warnings({{"bad_value", 2}});
  const Exposition after = parse_exposition(metrics.render());
  EXPECT_FALSE(after.value("gpushare_config_warnings", {{"kind", "unknown_key"}}).has_value());
  EXPECT_EQ(after.value("gpushare_config_warnings", {{"kind", "bad_value"}}), 2);
}

TEST(Metrics, ModelSeriesOfARemovedNodeDisappear) {
  AllMetrics metrics;
  metrics::ModelGauges gauges;
  gauges.nodes.push_back({.name = "a", .capacity = 8, .gpus = {{0, 8, 0, true}}});
  gauges.nodes.push_back({.name = "b", .capacity = 8, .gpus = {{0, 8, 0, true}}});
  EXPECT_TRUE(parse_exposition(metrics.render(&gauges))
                  .value("gpushare_gpu_memory_capacity", {{"node", "b"}, {"gpu", "0"}}));
  gauges.nodes.pop_back();
  const Exposition e = parse_exposition(metrics.render(&gauges));
  EXPECT_FALSE(e.value("gpushare_gpu_memory_capacity", {{"node", "b"}, {"gpu", "0"}}).has_value());
  EXPECT_FALSE(e.value("gpushare_node_gpu_memory_capacity", {{"node", "b"}}).has_value());
  EXPECT_EQ(e.value("gpushare_nodes"), 1);
}

TEST(Metrics, BucketBoundariesAreTheDocumentedOnes) {
  // Dashboards and alerts select `le` by its text; these are what the exposition writes.
  AllMetrics metrics;
  metrics.requests.observe_request("filter", 200, 0.0003);
  const std::string text = metrics.render();
  for (std::string_view le : {"0.0001", "0.00025", "0.0005", "0.001", "0.0025", "0.005", "0.01",
                              "0.025", "0.05", "0.1", "0.25", "0.5", "1", "5", "+Inf"}) {
    EXPECT_NE(text.find(fmt::format(
                  "gpushare_request_duration_seconds_bucket{{verb=\"filter\",le=\"{}\"}}", le)),
              std::string::npos)
        << le;
  }
}

TEST(Metrics, CountersAreSafeFromManyThreads) {
  // Run under TSan: counters, lazily created series and scrapes at once.
  AllMetrics metrics;
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&metrics, t] {
      for (int i = 0; i < 500; ++i) {
        metrics.requests.observe_request(i % 2 ? "filter" : "bind", 200 + t, 0.001);
        metrics.scheduling.count_filter_rejection(t % 2 ? "no_gpus" : "misconfigured");
        metrics.sync.set_config_warnings({{"bad_value", static_cast<std::size_t>(i % 3)}});
        if (i % 100 == 0) {
          EXPECT_FALSE(metrics.render().empty());
        }
      }
    });
  }
  for (auto& thread : threads) thread.join();
  const Exposition e = parse_exposition(metrics.render());
  double requests = 0;
  for (const auto& sample : e.family("gpushare_requests_total")->samples) requests += sample.value;
  EXPECT_EQ(requests, 2000);
}

TEST(Metrics, TextKeepsTheLabelOrderAndTheEmptyFamiliesOfBefore) {
  // prometheus-cpp sorts label names and leaves out families without series; people and tests
  // grep for the series as they were always written, and for the families of a fresh replica.
  AllMetrics metrics;
  const std::string fresh = metrics.render();
  EXPECT_NE(fresh.find("# TYPE gpushare_requests_total counter\n"), std::string::npos);
  EXPECT_NE(fresh.find("# TYPE gpushare_request_duration_seconds histogram\n"), std::string::npos);
  EXPECT_EQ(fresh.find("gpushare_sync_failing_seconds"), std::string::npos) << "live mode only";
  metrics.requests.observe_request("filter", 200, 0.001);
  metrics.scheduling.count_reservation_end(core::ReservationOutcome::kReleased, "watch");
  const std::string text = metrics.render();
  EXPECT_NE(text.find("gpushare_requests_total{verb=\"filter\",code=\"200\"} 1\n"),
            std::string::npos);
  EXPECT_NE(
      text.find("gpushare_reservations_ended_total{outcome=\"released\",evidence=\"watch\"} 1\n"),
      std::string::npos);
  EXPECT_NE(text.find("gpushare_build_info{version=\""), std::string::npos);
}

TEST(Metrics, ParserRejectsMalformedText) {
  // The checks above are only as good as this parser: make sure it can fail.
  EXPECT_FALSE(parse_exposition("gpushare_x 1\n").errors.empty());  // no TYPE
  EXPECT_FALSE(parse_exposition("# HELP a b\n# TYPE a gauge\na{x=\"1} 1\n").errors.empty());
  EXPECT_FALSE(parse_exposition("# HELP a b\n# TYPE a gauge\na one\n").errors.empty());
  EXPECT_FALSE(parse_exposition("# TYPE a gauge\n# TYPE a gauge\n").errors.empty());
  EXPECT_FALSE(parse_exposition("# HELP a b\n# TYPE a gauge\na 1").errors.empty());  // no newline
  EXPECT_TRUE(parse_exposition("# HELP a b\n# TYPE a gauge\na{x=\"q\\\"\"} 1\n").errors.empty());
}

}  // namespace
}  // namespace gpushare::testing
