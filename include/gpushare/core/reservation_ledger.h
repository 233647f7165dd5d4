#pragma once
// The reservation ledger: what the extender holds for pods it is binding, and the one place
// where such a hold begins and ends.
//
// A reservation is an allocation the model counts (PodAllocation::assumed) before the API
// server has shown the pod bound. It ends only on evidence about the pod, never on a timer:
// a reservation forgotten while the pod is in fact bound hands the same memory out twice.
//
//   (none) --reserve--> Binding                       bind chose a GPU; the bind call is in flight
//   Binding --bind_accepted--> Accepted               the API server said yes; waiting to see it
//   Binding --bind_final--> (confirmed)               the binder's word is final (standalone)
//   Binding --bind_rejected--> (released)             the API server said no
//   Binding --bind_unknown--> Unresolved              no answer (time-out): read the pod back now
//   any --observe(bound)--> (confirmed)               the pod is bound: the truth replaces the hold
//   any --observe(gone)--> (released)                 deleted, finished, or re-created (other UID)
//   Accepted --observe(pending, read-back)--> (released)
//                                                     a fresh read shows the bind did not land
//   Unresolved --observe(pending, read-back)--> (released) if the read was sent once the
//                                                     landing window of the last unanswered call
//                                                     had passed; else unchanged, read back then
//                                                     (the server may still apply that call)
//   Binding|Accepted|Unresolved --observe(pending, watch or list)--> unchanged
//                                                     the event may be older than our bind
//   Accepted|Unresolved --read_back_failed--> same state, read back again after a back-off
//   Accepted --(no confirmation for check_after)--> due for a read-back
//   any --absent_from_list--> due for a read-back now
//
// Confirmed: the pod's allocation stays in the model as a bound pod (assumed = false) and the
// ledger forgets it. Released: the allocation leaves the model.
//
// Not thread-safe: it lives beside the ClusterModel behind the model store's lock, and every
// transition takes that model, so the two never disagree.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gpushare/core/cluster_model.h"
#include "gpushare/core/pod_allocation.h"

namespace gpushare::core {

enum class ReservationState { kBinding, kAccepted, kUnresolved };
std::string_view to_string(ReservationState state);

// What the API server says about a pod now.
struct PodEvidence {
  enum class Kind {
    kBound,    // bound to a node: `bound` is its allocation as the API server records it
    kPending,  // exists, not bound, not finished
    kGone,     // deleted, finished, or the name now belongs to another UID
  };
  Kind kind = Kind::kPending;
  std::string uid;
  std::optional<PodAllocation> bound;
};

// Where the evidence comes from: a watch event or a list may be older than our bind call; a
// read-back (GET after the call ended) is not.
enum class EvidenceSource { kWatch, kList, kReadBack };

// What a transition did, for logs and metrics.
enum class ReservationOutcome {
  kNone,       // no reservation was involved (or it was not ours any more)
  kKept,       // the reservation stays
  kConfirmed,  // the pod is bound: now an ordinary bound pod
  kReleased,   // the memory is free again
};

struct Reservation {
  std::string uid;
  std::string pod_key;  // namespace/name, to read the pod back
  std::string node;
  ReservationState state = ReservationState::kBinding;
  std::int64_t reserved_ns = 0;     // when bind reserved it; also the bind's token
  std::int64_t state_since_ns = 0;  // when it entered `state`
  std::int64_t next_check_ns = 0;   // a read-back is due from then (Accepted, Unresolved)
  // Unresolved: when the last bind call without an answer was sent. The API server may apply
  // it until its own request deadline has passed, so a pending read sent before then proves
  // nothing.
  std::int64_t unanswered_call_ns = 0;
  int failed_checks = 0;
};

struct LedgerTiming {
  // How long an accepted bind waits for the watch before the pod is read back.
  std::int64_t check_after_ns = 30'000'000'000;
  // Back-off between failed read-backs: doubles from `retry_initial_ns` up to `retry_max_ns`.
  std::int64_t retry_initial_ns = 2'000'000'000;
  std::int64_t retry_max_ns = 60'000'000'000;
  // How long after a bind call without an answer was sent the API server may still apply it:
  // kube-apiserver's --request-timeout (60 s by default) bounds every request it serves.
  std::int64_t landing_window_ns = 60'000'000'000;
};

class ReservationLedger {
 public:
  explicit ReservationLedger(LedgerTiming timing = {}) : timing_(timing) {}

  // (none) -> Binding: counts `allocation` in the model (assumed) from `now_ns`, which becomes
  // the token the bind's later transitions carry. False, with nothing changed, if the model
  // already holds the pod.
  bool reserve(ClusterModel& model, PodAllocation allocation, std::int64_t now_ns);

  // The bind call's end. Each is ignored (kNone) unless the reservation is still the one made
  // with `token` and still Binding: evidence may have settled it meanwhile.
  ReservationOutcome bind_accepted(ClusterModel& model, std::string_view uid, std::int64_t token,
                                   std::int64_t now_ns);
  ReservationOutcome bind_final(ClusterModel& model, std::string_view uid, std::int64_t token);
  ReservationOutcome bind_rejected(ClusterModel& model, std::string_view uid, std::int64_t token);
  // `call_sent_ns`: when the last call without an answer was sent (its landing window starts).
  ReservationOutcome bind_unknown(ClusterModel& model, std::string_view uid, std::int64_t token,
                                  std::int64_t call_sent_ns, std::int64_t now_ns);

  // Evidence about a pod, reserved or not: a bound pod enters (or updates) the model, a gone
  // one leaves it, whatever the ledger held. A read-back names the reservation it was made for
  // (`token`, its reserved_ns) and when the read was sent (`read_sent_ns`): a pending pod
  // releases only that one, not a newer bind's, and an Unresolved one only once its landing
  // window had passed when the read was sent.
  ReservationOutcome observe(ClusterModel& model, const PodEvidence& evidence,
                             EvidenceSource source, std::int64_t token = 0,
                             std::int64_t read_sent_ns = 0);

  // A read-back could not be made (API server down): keep the reservation, try again later.
  void read_back_failed(std::string_view uid, std::int64_t now_ns);
  // A list lacked the pod: whether it was deleted or the list predates our bind, a read-back
  // tells; make it due now.
  void absent_from_list(std::string_view uid, std::int64_t now_ns);

  // Reservations whose read-back is due at `now_ns` (Accepted past check_after, Unresolved).
  std::vector<Reservation> due(std::int64_t now_ns) const;
  const Reservation* find(std::string_view uid) const;
  std::size_t size() const { return entries_.size(); }
  std::size_t count(ReservationState state) const;

 private:
  ReservationOutcome release(ClusterModel& model, std::string_view uid);
  Reservation* ours(std::string_view uid, std::int64_t token);
  ReservationOutcome leave_binding(std::string_view uid, std::int64_t token, ReservationState next,
                                   std::int64_t now_ns, std::int64_t check_at_ns);

  LedgerTiming timing_;
  std::map<std::string, Reservation, std::less<>> entries_;  // by pod UID
};

}  // namespace gpushare::core
