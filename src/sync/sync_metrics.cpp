#include "gpushare/sync/sync_metrics.h"

#include "gpushare/service/config_warnings.h"

namespace gpushare::sync {

SyncMetrics::SyncMetrics(metrics::MetricRegistry& registry)
    : watch_restarts_(registry.add(prometheus::BuildCounter(), "gpushare_watch_restarts_total",
                                   "API-server watches restarted."),
                      {"resource"}),
      relists_(registry.add(prometheus::BuildCounter(), "gpushare_relists_total",
                            "Full relists from the API server."),
               {"resource"}),
      // Live mode only: absent until the sync sets it.
      sync_failing_(registry.add(prometheus::BuildGauge(), "gpushare_sync_failing_seconds",
                                 "Seconds the list/watch of a resource has been failing without "
                                 "a success (0: in step).",
                                 /*written_when_empty=*/false),
                    {"resource"}),
      last_sync_(registry
                     .add(prometheus::BuildGauge(), "gpushare_last_sync_timestamp_seconds",
                          "Unix time of the last complete sync with the API server (0: none "
                          "yet, or standalone).")
                     .Add({})),
      config_warnings_(registry.add(prometheus::BuildGauge(), "gpushare_config_warnings",
                                    "Mistakes standing in objects the extender reads "
                                    "(unhealthy-gpu ConfigMaps), by kind; /inspect's "
                                    "configWarnings names them.")) {
  // Known label values start at 0, so that increase() and the alerts on it see the first event.
  for (std::string_view resource : {"nodes", "pods", "configmaps"}) {
    watch_restarts_.at({resource});
    relists_.at({resource});
  }
  set_config_warnings(service::ConfigWarnings().count_by_kind());
}

void SyncMetrics::count_watch_restart(std::string_view resource) {
  watch_restarts_.at({resource}).Increment();
}

void SyncMetrics::count_relist(std::string_view resource) {
  relists_.at({resource}).Increment();
}

void SyncMetrics::set_sync_failing(std::string_view resource, std::int64_t seconds) {
  sync_failing_.at({resource}).Set(static_cast<double>(seconds));
}

void SyncMetrics::set_last_sync(std::int64_t unix_seconds) {
  last_sync_.Set(static_cast<double>(unix_seconds));
}

void SyncMetrics::set_config_warnings(const std::map<std::string, std::size_t>& by_kind) {
  std::lock_guard lock(mutex_);
  auto& series = config_warning_series_;
  // A kind absent from `by_kind` has no series.
  for (auto it = series.begin(); it != series.end();) {
    if (by_kind.contains(it->first)) {
      ++it;
    } else {
      config_warnings_.Remove(it->second);
      it = series.erase(it);
    }
  }
  for (const auto& [kind, count] : by_kind) {
    auto [it, added] = series.try_emplace(kind, nullptr);
    if (added) it->second = &config_warnings_.Add({{"kind", kind}});
    it->second->Set(static_cast<double>(count));
  }
}

}  // namespace gpushare::sync
