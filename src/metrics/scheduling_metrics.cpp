#include "gpushare/metrics/scheduling_metrics.h"

namespace gpushare::metrics {

SchedulingMetrics::SchedulingMetrics(MetricRegistry& registry)
    : filter_rejections_(
          registry.add(prometheus::BuildCounter(), "gpushare_filter_rejections_total",
                       "Nodes rejected by filter, by reason."),
          {"reason"}),
      binds_(registry.add(prometheus::BuildCounter(), "gpushare_binds_total",
                          "Bind calls by outcome."),
             {"outcome"}),
      reservations_ended_(
          registry.add(prometheus::BuildCounter(), "gpushare_reservations_ended_total",
                       "Bind reservations ended, by outcome (confirmed, released) and the "
                       "evidence that ended them."),
          {"outcome", "evidence"}) {
  // Known label values start at 0, so that increase() and the alerts on it see the first event.
  for (std::string_view outcome : {"confirmed", "released"}) {
    for (std::string_view evidence : {"bind_call", "watch", "list", "read_back"}) {
      reservations_ended_.at({outcome, evidence});
    }
  }
  reservations_ended_.keep_label_order(registry);
}

void SchedulingMetrics::count_filter_rejection(std::string_view kind, std::uint64_t count) {
  filter_rejections_.at({kind}).Increment(static_cast<double>(count));
}

void SchedulingMetrics::count_bind(std::string_view outcome) {
  binds_.at({outcome}).Increment();
}

void SchedulingMetrics::count_reservation_end(core::ReservationOutcome outcome,
                                              std::string_view evidence) {
  if (outcome == core::ReservationOutcome::kConfirmed)
    reservations_ended_.at({"confirmed", evidence}).Increment();
  if (outcome == core::ReservationOutcome::kReleased)
    reservations_ended_.at({"released", evidence}).Increment();
}

}  // namespace gpushare::metrics
