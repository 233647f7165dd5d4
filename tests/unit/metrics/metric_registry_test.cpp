// The one registry /metrics serialises: families declared before their first series, one family
// per name however often it is registered, labels in the order a family asks for, scrape-time
// collectors in the order added, and Series' cached series.

#include "gpushare/metrics/metric_registry.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace gpushare::metrics {
namespace {

bool has_line(const std::string& text, const std::string& line) {
  return text.find("\n" + line + "\n") != std::string::npos;
}

TEST(MetricRegistry, AFamilyIsWrittenBeforeItsFirstSeriesUnlessAskedNotTo) {
  MetricRegistry registry;
  registry.add(prometheus::BuildCounter(), "test_declared_total", "Declared early.");
  registry.add(prometheus::BuildGauge(), "test_quiet", "Absent while empty.",
               /*written_when_empty=*/false);
  const std::string text = registry.render();
  EXPECT_TRUE(has_line(text, "# HELP test_declared_total Declared early.")) << text;
  EXPECT_TRUE(has_line(text, "# TYPE test_declared_total counter")) << text;
  EXPECT_EQ(text.find("test_quiet"), std::string::npos) << text;
}

TEST(MetricRegistry, RegisteringAFamilyTwiceYieldsTheSameFamily) {
  MetricRegistry registry;
  auto& first = registry.add(prometheus::BuildCounter(), "test_twice_total", "Twice.");
  auto& second = registry.add(prometheus::BuildCounter(), "test_twice_total", "Twice.");
  EXPECT_EQ(&first, &second);
  first.Add({}).Increment();
  second.Add({}).Increment();
  const std::string text = registry.render();
  EXPECT_TRUE(has_line(text, "test_twice_total 2")) << text;
  EXPECT_EQ(text.find("# TYPE test_twice_total"), text.rfind("# TYPE test_twice_total"));
}

TEST(MetricRegistry, LabelsAreWrittenInTheOrderTheFamilyAsksFor) {
  MetricRegistry registry;
  auto& family = registry.add(prometheus::BuildCounter(), "test_ordered_total", "Ordered.");
  family.Add({{"verb", "filter"}, {"code", "200"}}).Increment();
  EXPECT_TRUE(has_line(registry.render(), "test_ordered_total{code=\"200\",verb=\"filter\"} 1"));
  registry.keep_label_order("test_ordered_total", {"verb", "code"});
  EXPECT_TRUE(has_line(registry.render(), "test_ordered_total{verb=\"filter\",code=\"200\"} 1"));
}

TEST(MetricRegistry, BuildInfoIsAlwaysOne) {
  MetricRegistry registry;
  const std::string text = registry.render();
  const auto at = text.find("\ngpushare_build_info{version=\"");
  ASSERT_NE(at, std::string::npos) << text;
  const auto end = text.find('\n', at + 1);
  EXPECT_EQ(text.substr(end - 2, 2), " 1");
}

TEST(MetricRegistry, CollectorsRunOnEveryScrapeInOrderThenTheExtra) {
  MetricRegistry registry;
  std::vector<std::string> calls;
  int scrapes = 0;
  registry.add_collector([&](std::vector<prometheus::MetricFamily>& out) {
    calls.push_back("first");
    ++scrapes;
    ScrapeFamilies(out)
        .family("test_scraped", prometheus::MetricType::Gauge, "At scrape time.")
        .sample(scrapes, {{"node", "n1"}});
  });
  registry.add_collector(
      [&](std::vector<prometheus::MetricFamily>&) { calls.push_back("second"); });
  const ScrapeCollector extra = [&](std::vector<prometheus::MetricFamily>&) {
    calls.push_back("extra");
  };
  EXPECT_TRUE(has_line(registry.render(extra), "test_scraped{node=\"n1\"} 1"));
  EXPECT_TRUE(has_line(registry.render(), "test_scraped{node=\"n1\"} 2"));
  EXPECT_EQ(calls, (std::vector<std::string>{"first", "second", "extra", "first", "second"}));
}

TEST(Series, TheSameLabelValuesFindTheSameSeries) {
  MetricRegistry registry;
  Series<prometheus::Counter> series(
      registry.add(prometheus::BuildCounter(), "test_series_total", "By verb."), {"verb"});
  prometheus::Counter& filter = series.at({"filter"});
  EXPECT_EQ(&filter, &series.at({"filter"}));
  EXPECT_NE(&filter, &series.at({"bind"}));
  filter.Increment();
  const std::string text = registry.render();
  EXPECT_TRUE(has_line(text, "test_series_total{verb=\"filter\"} 1")) << text;
  EXPECT_TRUE(has_line(text, "test_series_total{verb=\"bind\"} 0")) << text;
}

TEST(Series, HistogramsTakeTheRequestDurationBuckets) {
  MetricRegistry registry;
  Series<prometheus::Histogram> series(
      registry.add(prometheus::BuildHistogram(), "test_seconds", "Durations."), {"verb"});
  series.at({"filter"}).Observe(0.0003);
  const std::string text = registry.render();
  EXPECT_TRUE(has_line(text, "test_seconds_bucket{verb=\"filter\",le=\"0.00025\"} 0")) << text;
  EXPECT_TRUE(has_line(text, "test_seconds_bucket{verb=\"filter\",le=\"0.0005\"} 1")) << text;
  EXPECT_TRUE(has_line(text, "test_seconds_count{verb=\"filter\"} 1")) << text;
}

}  // namespace
}  // namespace gpushare::metrics
