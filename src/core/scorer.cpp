#include "gpushare/core/scorer.h"

#include <algorithm>
#include <functional>
#include <limits>

#include "gpushare/core/fit.h"
#include "gpushare/core/node_state_key.h"

namespace gpushare::core {
namespace {

// The memo is tried on the first kMemoTrial nodes looked up: where fewer than one in
// kMemoHitsPer of them shares a state with an earlier node, hashing each node costs more than
// the memo saves, and it is dropped for the rest of the request.
constexpr std::size_t kMemoTrial = 256;
constexpr std::size_t kMemoHitsPer = 16;

// score_top: the exact scores of the kFirstExact x top highest bounds are computed first.
constexpr std::size_t kFirstExact = 4;

// score_top first scores the first kSample names offered as score() does, and keeps to bounds
// for the rest only where they can spare work: the sample's scores tie little at the top
// (at most one in kTiedPer of its feasible nodes scores among its `top` best distinct scores;
// where they tie more, most of the cluster is likely to as well, and each tied node must be
// scored exactly, bounds or not), and the memo's trial dropped the memo (the states repeat too
// rarely for it to score each once). Offers smaller than kMinBoundedOffer are scored exactly.
constexpr std::size_t kSample = 256;
constexpr std::size_t kTiedPer = 8;
constexpr std::size_t kMinBoundedOffer = 2 * kSample;

constexpr double kNoFloor = -std::numeric_limits<double>::infinity();

PodDemand gpus_only(PodDemand demand) {
  demand.cpu_milli = 0;
  demand.memory = 0;
  return demand;
}

// The demand `node` is scored on: `demand` where the node can hold it; where only the node's
// CPU or memory excludes it, its GPUs alone (`gpu_only`): kube-scheduler, the authority on CPU
// and memory, found the node feasible; null where the node cannot hold the pod even so (a
// policy scores exactly where check_fit passes: PlacementPolicy::place). The pod fits where its
// GPUs alone fit and the node's CPU and memory hold it. Inlined: it runs for every node scored.
[[gnu::always_inline]] inline const PodDemand* scored_demand(const NodeState& node,
                                                             const PodDemand& demand,
                                                             const PodDemand& gpu_only) {
  if (!fits(node, gpu_only)) return nullptr;
  return demand.cpu_milli <= node.cpu_free() && demand.memory <= node.memory_free() ? &demand
                                                                                    : &gpu_only;
}

// The policy's score of the pod on `node` (scored_demand), nullopt where the node cannot hold it.
[[gnu::always_inline]] inline std::optional<double> score_one(const PlacementPolicy& policy,
                                                              const NodeState& node,
                                                              const PodDemand& demand,
                                                              const PodDemand& gpu_only,
                                                              ScoreContext& context) {
  const PodDemand* scored = scored_demand(node, demand, gpu_only);
  if (scored == nullptr) return std::nullopt;
  context.fit_checked = true;
  return policy.score_in(node, *scored, context);
}

// The same for PlacementPolicy::score_bound: nullopt where the policy gives no bound, an inner
// nullopt where the node cannot hold the pod even on GPUs alone. (The policy checks the fit
// itself, and most nodes it bounds fit: checking it here first would check it twice.)
std::optional<std::optional<double>> bound_one(const PlacementPolicy& policy, const NodeState& node,
                                               const PodDemand& demand, const PodDemand& gpu_only,
                                               bool tracks_cpu_memory, const NodeReading* reading) {
  std::optional<std::optional<double>> bound = policy.score_bound(node, demand, reading);
  if (bound && !*bound && tracks_cpu_memory) bound = policy.score_bound(node, gpu_only, reading);
  return bound;
}

}  // namespace

void Scorer::score(const ClusterModel& model, const PlacementPolicy& policy,
                   const PodDemand& demand, std::span<const std::string_view> offered,
                   std::span<std::optional<double>> raw, std::span<char> unknown) {
  std::unique_lock lock(mutex_, std::try_to_lock);
  score_exact(lock.owns_lock(), model, policy, demand, offered, raw, unknown);
}

void Scorer::score_exact(bool cached, const ClusterModel& model, const PlacementPolicy& policy,
                         const PodDemand& demand, std::span<const std::string_view> offered,
                         std::span<std::optional<double>> raw, std::span<char> unknown,
                         ExactPart* part) {
  const PodDemand gpu_only = gpus_only(demand);
  const std::optional<std::uint64_t> reading_version = policy.reading_version();
  FragmentationCache* readings = cached && reading_version ? &readings_ : nullptr;
  ExactPart whole;
  if (part == nullptr) {
    whole.memo_on = cached && !policy.reads_node_identity();
    whole.offer_size = offered.size();
    part = &whole;
  }
  StateMemo* memo = part->memo_on ? &memo_ : nullptr;
  SharedExclusions* shared = readings != nullptr ? &readings->exclusions() : nullptr;
  if (!part->begun) {
    if (cached) cache_.begin(demand, policy.state_version(), model.node_count());
    // Sized by the nodes it can meet, not the names offered: the memo is kept between
    // requests, and a body may name far more nodes (repeated, or unknown) than the model has.
    if (memo != nullptr) memo->begin(std::min(part->offer_size, model.node_count()));
    if (readings != nullptr) readings->begin(*reading_version, model.node_count());
    part->begun = true;
  }
  // The part's counts in locals for the loop, written back after it.
  std::size_t memo_lookups = part->memo_lookups;
  std::size_t memo_hits = part->memo_hits;
  model.visit_nodes(
      offered,
      [&](std::size_t i, const NodeState* node) {
        if (node == nullptr) {
          unknown[i] = 1;
          return;
        }
        if (!cached) {
          ScoreContext context;
          raw[i] = score_one(policy, *node, demand, gpu_only, context);
          return;
        }
        const std::size_t position = model.position_of(*node);
        const std::uint64_t stamp = model.stamp(position);
        if (const auto known = cache_.find(position, stamp)) {
          raw[i] = *known;
          return;
        }
        std::uint64_t hash = 0;
        std::optional<StateMemo::Remembered> same;
        if (memo != nullptr) {
          hash = state_hash(*node);
          same = memo->find(*node, hash);
          // Without a floor (the whole offer, or the rest after score_top's sample) every node
          // gets its score: a state bounded earlier is scored now, and remembered as scored.
          if (same && same->bounded && part->top == 0) same.reset();
        }
        if (same) {
          // A score is already among the best where it belongs; a bound stays below every later
          // floor, since the floor only rises.
          raw[i] = same->score;
          if (same->bounded) {
            cache_.store_bound(position, stamp, *same->score);
          } else {
            cache_.store(position, stamp, same->score);
          }
          ++memo_hits;
        } else {
          // With part->top (score_top's sample), the policy is given the lowest of the `top`
          // best distinct exact scores found so far as its floor, and may answer with a bound
          // below it, which the score cache and the memo keep as a bound.
          ScoreContext scoring{readings != nullptr ? &readings->at(position, stamp) : nullptr,
                               shared};
          if (part->top > 0 && best_.size() == part->top) scoring.floor = best_.back();
          raw[i] = score_one(policy, *node, demand, gpu_only, scoring);
          if (scoring.bounded) {
            cache_.store_bound(position, stamp, *raw[i]);
          } else {
            cache_.store(position, stamp, raw[i]);
            if (part->top > 0) admit_best(raw[i], part->top);
          }
          if (memo != nullptr) memo->remember(*node, hash, raw[i], scoring.bounded);
        }
        if (memo != nullptr && ++memo_lookups == kMemoTrial &&
            memo_hits * kMemoHitsPer < kMemoTrial) {
          memo = nullptr;
        }
      },
      /*with_gpus=*/demand.wants_gpu());
  part->memo_lookups = memo_lookups;
  part->memo_hits = memo_hits;
  part->memo_on = memo != nullptr;
}

void Scorer::admit_best(const std::optional<double>& score, std::size_t top) {
  if (!score || (best_.size() == top && !(*score > best_.back()))) return;
  const auto at = std::lower_bound(best_.begin(), best_.end(), *score, std::greater<>());
  if (at != best_.end() && *at == *score) return;
  best_.insert(at, *score);
  if (best_.size() > top) best_.pop_back();
}

void Scorer::score_top(const ClusterModel& model, const PlacementPolicy& policy,
                       const PodDemand& demand, std::span<const std::string_view> offered,
                       std::span<std::optional<double>> raw, std::span<char> unknown,
                       std::size_t top) {
  std::unique_lock lock(mutex_, std::try_to_lock);
  const PodDemand gpu_only = gpus_only(demand);
  const bool tracks_cpu_memory = demand.cpu_milli > 0 || demand.memory > 0;
  const std::optional<std::uint64_t> reading_version = policy.reading_version();
  // Bounds need the readings (kept under the lock) and a policy that gives them.
  if (!lock.owns_lock() || top == 0 || !reading_version || offered.size() < kMinBoundedOffer ||
      !(policy.bounds_scores(demand) || (tracks_cpu_memory && policy.bounds_scores(gpu_only)))) {
    score_exact(lock.owns_lock(), model, policy, demand, offered, raw, unknown);
    return;
  }
  // A demand the cache holds: score() where its table holds scores alone (read back), else
  // bounded again (the kept bounds and scores read back).
  const bool kept = cache_.begin(demand, policy.state_version(), model.node_count());
  if (kept && !cache_.holds_bounds()) {
    score_exact(true, model, policy, demand, offered, raw, unknown);
    return;
  }
  readings_.begin(*reading_version, model.node_count());
  pending_.clear();
  best_.clear();
  const auto admit = [&](const std::optional<double>& score) { admit_best(score, top); };
  // The node's exact score, or where the policy's computation shows it below the `top` best
  // distinct exact scores found so far, a bound of it below them (ScoreContext::floor); kept in
  // the score cache as what it is.
  // (`bound_reaches_floor`: the node's score_bound is not below the floor.)
  const auto score_or_bound = [&](const NodeState& node, std::size_t position, std::uint64_t stamp,
                                  bool bound_reaches_floor) {
    ScoreContext context{&readings_.at(position, stamp), &readings_.exclusions(),
                         best_.size() == top ? best_.back() : kNoFloor};
    context.bound_reaches_floor = bound_reaches_floor;
    const std::optional<double> score = score_one(policy, node, demand, gpu_only, context);
    if (context.bounded) {
      cache_.store_bound(position, stamp, *score);
    } else {
      cache_.store(position, stamp, score);
      admit(score);
    }
    return score;
  };
  // Visits the offered names from `from` on: marks those of no node, reads back the kept
  // scores (admitted), and hands every other node to fn(i, node, position, stamp). With
  // `kept_bounds` (the bounded first pass), a kept bound is read back too: it goes to pending_
  // where it is not below the threshold; without, its node goes to fn.
  const auto visit_rest = [&](std::size_t from, bool kept_bounds, auto&& fn) {
    model.visit_nodes(
        offered.subspan(from),
        [&](std::size_t k, const NodeState* node) {
          const std::size_t i = from + k;
          if (node == nullptr) {
            unknown[i] = 1;
            return;
          }
          const std::size_t position = model.position_of(*node);
          const std::uint64_t stamp = model.stamp(position);
          // Kept, or offered twice. A score or a bound, in no order: read once, and branched on
          // only for the few that can reach the top (most are below the threshold).
          const ScoreCache::Kept kept = cache_.read(position, stamp);
          using Held = ScoreCache::Held;
          if (kept.held == Held::kNothing || (!kept_bounds && kept.held == Held::kBound)) {
            fn(i, *node, position, stamp);
            return;
          }
          if (kept.held == Held::kInfeasible) {
            raw[i] = std::nullopt;
            return;
          }
          raw[i] = kept.value;
          if (best_.size() == top && kept.value < best_.back()) return;
          if (kept.held == Held::kScore) {
            admit(raw[i]);
          } else {
            pending_.push_back({kept.value, i, node});
          }
        },
        /*with_gpus=*/demand.wants_gpu());
  };
  std::size_t start = 0;  // the first name the bounded passes below visit
  if (!kept) {
    // A demand new to the cache: the first kSample names scored as score() scores them (its
    // memo trial included).
    ExactPart part;
    part.memo_on = !policy.reads_node_identity();
    part.offer_size = offered.size();
    part.top = top;
    score_exact(true, model, policy, demand, offered.first(kSample), raw.first(kSample),
                unknown.first(kSample), &part);
    // (A node the sample bounded is feasible, and below the top levels as its score is.)
    std::size_t feasible = 0;
    for (std::size_t i = 0; i < kSample; ++i) feasible += raw[i] ? 1 : 0;
    std::size_t tied = feasible;  // at the sample's top levels
    if (best_.size() == top) {
      tied = static_cast<std::size_t>(std::count_if(
          raw.begin(), raw.begin() + kSample,
          [&](const std::optional<double>& score) { return score && !(*score < best_.back()); }));
    }
    // Else the rest as score() scores it, the memo's trial carried on.
    if (part.memo_on) {
      part.top = 0;
      score_exact(true, model, policy, demand, offered.subspan(kSample), raw.subspan(kSample),
                  unknown.subspan(kSample), &part);
      return;
    }
    start = kSample;
    // Many ties at the top: every tied node needs its exact score, so bounds computed apart
    // would be paid on top of it. Each node is scored once, and the policy answers with a bound
    // only where its own computation shows the node below the top scores found so far.
    if (tied * kTiedPer > feasible) {
      visit_rest(
          start, /*kept_bounds=*/false,
          [&](std::size_t i, const NodeState& node, std::size_t position, std::uint64_t stamp) {
            raw[i] = score_or_bound(node, position, stamp, /*bound_reaches_floor=*/false);
          });
      return;
    }
  }
  // First pass over the rest: the exact score where it is kept or cheap to know (infeasible, no
  // bound), else an upper bound (kept ones read back by visit_rest), kept for the second pass.
  visit_rest(start, /*kept_bounds=*/true,
             [&](std::size_t i, const NodeState& node, std::size_t position, std::uint64_t stamp) {
               const std::optional<std::optional<double>> bound =
                   bound_one(policy, node, demand, gpu_only, tracks_cpu_memory,
                             &readings_.at(position, stamp));
               if (bound && *bound) {
                 cache_.store_bound(position, stamp, **bound);
                 raw[i] = **bound;
                 // (Below the threshold now, it stays below: the threshold only rises.)
                 if (best_.size() < top || !(**bound < best_.back()))
                   pending_.push_back({**bound, i, &node});
               } else if (bound) {  // infeasible: exact
                 raw[i] = std::nullopt;
                 cache_.store(position, stamp, std::nullopt);
               } else {
                 raw[i] = score_or_bound(node, position, stamp, /*bound_reaches_floor=*/false);
               }
             });
  // Second pass: the exact score of every node whose bound is not below the top-th best
  // distinct exact score found so far (the threshold only rises). The highest bounds are taken
  // first, so that the threshold rises early.
  // (For a demand whose table was kept, the first pass read most nodes' exact scores back: the
  // threshold is close to where it ends, and the order matters little.)
  if (!kept || best_.size() < top) {
    const auto higher = [](const Pending& a, const Pending& b) { return a.bound > b.bound; };
    const std::size_t first = std::min(pending_.size(), kFirstExact * top);
    std::nth_element(pending_.begin(), pending_.begin() + static_cast<std::ptrdiff_t>(first),
                     pending_.end(), higher);
    std::sort(pending_.begin(), pending_.begin() + static_cast<std::ptrdiff_t>(first), higher);
  }
  for (const Pending& node : pending_) {
    if (best_.size() == top && node.bound < best_.back()) continue;  // stays the bound
    const std::size_t position = model.position_of(*node.node);
    const std::uint64_t stamp = model.stamp(position);
    if (const auto known = cache_.find(position, stamp)) {  // offered twice
      raw[node.index] = *known;
      continue;
    }
    raw[node.index] = score_or_bound(*node.node, position, stamp, /*bound_reaches_floor=*/true);
  }
}

void Scorer::score_dra(const ClusterModel& model, const PlacementPolicy& policy,
                       std::span<const DraRequest> requests, std::int64_t cpu_milli,
                       std::int64_t memory, std::span<const std::string_view> offered,
                       std::span<std::optional<double>> raw, std::span<char> unknown) {
  PodDemand demand;
  demand.per_gpu = 0;
  demand.cpu_milli = cpu_milli;
  demand.memory = memory;
  const PodDemand gpu_only = gpus_only(demand);
  model.visit_nodes(offered, [&](std::size_t i, const NodeState* node) {
    if (node == nullptr) {
      unknown[i] = 1;
      return;
    }
    const auto takes = model.dra().first_fit(*node, requests);
    if (!takes) return;
    raw[i] = policy.score_taken(*node, demand, *takes);
    // As score(): where our view of the node's CPU or memory disagrees with kube-scheduler's,
    // judge it on GPUs alone.
    if (!raw[i]) raw[i] = policy.score_taken(*node, gpu_only, *takes);
  });
}

}  // namespace gpushare::core
