#pragma once
// Prioritize's scoring: the policy's raw score (placement_policy.h) of one pod on each offered
// node, for pods whose GPUs the extender places (device plugin) and for pods with DRA claims,
// whose devices kube's allocator picks (first fit, DraState::first_fit): those nodes are scored
// by what that pick leaves (PlacementPolicy::score_taken). The caller maps raw scores onto
// kube-scheduler's scale (score_mapping.h).
//
// Owns what makes device-plugin scoring cheap without changing a score (each kept value is a
// pure function of its key):
//  - ScoreCache (score_cache.h): raw scores per demand of earlier requests, reused for the nodes
//    that did not change;
//  - StateMemo (state_memo.h): the scores of the node states met in one request;
//  - FragmentationCache (fragmentation_cache.h): what fgd and fgd-plus read of each node alone
//    and the last sharing pod's F after placement, so that a demand never seen before computes
//    only the fragmentation after placement, and one new only in its CPU or memory mostly not
//    even that.
//
// Bound to one ClusterModel object: the caches are keyed on its positions and stamps.
//
// Thread-safety: score(), score_top() and score_dra() may run concurrently, each under the
// model's shared lock, held by the caller for the whole call (the memo holds pointers into the
// model, and the model must not change while a call reads it). `mutex_` guards cache_, memo_,
// readings_ and score_top's scratch, one call at a time; a call that finds it taken scores
// without them (the same scores, more work) instead of waiting, so requests never queue here,
// and since try_lock never blocks it
// adds no lock-order constraint to the model's lock.

#include <cstdint>
#include <mutex>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "gpushare/core/cluster_model.h"
#include "gpushare/core/dra.h"
#include "gpushare/core/fragmentation_cache.h"
#include "gpushare/core/placement_policy.h"
#include "gpushare/core/pod_demand.h"
#include "gpushare/core/score_cache.h"
#include "gpushare/core/state_memo.h"

namespace gpushare::core {

class Scorer {
 public:
  // The raw score of `demand` (its pin resolved against `model`) on each of `offered` into
  // raw[i]: nullopt where the node cannot hold the pod; unknown[i] set to 1 where offered[i] is
  // no node of `model` (both spans offered.size() long). Where the node tracks CPU and memory
  // and the pod's make it infeasible, the node is scored on GPUs alone: kube-scheduler, the
  // authority on CPU and memory, found it feasible.
  void score(const ClusterModel& model, const PlacementPolicy& policy, const PodDemand& demand,
             std::span<const std::string_view> offered, std::span<std::optional<double>> raw,
             std::span<char> unknown);

  // As score(), for a caller that tells apart only the `top` best distinct raw scores (rank
  // mapping: rank_scores(raw, top + 1) gives every other feasible node the same level): raw[i]
  // is the exact score of every node whose score is among the `top` best distinct scores, and
  // of some others; every other feasible node gets an upper bound of its score
  // (PlacementPolicy::score_bound, or the policy's below its ScoreContext::floor) below all of
  // those, never mistaken for its score (the score cache keeps bounds apart). So
  // rank_scores(raw, top + 1) equals rank_scores of the exact scores, and the argmax is the
  // exact one; nothing else about raw is promised. Nullopt and
  // `unknown` exactly as score(). It is score() where the policy gives no bounds, the caches are
  // taken or fewer than 512 names are offered, and for a demand whose table in the score cache
  // holds scores alone; one whose table holds bounds is bounded again (those bounds read back).
  // A node it scores may still come out bounded: once `top` distinct exact scores are found,
  // the policy is given the lowest of them as ScoreContext::floor.
  // For a demand new to the cache it scores the first 256 names as score() does (with that
  // floor) and goes on as score() where its states repeat often enough for the state memo to be
  // kept. Where more than an eighth of the sample's feasible nodes tie at its `top` best
  // distinct scores (each tied node needs its exact score, so bounds computed apart would be
  // paid on top of it), it scores each further node once, with that floor.
  void score_top(const ClusterModel& model, const PlacementPolicy& policy, const PodDemand& demand,
                 std::span<const std::string_view> offered, std::span<std::optional<double>> raw,
                 std::span<char> unknown, std::size_t top);

  // The same for a pod with DRA claims: `requests` are its device requests still to allocate
  // (not empty), `cpu_milli` and `memory` its CPU and memory. Uses none of the caches: each node
  // is scored on the devices first fit takes there.
  static void score_dra(const ClusterModel& model, const PlacementPolicy& policy,
                        std::span<const DraRequest> requests, std::int64_t cpu_milli,
                        std::int64_t memory, std::span<const std::string_view> offered,
                        std::span<std::optional<double>> raw, std::span<char> unknown);

 private:
  // One request's score() in consecutive parts of the offer (score_top: a sample, then the
  // rest): the caches are begun by the first part, the memo's trial carries on.
  struct ExactPart {
    bool begun = false;
    bool memo_on = false;        // the memo is in use (not dropped by its trial)
    std::size_t offer_size = 0;  // names offered in all parts (sizes the memo)
    std::size_t memo_lookups = 0;
    std::size_t memo_hits = 0;
    // > 0: score_top's part, which keeps its `top` best distinct exact scores in best_ and
    // gives the policy the lowest of them as its floor (a node may come out bounded).
    std::size_t top = 0;
  };
  // score() with the caches (`cached`: mutex_ held) or without them; `part` null: the whole
  // offer at once.
  void score_exact(bool cached, const ClusterModel& model, const PlacementPolicy& policy,
                   const PodDemand& demand, std::span<const std::string_view> offered,
                   std::span<std::optional<double>> raw, std::span<char> unknown,
                   ExactPart* part = nullptr);

  // A node score_top bounded, to be scored exactly if the bound can reach the top.
  struct Pending {
    double bound;
    std::size_t index;  // into offered
    const NodeState* node;
  };

  std::mutex mutex_;
  ScoreCache cache_;
  StateMemo memo_;
  FragmentationCache readings_;
  // score_top's scratch, kept between requests to spare the allocations.
  std::vector<Pending> pending_;
  // The best `top` distinct exact scores met so far in score_top, best first (as rank_scores
  // keeps them).
  std::vector<double> best_;
  // Adds `score` to best_ where it is among the `top` best distinct ones.
  void admit_best(const std::optional<double>& score, std::size_t top);
};

}  // namespace gpushare::core
