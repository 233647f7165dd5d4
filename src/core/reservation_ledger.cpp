#include "gpushare/core/reservation_ledger.h"

#include <algorithm>

namespace gpushare::core {

std::string_view to_string(ReservationState state) {
  switch (state) {
    case ReservationState::kBinding:
      return "binding";
    case ReservationState::kAccepted:
      return "accepted";
    case ReservationState::kUnresolved:
      return "unresolved";
  }
  return "unknown";
}

bool ReservationLedger::reserve(ClusterModel& model, PodAllocation allocation,
                                std::int64_t now_ns) {
  if (model.find_pod(allocation.uid) != nullptr) return false;
  Reservation entry;
  entry.uid = allocation.uid;
  entry.pod_key = allocation.namespace_name + "/" + allocation.name;
  entry.node = allocation.node;
  entry.reserved_ns = now_ns;
  entry.state_since_ns = now_ns;
  allocation.assumed = true;
  allocation.assume_time_ns = now_ns;
  model.add_pod(std::move(allocation));
  std::string uid = entry.uid;
  entries_.insert_or_assign(std::move(uid), std::move(entry));
  return true;
}

Reservation* ReservationLedger::ours(std::string_view uid, std::int64_t token) {
  auto it = entries_.find(uid);
  if (it == entries_.end() || it->second.reserved_ns != token ||
      it->second.state != ReservationState::kBinding) {
    return nullptr;
  }
  return &it->second;
}

ReservationOutcome ReservationLedger::release(ClusterModel& model, std::string_view uid) {
  auto it = entries_.find(uid);
  if (it == entries_.end()) return ReservationOutcome::kNone;
  model.remove_pod(uid);
  entries_.erase(it);
  return ReservationOutcome::kReleased;
}

ReservationOutcome ReservationLedger::leave_binding(std::string_view uid, std::int64_t token,
                                                    ReservationState next, std::int64_t now_ns,
                                                    std::int64_t check_at_ns) {
  Reservation* entry = ours(uid, token);
  if (entry == nullptr) return ReservationOutcome::kNone;
  entry->state = next;
  entry->state_since_ns = now_ns;
  entry->next_check_ns = check_at_ns;
  return ReservationOutcome::kKept;
}

ReservationOutcome ReservationLedger::bind_accepted(ClusterModel&, std::string_view uid,
                                                    std::int64_t token, std::int64_t now_ns) {
  return leave_binding(uid, token, ReservationState::kAccepted, now_ns,
                       now_ns + timing_.check_after_ns);
}

ReservationOutcome ReservationLedger::bind_final(ClusterModel& model, std::string_view uid,
                                                 std::int64_t token) {
  if (ours(uid, token) == nullptr) return ReservationOutcome::kNone;
  const PodAllocation* held = model.find_pod(uid);
  if (held != nullptr) {
    PodAllocation bound = *held;
    bound.assumed = false;
    model.add_pod(std::move(bound));
  }
  entries_.erase(entries_.find(uid));
  return ReservationOutcome::kConfirmed;
}

ReservationOutcome ReservationLedger::bind_rejected(ClusterModel& model, std::string_view uid,
                                                    std::int64_t token) {
  if (ours(uid, token) == nullptr) return ReservationOutcome::kNone;
  return release(model, uid);
}

ReservationOutcome ReservationLedger::bind_unknown(ClusterModel&, std::string_view uid,
                                                   std::int64_t token, std::int64_t call_sent_ns,
                                                   std::int64_t now_ns) {
  const ReservationOutcome outcome =
      leave_binding(uid, token, ReservationState::kUnresolved, now_ns, now_ns);
  if (outcome == ReservationOutcome::kKept)
    entries_.find(uid)->second.unanswered_call_ns = call_sent_ns;
  return outcome;
}

ReservationOutcome ReservationLedger::observe(ClusterModel& model, const PodEvidence& evidence,
                                              EvidenceSource source, std::int64_t token,
                                              std::int64_t read_sent_ns) {
  auto it = entries_.find(evidence.uid);
  switch (evidence.kind) {
    case PodEvidence::Kind::kBound: {
      PodAllocation bound = *evidence.bound;
      bound.assumed = false;
      model.add_pod(std::move(bound));
      if (it == entries_.end()) return ReservationOutcome::kNone;
      entries_.erase(it);
      return ReservationOutcome::kConfirmed;
    }
    case PodEvidence::Kind::kGone:
      if (it == entries_.end()) {
        model.remove_pod(evidence.uid);
        return ReservationOutcome::kNone;
      }
      return release(model, evidence.uid);
    case PodEvidence::Kind::kPending:
      if (it == entries_.end()) {
        // An unreserved allocation for a pod that is not bound is stale.
        model.remove_pod(evidence.uid);
        return ReservationOutcome::kNone;
      }
      // Only a read made after this very reservation's bind call ended can show it did not land.
      if (source == EvidenceSource::kReadBack && it->second.reserved_ns == token &&
          it->second.state != ReservationState::kBinding) {
        Reservation& entry = it->second;
        const std::int64_t window_ends = entry.unanswered_call_ns + timing_.landing_window_ns;
        if (entry.state == ReservationState::kUnresolved && read_sent_ns < window_ends) {
          // The unanswered call may still be applied: look again once it can no longer be.
          entry.next_check_ns = std::max(entry.next_check_ns, window_ends);
          return ReservationOutcome::kKept;
        }
        return release(model, evidence.uid);
      }
      return ReservationOutcome::kKept;
  }
  return ReservationOutcome::kNone;
}

void ReservationLedger::read_back_failed(std::string_view uid, std::int64_t now_ns) {
  auto it = entries_.find(uid);
  if (it == entries_.end()) return;
  Reservation& entry = it->second;
  ++entry.failed_checks;
  std::int64_t delay = timing_.retry_initial_ns;
  for (int i = 1; i < entry.failed_checks && delay < timing_.retry_max_ns; ++i) delay *= 2;
  entry.next_check_ns = now_ns + std::min(delay, timing_.retry_max_ns);
}

void ReservationLedger::absent_from_list(std::string_view uid, std::int64_t now_ns) {
  auto it = entries_.find(uid);
  if (it != entries_.end()) it->second.next_check_ns = std::min(it->second.next_check_ns, now_ns);
}

std::vector<Reservation> ReservationLedger::due(std::int64_t now_ns) const {
  std::vector<Reservation> out;
  for (const auto& [uid, entry] : entries_) {
    if (entry.state != ReservationState::kBinding && entry.next_check_ns <= now_ns)
      out.push_back(entry);
  }
  return out;
}

const Reservation* ReservationLedger::find(std::string_view uid) const {
  auto it = entries_.find(uid);
  return it == entries_.end() ? nullptr : &it->second;
}

std::size_t ReservationLedger::count(ReservationState state) const {
  return static_cast<std::size_t>(
      std::count_if(entries_.begin(), entries_.end(),
                    [&](const auto& entry) { return entry.second.state == state; }));
}

}  // namespace gpushare::core
