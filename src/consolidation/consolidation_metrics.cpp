#include "gpushare/consolidation/consolidation_metrics.h"

namespace gpushare::consolidation {

ConsolidationMetrics::ConsolidationMetrics(metrics::MetricRegistry& registry)
    : planned_moves_(registry
                         .add(prometheus::BuildGauge(), "gpushare_consolidation_planned_moves",
                              "Pods the current consolidation plan moves (0: no plan).")
                         .Add({})),
      planned_gpus_freed_(registry
                              .add(prometheus::BuildGauge(),
                                   "gpushare_consolidation_planned_gpus_freed",
                                   "Whole GPUs the current consolidation plan frees.")
                              .Add({})),
      moves_(registry.add(prometheus::BuildCounter(), "gpushare_consolidation_moves_total",
                          "Consolidation moves by stage: attempted (evicted), done (the "
                          "replacement bound on the planned GPU), aborted."),
             {"result"}),
      evictions_(registry.add(prometheus::BuildCounter(), "gpushare_consolidation_evictions_total",
                              "Eviction calls made by consolidation, by answer."),
                 {"result"}),
      gpus_freed_(registry
                      .add(prometheus::BuildCounter(), "gpushare_consolidation_gpus_freed_total",
                           "GPUs left wholly free by completed consolidation moves.")
                      .Add({})),
      holds_(registry.add(prometheus::BuildCounter(), "gpushare_consolidation_holds_total",
                          "Holds of the planned GPU's memory for a moved pod's replacement, by "
                          "event: created, honoured, expired, released."),
             {"event"}),
      holds_in_force_(registry
                          .add(prometheus::BuildGauge(), "gpushare_consolidation_holds",
                               "Holds of GPU memory for a moved pod's replacement in force now.")
                          .Add({})) {
  // Known label values start at 0, so that increase() sees the first event.
  for (std::string_view result : {"attempted", "done", "aborted"}) moves_.at({result});
  for (std::string_view result : {"evicted", "refused", "gone", "changed", "error"})
    evictions_.at({result});
  for (std::string_view event : {"created", "honoured", "expired", "released"}) holds_.at({event});
}

void ConsolidationMetrics::set_plan(int moves, int gpus_freed) {
  planned_moves_.Set(moves);
  planned_gpus_freed_.Set(gpus_freed);
}

void ConsolidationMetrics::count_move(std::string_view result) {
  moves_.at({result}).Increment();
}

void ConsolidationMetrics::count_eviction(std::string_view result) {
  evictions_.at({result}).Increment();
}

void ConsolidationMetrics::count_gpus_freed(int gpus) {
  if (gpus > 0) gpus_freed_.Increment(gpus);
}

void ConsolidationMetrics::count_hold(std::string_view event) {
  holds_.at({event}).Increment();
}

void ConsolidationMetrics::set_holds(int holds) {
  holds_in_force_.Set(holds);
}

}  // namespace gpushare::consolidation
