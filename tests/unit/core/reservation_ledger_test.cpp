// Every transition of the reservation ledger (include/gpushare/core/reservation_ledger.h), and
// the rule they serve: a reservation ends on evidence about the pod, never on time.
#include "gpushare/core/reservation_ledger.h"

#include <gtest/gtest.h>

namespace gpushare::core {
namespace {

constexpr std::int64_t kSecond = 1'000'000'000;

class Ledger : public ::testing::Test {
 protected:
  Ledger() : ledger(timing()) {
    NodeSpec spec;
    spec.name = "n1";
    spec.gpu_count = 1;
    spec.memory_per_gpu = 16;
    model.upsert_node(spec);
  }

  static LedgerTiming timing() {
    LedgerTiming t;
    t.check_after_ns = 30 * kSecond;
    t.retry_initial_ns = 2 * kSecond;
    t.retry_max_ns = 8 * kSecond;
    t.landing_window_ns = 60 * kSecond;
    return t;
  }

  static PodAllocation allocation(const std::string& uid, Units amount, int gpu = 0) {
    PodAllocation p;
    p.uid = uid;
    p.namespace_name = "default";
    p.name = "pod-" + uid;
    p.node = "n1";
    p.gpus = {gpu};
    p.per_gpu = amount;
    return p;
  }

  static PodEvidence bound(const std::string& uid, Units amount, int gpu = 0) {
    return {PodEvidence::Kind::kBound, uid, allocation(uid, amount, gpu)};
  }
  static PodEvidence pending(const std::string& uid) {
    return {PodEvidence::Kind::kPending, uid, std::nullopt};
  }
  static PodEvidence gone(const std::string& uid) {
    return {PodEvidence::Kind::kGone, uid, std::nullopt};
  }

  Units used() const { return model.find_node("n1")->gpus()[0].used; }
  ReservationState state(const std::string& uid) const { return ledger.find(uid)->state; }

  // Reserve `uid` (6 units) at time 100 s and take it to `state`.
  void reserve_in(const std::string& uid, ReservationState target) {
    ASSERT_TRUE(ledger.reserve(model, allocation(uid, 6), kReserved));
    if (target == ReservationState::kAccepted)
      ledger.bind_accepted(model, uid, kReserved, kReserved + kSecond);
    if (target == ReservationState::kUnresolved)
      ledger.bind_unknown(model, uid, kReserved, kReserved, kReserved + kSecond);
    ASSERT_EQ(state(uid), target);
  }

