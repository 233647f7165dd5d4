#pragma once
// Raw prioritize scores per node, remembered from one request to the next, per pod demand.
//
// kube-scheduler scores pod after pod; consecutive pods often ask for the same thing (the
// replicas of one workload), and a pod that looks new usually asks for what an earlier one of
// its workload asked (a cluster runs a few dozen pod shapes). Between two requests only the few
// nodes a bind or the watch touched change. A node's raw score is a pure function of the node,
// the pod's demand and the policy's state (PlacementPolicy::state_version), so a score computed
// for the same demand and version on the same node stamp (ClusterModel::stamp) is the same
// bits: it is reused. The cache keeps one table per demand for the last `max_demands` demands
// asked for (least recently used is dropped); a new policy version drops every table.
//
// Besides scores, a table may hold upper bounds of scores (store_bound), told apart from them.
//
// Memory: at most max_demands tables of 16 bytes per node position (16 demands x 10 000 nodes:
// 2.5 MiB).
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
  static constexpr std::size_t kDefaultDemands = 16;
  explicit ScoreCache(std::size_t max_demands = kDefaultDemands);

  // Starts a request: selects the table of `demand` if the cache holds one for
  // `policy_version` (else a fresh one, dropping the least recently used beyond max_demands,
  // or every table when the version moved); sizes it for `positions` nodes. True where the
  // demand's table was kept (its scores may be read back), false for a fresh one.
  bool begin(const PodDemand& demand, std::uint64_t policy_version, std::size_t positions);

  // The score remembered in the selected table for the node at `position` with `stamp`, if any
  // (the inner nullopt: the node cannot hold the pod). A bound (store_bound) is not a score:
  // find() does not return it.
  std::optional<std::optional<double>> find(std::size_t position, std::uint64_t stamp) const {
    const Entry& entry = (*active_)[position];
    if ((entry.key >> 2) != stamp || (entry.key & kBound) != 0 || entry.key == kEmpty)
      return std::nullopt;
    return (entry.key & kFeasible) != 0 ? std::optional<double>(entry.score) : std::nullopt;
  }
  void store(std::size_t position, std::uint64_t stamp, std::optional<double> score) {
    (*active_)[position] = {stamp << 2 | (score ? kFeasible : 0U), score.value_or(0.0)};
  }
  // An upper bound of the node's score (PlacementPolicy::score_bound, or score_in's bound below
  // its floor), kept apart from scores (read() tells them apart). A pure function of the same
  // key as a score, so as reusable.
  void store_bound(std::size_t position, std::uint64_t stamp, double bound) {
    (*active_)[position] = {stamp << 2 | kBound, bound};
    *active_holds_bounds_ = true;
  }
  // What the selected table holds for the node at `position` with `stamp`, read once: a score
  // (the node cannot hold the pod, or its score), a bound, or nothing. Which of them an entry
  // holds follows no pattern, so a caller that reads bounds back handles each kind itself after
  // one read.
  enum class Held : std::uint8_t { kNothing, kInfeasible, kScore, kBound };
  struct Kept {
    Held held = Held::kNothing;
    double value = 0;  // the score or the bound
  };
  Kept read(std::size_t position, std::uint64_t stamp) const {
    const Entry& entry = (*active_)[position];
    if ((entry.key >> 2) != stamp || entry.key == kEmpty) return {};
    // key & 3: 0 a score where the node cannot hold the pod, 1 a score, 2 a bound.
    return {static_cast<Held>((entry.key & 3) + 1), entry.score};
  }
  // Whether store_bound was called on the selected table since it was made.
  bool holds_bounds() const { return *active_holds_bounds_; }

  // Tables held now (for tests and /inspect-style introspection).
  std::size_t tables() const { return tables_.size(); }

 private:
  // Stamps start at 1 and stay far below 2^62: the key is stamp << 2 | bound | feasible, 0 is
  // empty.
  static constexpr std::uint64_t kEmpty = 0;
  static constexpr std::uint64_t kFeasible = 1;
  static constexpr std::uint64_t kBound = 2;
  static_assert(kFeasible == 1 && kBound == 2, "read() names what an entry holds by key & 3");
  struct Entry {
    std::uint64_t key = kEmpty;
    double score = 0;
  };
  struct Table {
    PodDemand demand;
    std::vector<Entry> entries;
    std::uint64_t last_used = 0;
    bool holds_bounds = false;
  };
  std::size_t max_demands_;
  std::vector<Table> tables_;
  std::vector<Entry>* active_ = nullptr;
  bool* active_holds_bounds_ = nullptr;
  std::uint64_t policy_version_ = 0;
  std::uint64_t clock_ = 0;  // request count, for least-recently-used
};

}  // namespace gpushare::core
