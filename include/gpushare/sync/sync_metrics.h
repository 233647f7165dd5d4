#pragma once
// What live mode's list/watch reports: watch restarts, relists, how long a resource has been
// failing, the last complete sync, and the configuration mistakes found in what it read.
// Constructed in both modes by the extender's main, so that dashboards and alerts find the
// families in standalone mode too (at 0).

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <string_view>

#include "gpushare/metrics/metric_registry.h"

namespace gpushare::sync {

class SyncMetrics {
 public:
  explicit SyncMetrics(metrics::MetricRegistry& registry);

  void count_watch_restart(std::string_view resource);
  void count_relist(std::string_view resource);
  // Seconds each reflector's list/watch has been failing without a success (0: healthy).
  void set_sync_failing(std::string_view resource, std::int64_t seconds);
  void set_last_sync(std::int64_t unix_seconds);
  // Configuration mistakes standing now, by kind (ConfigWarnings::count_by_kind); set on change.
  void set_config_warnings(const std::map<std::string, std::size_t>& by_kind);

 private:
  metrics::Series<prometheus::Counter> watch_restarts_;
  metrics::Series<prometheus::Counter> relists_;
  metrics::Series<prometheus::Gauge> sync_failing_;
  prometheus::Gauge& last_sync_;
  prometheus::Family<prometheus::Gauge>& config_warnings_;
  std::mutex mutex_;  // guards config_warning_series_
  std::map<std::string, prometheus::Gauge*> config_warning_series_;
};

}  // namespace gpushare::sync
