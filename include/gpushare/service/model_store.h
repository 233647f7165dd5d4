#pragma once
// The model and the policy behind one reader/writer lock.
//
// What the lock guards: the ClusterModel (nodes, GPUs, every pod's allocation, assumed pods
// included), the ReservationLedger (the state of each of those assumed pods: the only code that
// begins or ends a reservation), consolidation's HoldBook (memory kept for a replacement pod)
// and the PlacementPolicy's learned state. Filter and prioritize read
// under a shared lock; bind's choose-and-assume, and every update from the API server, run under
// the exclusive lock, so a GPU chosen by one bind is visible to every filter, prioritize and bind
// after it. Never call out (HTTP, API server) while holding it.

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <type_traits>
#include <utility>

#include "gpushare/core/cluster_model.h"
#include "gpushare/core/consolidation_hold.h"
#include "gpushare/core/placement_policy.h"
#include "gpushare/core/reservation_ledger.h"

namespace gpushare::service {

class ModelStore {
 public:
  explicit ModelStore(std::unique_ptr<core::PlacementPolicy> policy) : policy_(std::move(policy)) {}

  // fn(model, policy), fn(model, policy, ledger) or fn(model, policy, ledger, holds).
  template <typename Fn>
  decltype(auto) read(Fn&& fn) const {
    std::shared_lock lock(mutex_);
    const auto& policy = static_cast<const core::PlacementPolicy&>(*policy_);
    if constexpr (std::is_invocable_v<Fn, const core::ClusterModel&, const core::PlacementPolicy&,
                                      const core::ReservationLedger&, const core::HoldBook&>) {
      return std::forward<Fn>(fn)(model_, policy, ledger_, holds_);
    } else if constexpr (std::is_invocable_v<Fn, const core::ClusterModel&,
                                             const core::PlacementPolicy&,
                                             const core::ReservationLedger&>) {
      return std::forward<Fn>(fn)(model_, policy, ledger_);
    } else {
      return std::forward<Fn>(fn)(model_, policy);
    }
  }

  // fn(model, policy), fn(model, policy, ledger) or fn(model, policy, ledger, holds). A pod
  // that may be reserved is changed only through the ledger.
  template <typename Fn>
  decltype(auto) write(Fn&& fn) {
    std::unique_lock lock(mutex_);
    generation_.fetch_add(1, std::memory_order_release);
    if constexpr (std::is_invocable_v<Fn, core::ClusterModel&, core::PlacementPolicy&,
                                      core::ReservationLedger&, core::HoldBook&>) {
      return std::forward<Fn>(fn)(model_, *policy_, ledger_, holds_);
    } else if constexpr (std::is_invocable_v<Fn, core::ClusterModel&, core::PlacementPolicy&,
                                             core::ReservationLedger&>) {
      return std::forward<Fn>(fn)(model_, *policy_, ledger_);
    } else {
      return std::forward<Fn>(fn)(model_, *policy_);
    }
  }

  // Counts the writes begun: unchanged, the model, the ledger and the policy are as they were
  // (caches of what is rendered from them key on it). Lock-free.
  std::uint64_t generation() const { return generation_.load(std::memory_order_acquire); }

  // Before any use: the ledger's read-back timings (live mode).
  void set_ledger_timing(core::LedgerTiming timing) {
    std::unique_lock lock(mutex_);
    generation_.fetch_add(1, std::memory_order_release);
    ledger_ = core::ReservationLedger(timing);
  }

 private:
  mutable std::shared_mutex mutex_;
  core::ClusterModel model_;
  core::ReservationLedger ledger_;
  core::HoldBook holds_;
  std::unique_ptr<core::PlacementPolicy> policy_;
  std::atomic<std::uint64_t> generation_{0};  // written under the exclusive lock
};

}  // namespace gpushare::service
