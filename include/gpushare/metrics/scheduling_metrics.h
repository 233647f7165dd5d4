#pragma once
// What the scheduling verbs and the reservation ledger count: nodes filter rejected, bind
// outcomes, reservations ended. The service and the sync (which ends reservations on what the
// API server shows) each construct one on the same registry: they count into the same series.

#include <cstdint>
#include <string_view>

#include "gpushare/core/reservation_ledger.h"
#include "gpushare/metrics/metric_registry.h"

namespace gpushare::metrics {

class SchedulingMetrics {
 public:
  explicit SchedulingMetrics(MetricRegistry& registry);

  // `count` nodes rejected by filter, by FitStatus kind (a small fixed set).
  void count_filter_rejection(std::string_view kind, std::uint64_t count = 1);
  // A bind's outcome: success, no_fit, unknown_node, pod_not_found, api_error, bad_request...
  void count_bind(std::string_view outcome);
  // A reservation that ended (kConfirmed or kReleased; others are not counted), by the evidence
  // that ended it: bind_call, watch, list, read_back.
  void count_reservation_end(core::ReservationOutcome outcome, std::string_view evidence);

 private:
  Series<prometheus::Counter> filter_rejections_;
  Series<prometheus::Counter> binds_;
  Series<prometheus::Counter> reservations_ended_;
};

}  // namespace gpushare::metrics
