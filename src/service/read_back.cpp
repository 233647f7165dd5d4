#include "gpushare/service/read_back.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "gpushare/kube/pod_info.h"

namespace gpushare::service {

Settlement apply_read_back(core::ClusterModel& model, core::ReservationLedger& ledger,
                           const PodBinder::ReadBack& read, std::string_view uid,
                           std::int64_t token, std::int64_t read_sent_ns, std::int64_t now_ns) {
  const core::Reservation* reservation = ledger.find(uid);
  if (reservation == nullptr || reservation->reserved_ns != token) return {};
  const std::string pod = reservation->pod_key;
  using Result = PodBinder::ReadBack::Result;
  if (read.result == Result::kFailed) {
    ledger.read_back_failed(uid, now_ns);
    return {
        core::ReservationOutcome::kKept,
        fmt::format(
            "reservation of pod {} (uid {}) kept: reading the pod back failed ({}); will try again",
            pod, uid, read.error)};
  }
  core::PodEvidence evidence;
  evidence.uid = std::string(uid);
  evidence.kind = core::PodEvidence::Kind::kGone;
  if (read.result == Result::kFound && read.pod) evidence = kube::evidence_of(*read.pod, uid);
  const core::ReservationOutcome outcome =
      ledger.observe(model, evidence, core::EvidenceSource::kReadBack, token, read_sent_ns);
  switch (outcome) {
    case core::ReservationOutcome::kConfirmed:
      return {outcome,
              fmt::format(
                  "reservation of pod {} (uid {}) confirmed: the pod read back is bound to node {}",
                  pod, uid, evidence.bound ? evidence.bound->node : "?")};
    case core::ReservationOutcome::kReleased:
      return {
          outcome,
          fmt::format("reservation of pod {} (uid {}) released: the pod read back is {}", pod, uid,
                      evidence.kind == core::PodEvidence::Kind::kGone
                          ? "gone (deleted, finished or re-created)"
                          : "not bound (the bind did not land)")};
    case core::ReservationOutcome::kKept:
      if (const core::Reservation* held = ledger.find(uid);
          held != nullptr && held->state == core::ReservationState::kUnresolved &&
          evidence.kind == core::PodEvidence::Kind::kPending) {
        return {
            outcome,
            fmt::format("reservation of pod {} (uid {}) kept: the pod read back is not bound, but "
                        "the bind call that had no answer may still be applied; reading it back "
                        "again in {:.1f} s",
                        pod, uid, static_cast<double>(held->next_check_ns - now_ns) / 1e9)};
      }
      break;
    case core::ReservationOutcome::kNone:
      break;
  }
  return {outcome, {}};
}

void log_settlement(const Settlement& settlement) {
  if (settlement.what.empty()) return;
  if (settlement.outcome == core::ReservationOutcome::kConfirmed) {
    spdlog::info("{}", settlement.what);
  } else {
    spdlog::warn("{}", settlement.what);
  }
}

}  // namespace gpushare::service
