#pragma once
// Settling a reservation from a fresh read of its pod (PodBinder::read_back): the one
// translation of a read-back into ledger evidence, used by bind (after a call with no answer,
// or before a retry) and by live mode's housekeeping (reservations the watch never confirmed).

#include <cstdint>
#include <string>
#include <string_view>

#include "gpushare/core/cluster_model.h"
#include "gpushare/core/reservation_ledger.h"
#include "gpushare/service/pod_binder.h"

namespace gpushare::service {

struct Settlement {
  core::ReservationOutcome outcome = core::ReservationOutcome::kNone;
  std::string what;  // for the log line, naming the pod; empty when nothing changed
};

// Call under the model store's exclusive lock; log `what` after releasing it. `read_sent_ns`:
// when the read was sent (a pending pod proves nothing while an unanswered bind may land).
Settlement apply_read_back(core::ClusterModel& model, core::ReservationLedger& ledger,
                           const PodBinder::ReadBack& read, std::string_view uid,
                           std::int64_t token, std::int64_t read_sent_ns, std::int64_t now_ns);

// Logs `what` (a confirmation at info, anything else at warning); call without the lock.
void log_settlement(const Settlement& settlement);

}  // namespace gpushare::service
