// What live mode's list/watch reports (SyncMetrics): the known resources start at 0, counts
// and gauges land in their resource's series, and a kind of configuration mistake absent from
// a report loses its series.

#include "gpushare/sync/sync_metrics.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <string>

#include "gpushare/metrics/metric_registry.h"

namespace gpushare::sync {
namespace {

bool has_line(const std::string& text, const std::string& line) {
  return text.find("\n" + line + "\n") != std::string::npos;
}

TEST(SyncMetrics, TheKnownResourcesStartAtZero) {
  metrics::MetricRegistry registry;
  SyncMetrics sync(registry);
  const std::string text = registry.render();
  for (const char* resource : {"nodes", "pods", "configmaps"}) {
    EXPECT_TRUE(
        has_line(text, fmt::format("gpushare_watch_restarts_total{{resource=\"{}\"}} 0", resource)))
        << text;
    EXPECT_TRUE(
        has_line(text, fmt::format("gpushare_relists_total{{resource=\"{}\"}} 0", resource)))
        << text;
  }
  EXPECT_TRUE(has_line(text, "gpushare_last_sync_timestamp_seconds 0")) << text;
  // Live mode only: absent until a sync sets it.
  EXPECT_EQ(text.find("gpushare_sync_failing_seconds"), std::string::npos) << text;
}

TEST(SyncMetrics, CountsAndGaugesLandInTheirResourcesSeries) {
  metrics::MetricRegistry registry;
  SyncMetrics sync(registry);
  sync.count_relist("pods");
  sync.count_relist("pods");
  sync.count_watch_restart("nodes");
  sync.set_sync_failing("configmaps", 12);
  sync.set_last_sync(1234);
  const std::string text = registry.render();
  EXPECT_TRUE(has_line(text, "gpushare_relists_total{resource=\"pods\"} 2")) << text;
  EXPECT_TRUE(has_line(text, "gpushare_relists_total{resource=\"nodes\"} 0")) << text;
  EXPECT_TRUE(has_line(text, "gpushare_watch_restarts_total{resource=\"nodes\"} 1")) << text;
  EXPECT_TRUE(has_line(text, "gpushare_sync_failing_seconds{resource=\"configmaps\"} 12")) << text;
  EXPECT_TRUE(has_line(text, "gpushare_last_sync_timestamp_seconds 1234")) << text;
}

TEST(SyncMetrics, AKindOfMistakeNoLongerReportedLosesItsSeries) {
  metrics::MetricRegistry registry;
  SyncMetrics sync(registry);
  sync.set_config_warnings({{"kind-a", 2}, {"kind-b", 1}});
  std::string text = registry.render();
  EXPECT_TRUE(has_line(text, "gpushare_config_warnings{kind=\"kind-a\"} 2")) << text;
  EXPECT_TRUE(has_line(text, "gpushare_config_warnings{kind=\"kind-b\"} 1")) << text;
  sync.set_config_warnings({{"kind-b", 3}});
  text = registry.render();
  EXPECT_EQ(text.find("kind=\"kind-a\""), std::string::npos) << text;
  EXPECT_TRUE(has_line(text, "gpushare_config_warnings{kind=\"kind-b\"} 3")) << text;
}

}  // namespace
}  // namespace gpushare::sync