  static constexpr std::int64_t kReserved = 100 * kSecond;
  ClusterModel model;
  ReservationLedger ledger;
};

TEST_F(Ledger, ReserveCountsTheMemoryAsAssumed) {
  ASSERT_TRUE(ledger.reserve(model, allocation("a", 6), kReserved));
  EXPECT_EQ(used(), 6);
  EXPECT_TRUE(model.find_pod("a")->assumed);
  EXPECT_EQ(model.find_pod("a")->assume_time_ns, kReserved);
  EXPECT_EQ(state("a"), ReservationState::kBinding);
  EXPECT_EQ(ledger.find("a")->pod_key, "default/pod-a");
  // A second reservation of a pod the model holds changes nothing.
  EXPECT_FALSE(ledger.reserve(model, allocation("a", 10), kReserved + 1));
  EXPECT_EQ(used(), 6);
  EXPECT_EQ(ledger.size(), 1u);
}

TEST_F(Ledger, AcceptedWaitsForEvidenceAndIsDueForAReadBackAfterTheCheckTime) {
  reserve_in("a", ReservationState::kAccepted);
  EXPECT_TRUE(ledger.due(kReserved + 30 * kSecond).empty());
  EXPECT_EQ(ledger.due(kReserved + 31 * kSecond).size(), 1u);
  // Time alone never releases it: a day later the memory is still held.
  EXPECT_EQ(ledger.due(kReserved + 86400 * kSecond).size(), 1u);
  EXPECT_EQ(used(), 6);
}

TEST_F(Ledger, BindFinalConfirmsAtOnce) {
  reserve_in("a", ReservationState::kBinding);
  EXPECT_EQ(ledger.bind_final(model, "a", kReserved), ReservationOutcome::kConfirmed);
  EXPECT_FALSE(model.find_pod("a")->assumed);
  EXPECT_EQ(ledger.size(), 0u);
  EXPECT_EQ(used(), 6);
}

TEST_F(Ledger, BindRejectedReleases) {
  reserve_in("a", ReservationState::kBinding);
  EXPECT_EQ(ledger.bind_rejected(model, "a", kReserved), ReservationOutcome::kReleased);
  EXPECT_EQ(model.find_pod("a"), nullptr);
  EXPECT_EQ(used(), 0);
}

TEST_F(Ledger, BindUnknownIsDueForAReadBackAtOnce) {
  reserve_in("a", ReservationState::kUnresolved);
  EXPECT_EQ(ledger.due(kReserved + kSecond).size(), 1u);
  EXPECT_EQ(used(), 6);
}

TEST_F(Ledger, TheBindCallsEndOnlyTheirOwnReservation) {
  reserve_in("a", ReservationState::kBinding);
  // Wrong token: a later reservation of the same pod is not this call's.
  EXPECT_EQ(ledger.bind_rejected(model, "a", kReserved + 1), ReservationOutcome::kNone);
  EXPECT_EQ(ledger.bind_accepted(model, "a", kReserved + 1, kReserved), ReservationOutcome::kNone);
  EXPECT_EQ(state("a"), ReservationState::kBinding);
  // Evidence settled it first: the call's late answer changes nothing.
  ledger.observe(model, bound("a", 6), EvidenceSource::kWatch);
  EXPECT_EQ(ledger.bind_rejected(model, "a", kReserved), ReservationOutcome::kNone);
  EXPECT_EQ(ledger.bind_unknown(model, "a", kReserved, kReserved, kReserved),
            ReservationOutcome::kNone);
  EXPECT_NE(model.find_pod("a"), nullptr);
  EXPECT_EQ(used(), 6);
}

TEST_F(Ledger, BoundEvidenceConfirmsFromEveryStateAndTheTruthReplacesTheChoice) {
  for (auto start :
       {ReservationState::kBinding, ReservationState::kAccepted, ReservationState::kUnresolved}) {
    SCOPED_TRACE(std::string(to_string(start)));
    reserve_in("a", start);
    // The API server has it with 4 units (another writer's view): the truth wins.
    EXPECT_EQ(ledger.observe(model, bound("a", 4), EvidenceSource::kWatch),
              ReservationOutcome::kConfirmed);
    EXPECT_EQ(ledger.find("a"), nullptr);
    EXPECT_FALSE(model.find_pod("a")->assumed);
    EXPECT_EQ(used(), 4);
    model.remove_pod("a");
  }
}

TEST_F(Ledger, GoneEvidenceReleasesFromEveryState) {
  for (auto start :
       {ReservationState::kBinding, ReservationState::kAccepted, ReservationState::kUnresolved}) {
    for (auto source : {EvidenceSource::kWatch, EvidenceSource::kList, EvidenceSource::kReadBack}) {
      reserve_in("a", start);
      EXPECT_EQ(ledger.observe(model, gone("a"), source), ReservationOutcome::kReleased);
      EXPECT_EQ(model.find_pod("a"), nullptr);
      EXPECT_EQ(used(), 0);
    }
  }
}

TEST_F(Ledger, PendingFromAWatchOrListNeverReleases) {
  // Such an event may have been written before our bind: it says nothing about it.
  for (auto start :
       {ReservationState::kBinding, ReservationState::kAccepted, ReservationState::kUnresolved}) {
    for (auto source : {EvidenceSource::kWatch, EvidenceSource::kList}) {
      reserve_in("a", start);
      EXPECT_EQ(ledger.observe(model, pending("a"), source), ReservationOutcome::kKept);
      EXPECT_EQ(used(), 6);
      ledger.observe(model, gone("a"), source);
    }
  }
}

TEST_F(Ledger, PendingFromAReadBackReleasesAnAcceptedOrUnresolvedBindButNotOneInFlight) {
  // Unresolved: only a read sent once the unanswered call can no longer land (60 s) counts.
  reserve_in("a", ReservationState::kUnresolved);
  EXPECT_EQ(ledger.observe(model, pending("a"), EvidenceSource::kReadBack, kReserved,
                           kReserved + 60 * kSecond),
            ReservationOutcome::kReleased);
  EXPECT_EQ(used(), 0);
  reserve_in("a", ReservationState::kAccepted);
  EXPECT_EQ(ledger.observe(model, pending("a"), EvidenceSource::kReadBack, kReserved,
                           kReserved + kSecond),
            ReservationOutcome::kReleased);
  reserve_in("a", ReservationState::kBinding);
  EXPECT_EQ(ledger.observe(model, pending("a"), EvidenceSource::kReadBack, kReserved,
                           kReserved + 90 * kSecond),
            ReservationOutcome::kKept);
  EXPECT_EQ(used(), 6);
}

// The late-landing race: a bind call times out, the read-back finds the pod unbound, and the
// API server applies the call after that. Releasing on that read would hand the memory out
// twice, so an Unresolved reservation outlives pending reads until the call's window closed.
TEST_F(Ledger, APendingReadBackWithinTheLandingWindowKeepsAnUnresolvedReservation) {
  ASSERT_TRUE(ledger.reserve(model, allocation("a", 6), kReserved));
  // The second call (sent again at +10 s) had no answer either: the window runs from it.
  ledger.bind_unknown(model, "a", kReserved, kReserved + 10 * kSecond, kReserved + 20 * kSecond);
  EXPECT_EQ(ledger.find("a")->next_check_ns, kReserved + 20 * kSecond);  // read back at once
  EXPECT_EQ(ledger.observe(model, pending("a"), EvidenceSource::kReadBack, kReserved,
                           kReserved + 20 * kSecond),
            ReservationOutcome::kKept);
  EXPECT_EQ(used(), 6);
  // Not due again before the window closes; due then.
  EXPECT_EQ(ledger.find("a")->next_check_ns, kReserved + 70 * kSecond);
  EXPECT_TRUE(ledger.due(kReserved + 69 * kSecond).empty());
  EXPECT_EQ(ledger.due(kReserved + 70 * kSecond).size(), 1u);
  // A read sent just before the window closes still proves nothing; one sent at its end does.
  EXPECT_EQ(ledger.observe(model, pending("a"), EvidenceSource::kReadBack, kReserved,
                           kReserved + 70 * kSecond - 1),
            ReservationOutcome::kKept);
  EXPECT_EQ(ledger.observe(model, pending("a"), EvidenceSource::kReadBack, kReserved,
                           kReserved + 70 * kSecond),
            ReservationOutcome::kReleased);
  EXPECT_EQ(used(), 0);
  // Had the call landed meanwhile, the watch's bound event confirms it whatever the window.
  ASSERT_TRUE(ledger.reserve(model, allocation("a", 6), kReserved + 100 * kSecond));
  ledger.bind_unknown(model, "a", kReserved + 100 * kSecond, kReserved + 100 * kSecond,
                      kReserved + 101 * kSecond);
  ledger.observe(model, pending("a"), EvidenceSource::kReadBack, kReserved + 100 * kSecond,
                 kReserved + 101 * kSecond);
  EXPECT_EQ(ledger.observe(model, bound("a", 6), EvidenceSource::kWatch),
            ReservationOutcome::kConfirmed);
  EXPECT_EQ(used(), 6);
  EXPECT_FALSE(model.find_pod("a")->assumed);
}

TEST_F(Ledger, AReadBackMadeForAnOlderReservationDoesNotReleaseANewerOne) {
  reserve_in("a", ReservationState::kAccepted);
  ledger.observe(model, gone("a"), EvidenceSource::kWatch);
  ASSERT_TRUE(ledger.reserve(model, allocation("a", 6), kReserved + 50 * kSecond));
  ledger.bind_accepted(model, "a", kReserved + 50 * kSecond, kReserved + 51 * kSecond);
  EXPECT_EQ(ledger.observe(model, pending("a"), EvidenceSource::kReadBack, kReserved),
            ReservationOutcome::kKept);
  EXPECT_EQ(used(), 6);
}

TEST_F(Ledger, AFailedReadBackKeepsTheReservationAndBacksOff) {
  reserve_in("a", ReservationState::kUnresolved);
  const std::int64_t t = kReserved + 10 * kSecond;
  ledger.read_back_failed("a", t);
  EXPECT_EQ(ledger.find("a")->next_check_ns, t + 2 * kSecond);
  ledger.read_back_failed("a", t);
  EXPECT_EQ(ledger.find("a")->next_check_ns, t + 4 * kSecond);
  ledger.read_back_failed("a", t);
  ledger.read_back_failed("a", t);
  ledger.read_back_failed("a", t);
  EXPECT_EQ(ledger.find("a")->next_check_ns, t + 8 * kSecond);  // capped
  EXPECT_EQ(state("a"), ReservationState::kUnresolved);
  EXPECT_EQ(used(), 6);
}

TEST_F(Ledger, AbsenceFromAListMakesAReadBackDueNow) {
  reserve_in("a", ReservationState::kAccepted);
  const std::int64_t t = kReserved + 2 * kSecond;
  EXPECT_TRUE(ledger.due(t).empty());
  ledger.absent_from_list("a", t);
  EXPECT_EQ(ledger.due(t).size(), 1u);
  EXPECT_EQ(used(), 6);
}

TEST_F(Ledger, EvidenceAboutUnreservedPodsMaintainsTheModel) {
  EXPECT_EQ(ledger.observe(model, bound("b", 5), EvidenceSource::kWatch),
            ReservationOutcome::kNone);
  EXPECT_EQ(used(), 5);
  EXPECT_FALSE(model.find_pod("b")->assumed);
  EXPECT_EQ(ledger.observe(model, pending("b"), EvidenceSource::kList), ReservationOutcome::kNone);
  EXPECT_EQ(model.find_pod("b"), nullptr);  // a held pod shown unbound: stale, dropped
  ledger.observe(model, bound("b", 5), EvidenceSource::kWatch);
  EXPECT_EQ(ledger.observe(model, gone("b"), EvidenceSource::kWatch), ReservationOutcome::kNone);
  EXPECT_EQ(used(), 0);
}

TEST_F(Ledger, CountsByState) {
  reserve_in("a", ReservationState::kBinding);
  reserve_in("b", ReservationState::kAccepted);
  reserve_in("c", ReservationState::kUnresolved);
  EXPECT_EQ(ledger.count(ReservationState::kBinding), 1u);
  EXPECT_EQ(ledger.count(ReservationState::kAccepted), 1u);
  EXPECT_EQ(ledger.count(ReservationState::kUnresolved), 1u);
  EXPECT_EQ(model.assumed_count(), 3u);
}

}  // namespace
}  // namespace gpushare::core
