#pragma once
// The model and the policy behind one reader/writer lock.
//
// What the lock guards: the ClusterModel (nodes, GPUs, every pod's allocation, assumed pods
// included) and the PlacementPolicy's learned state. Filter and prioritize read under a shared
// lock; bind's choose-and-assume, and every update from the API server, run under the exclusive
// lock, so a GPU chosen by one bind is visible to every filter, prioritize and bind after it.
// Never call out (HTTP, API server) while holding it.

#include <memory>
#include <mutex>
#include <shared_mutex>
#include <utility>

#include "gpushare/core/cluster_model.h"
#include "gpushare/core/placement_policy.h"

namespace gpushare::extender {

class ModelStore {
 public:
  explicit ModelStore(std::unique_ptr<core::PlacementPolicy> policy) : policy_(std::move(policy)) {}

  template <typename Fn>
  decltype(auto) read(Fn&& fn) const {
    std::shared_lock lock(mutex_);
    return std::forward<Fn>(fn)(model_, static_cast<const core::PlacementPolicy&>(*policy_));
  }

  template <typename Fn>
  decltype(auto) write(Fn&& fn) {
    std::unique_lock lock(mutex_);
    return std::forward<Fn>(fn)(model_, *policy_);
  }

 private:
  mutable std::shared_mutex mutex_;
  core::ClusterModel model_;
  std::unique_ptr<core::PlacementPolicy> policy_;
};

}  // namespace gpushare::extender
