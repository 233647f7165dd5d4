#pragma once
// Consolidation's families (docs/operations.md, "Metrics"): registered only when consolidation
// runs (--consolidate plan or evict, live mode). Thread-safe (prometheus-cpp's series are).

#include <string_view>

#include "gpushare/metrics/metric_registry.h"

namespace gpushare::consolidation {

class ConsolidationMetrics {
 public:
  explicit ConsolidationMetrics(metrics::MetricRegistry& registry);

  // The plan now: its moves and the GPUs it would free (0 and 0 without one).
  void set_plan(int moves, int gpus_freed);
  // A move's stage: "attempted" (its eviction accepted), "done" (the replacement bound on the
  // planned GPU), "aborted" (the plan stopped at it).
  void count_move(std::string_view result);
  // Eviction calls by answer: "evicted", "refused" (429), "gone" (404), "changed" (409),
  // "error".
  void count_eviction(std::string_view result);
  void count_gpus_freed(int gpus);
  // A hold on the planned GPU for the replacement pod: "created", "honoured" (the replacement
  // bound on the held GPU), "expired" (no replacement bound in time), "released" (ended
  // otherwise: the replacement bound elsewhere, the plan stopped, leadership lost); and how many
  // are in force now.
  void count_hold(std::string_view event);
  void set_holds(int holds);

 private:
  prometheus::Gauge& planned_moves_;
  prometheus::Gauge& planned_gpus_freed_;
  metrics::Series<prometheus::Counter> moves_;
  metrics::Series<prometheus::Counter> evictions_;
  prometheus::Counter& gpus_freed_;
  metrics::Series<prometheus::Counter> holds_;
  prometheus::Gauge& holds_in_force_;
};

}  // namespace gpushare::consolidation
