#pragma once
// Raw prioritize scores per node, remembered from one request to the next.
//
// kube-scheduler scores pod after pod, and consecutive pods often ask for the same thing (the
// replicas of one workload); between two of them only the few nodes a bind or the watch touched
// change. A node's raw score is a pure function of the node, the pod's demand and the policy's
// learned state (PlacementPolicy::state_version), so a score computed for the same demand and
// version on the same node stamp (ClusterModel::stamp) is the same bits: it is reused. Any
// other demand or version starts afresh.
//
// Not thread-safe; the owner serialises its use. Keyed on one ClusterModel object's positions
// and stamps: use one cache per model.

#include <cstdint>
#include <optional>
#include <vector>

#include "gpushare/core/pod_demand.h"

namespace gpushare::core {

class ScoreCache {
 public:
  // Starts a request: keeps the entries if demand and version are the last request's, else
  // forgets them; sizes the table for `positions` nodes.
  void begin(const PodDemand& demand, std::uint64_t policy_version, std::size_t positions);

  // The score remembered for the node at `position` with `stamp`, if any (the inner nullopt:
  // the node cannot hold the pod).
  const std::optional<double>* find(std::size_t position, std::uint64_t stamp) const {
    const Entry& entry = entries_[position];
    return entry.stamp == stamp && stamp != kEmpty ? &entry.score : nullptr;
  }
  void store(std::size_t position, std::uint64_t stamp, std::optional<double> score) {
    entries_[position] = {stamp, score};
  }

 private:
  static constexpr std::uint64_t kEmpty = 0;  // stamps start at 1
  struct Entry {
    std::uint64_t stamp = kEmpty;
    std::optional<double> score;
  };
  std::vector<Entry> entries_;
  std::optional<PodDemand> demand_;
  std::uint64_t policy_version_ = 0;
};

}  // namespace gpushare::core
