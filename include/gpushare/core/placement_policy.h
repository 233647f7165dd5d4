#pragma once
// Placement policies: one object both scores a node (prioritize) and picks the GPUs (bind),
// so the node that scored best is filled exactly the way its score assumed.

#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "gpushare/core/node_state.h"
#include "gpushare/core/pod_demand.h"

namespace gpushare::core {

struct Placement {
  double score = 0;       // higher = better node; scale is the policy's own
  std::vector<int> gpus;  // GPUs to take (empty for pods that want no GPU)
};

// GPU memory taken from one GPU by a placement chosen elsewhere (kube's DRA allocator).
struct GpuTake {
  int gpu = 0;
  Units amount = 0;
  friend bool operator==(const GpuTake&, const GpuTake&) = default;
};

struct NodeReading;      // fragmentation.h
class SharedExclusions;  // fragmentation.h

// What the caller of PlacementPolicy::score_in keeps for one node and one request
// (core/scorer.h), and whether it takes a bound instead of the score.
struct ScoreContext {
  // Kept by the caller for this node's state and the policy's reading_version(): empty on first
  // use, filled by the policy (core/fragmentation_cache.h). Null: none kept.
  NodeReading* reading = nullptr;
  // Begun by the caller per request; policies that compute F after placement read and fill it.
  SharedExclusions* shared = nullptr;
  // The caller tells apart only scores at or above `floor`: where the score is below it, the
  // policy may return an upper bound of the score that is itself below `floor` instead, and
  // then sets `bounded`. -infinity: the score itself, always.
  double floor = -std::numeric_limits<double>::infinity();
  bool bounded = false;
  // Set by a caller whose score_bound() of this node is not below `floor`: a policy then skips
  // bounds of the same kind (from the reading alone), which would not rule the node out either.
  bool bound_reaches_floor = false;
  // Set only by a caller that has checked that the node can hold the pod (fits()): a policy may
  // then skip its own check. False: the policy checks.
  bool fit_checked = false;
};

class PlacementPolicy {
 public:
  virtual ~PlacementPolicy() = default;
  virtual std::string_view name() const = 0;

  // Where `pod` would go on `node`, or nullopt if it does not fit (check_fit fails).
  // Must be a pure function of (node, pod, the policy's state): prioritize reuses scores on
  // that promise (core/score_cache.h, core/state_memo.h). The policy's state is everything
  // else it reads: what observe() learned, and any cluster-wide aggregate it keeps (per GPU
  // model: free capacity, pinned demand); state_version() below must move with all of it.
  virtual std::optional<Placement> place(const NodeState& node, const PodDemand& pod) const = 0;
  // place(node, pod)->score, or nullopt where place() gives nullopt: all prioritize needs.
  // Policies may override it to skip building the Placement; it must return the same value.
  virtual std::optional<double> score(const NodeState& node, const PodDemand& pod) const {
    std::optional<Placement> placement = place(node, pod);
    return placement ? std::optional<double>(placement->score) : std::nullopt;
  }

  // score(node, pod), given what the caller keeps for the node and the request (ScoreContext).
  // Must return score()'s value, except where it sets context.bounded (ScoreContext::floor).
  virtual std::optional<double> score_in(const NodeState& node, const PodDemand& pod,
                                         ScoreContext& /*context*/) const {
    return score(node, pod);
  }
  // score_in with a kept reading (and the request's shared exclusions) and no floor.
  std::optional<double> score_with(const NodeState& node, const PodDemand& pod,
                                   NodeReading* reading, SharedExclusions* shared = nullptr) const {
    ScoreContext context{reading, shared};
    return score_in(node, pod, context);
  }
  // A cheap upper bound of score_in(node, pod, {reading}), for callers that need the
  // exact score of the best nodes only (Scorer::score_top): nullopt where the policy gives none
  // for this node and pod (the caller computes the score); an inner nullopt where the node
  // cannot hold the pod (exact: score_in gives nullopt too); else a value at least score_in's,
  // as doubles. Must be a pure function of what score_in's value is (node, pod, policy state);
  // `reading` as there, only read, used if filled.
  virtual std::optional<std::optional<double>> score_bound(const NodeState& /*node*/,
                                                           const PodDemand& /*pod*/,
                                                           const NodeReading* /*reading*/) const {
    return std::nullopt;
  }
  // Whether score_bound may give bounds for `pod` (else the caller need not ask per node).
  virtual bool bounds_scores(const PodDemand& /*pod*/) const { return false; }

  // The version of what a reading depends on besides the node (the target workload), where
  // score_in reads or fills readings; nullopt where it ignores them (the caller then
  // keeps none). Moves at least when a kept reading may have changed, so not more often than
  // state_version().
  virtual std::optional<std::uint64_t> reading_version() const { return std::nullopt; }

  // The score of a placement already chosen: `takes` from those GPUs, and the pod's CPU and
  // memory (DRA pods: kube's allocator picks the devices, so the node is judged by what that
  // pick leaves). The default scores the pod's largest take as if the policy placed it
  // (policies/score_taken.cpp); fgd-plus measures the node after exactly these takes.
  virtual std::optional<double> score_taken(const NodeState& node, const PodDemand& pod,
                                            std::span<const GpuTake> takes) const;

  // Told about every pod actually placed, for policies that learn the workload online.
  virtual void observe(const PodDemand& /*pod*/) {}
  // Told the whole cluster after each observe() (and whenever the owner's view of the nodes
  // changed a lot), for policies that weigh what is scarce cluster-wide. The policy may read
  // it only now and then.
  virtual void observe_cluster(std::span<const NodeState> /*nodes*/) {}
  // Changes whenever what place() or score() returns for some (node, pod) may have changed:
  // after observe() changed the learned workload, and after any change of cluster-wide state
  // the policy reads. Prioritize keeps raw scores per (node stamp, demand, state_version())
  // across requests (core/score_cache.h) and drops them all when it moves, so a version that
  // stays put while a score changes serves stale scores, and one that moves on every bind
  // makes every request score every node: move it when scores may change, and only then.
  virtual std::uint64_t state_version() const { return 0; }
  // Whether place() or score() read the node's identity (name, address, generation) rather
  // than only its state (node_state_key.h: spec, GPUs, usage). When not, prioritize scores
  // each distinct node state once per request and gives nodes in that state the same score.
  virtual bool reads_node_identity() const { return false; }
  // Policy-specific state for /inspect (JSON text), empty if none.
  virtual std::string describe_state() const { return {}; }
};

}  // namespace gpushare::core
