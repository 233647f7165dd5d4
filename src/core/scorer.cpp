#include "gpushare/core/scorer.h"

#include <algorithm>
#include <functional>

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

PodDemand gpus_only(PodDemand demand) {
  demand.cpu_milli = 0;
  demand.memory = 0;
  return demand;
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
                         std::span<std::optional<double>> raw, std::span<char> unknown) {
  const PodDemand gpu_only = gpus_only(demand);
  const bool tracks_cpu_memory = demand.cpu_milli > 0 || demand.memory > 0;
  StateMemo* memo = cached && !policy.reads_node_identity() ? &memo_ : nullptr;
  const std::optional<std::uint64_t> reading_version = policy.reading_version();
  FragmentationCache* readings = cached && reading_version ? &readings_ : nullptr;
  if (cached) cache_.begin(demand, policy.state_version(), model.node_count());
  // Sized by the nodes it can meet, not the names offered: the memo is kept between requests,
  // and a body may name far more nodes (repeated, or unknown) than the model has.
  if (memo != nullptr) memo->begin(std::min(offered.size(), model.node_count()));
  if (readings != nullptr) readings->begin(*reading_version, model.node_count());
  std::size_t memo_lookups = 0;
  std::size_t memo_hits = 0;
  const auto compute = [&](const NodeState& node, NodeReading* reading) {
    std::optional<double> score = policy.score_with_reading(node, demand, reading);
    if (!score && tracks_cpu_memory) score = policy.score_with_reading(node, gpu_only, reading);
    return score;
  };
  model.visit_nodes(
      offered,
      [&](std::size_t i, const NodeState* node) {
        if (node == nullptr) {
          unknown[i] = 1;
          return;
        }
        if (!cached) {
          raw[i] = compute(*node, nullptr);
          return;
        }
        const std::size_t position = model.position_of(*node);
        const std::uint64_t stamp = model.stamp(position);
        const auto reading = [&]() -> NodeReading* {  // only when scored
          return readings != nullptr ? &readings->at(position, stamp) : nullptr;
        };
        if (const auto known = cache_.find(position, stamp)) {
          raw[i] = *known;
          return;
        }
        if (memo != nullptr) {
          const std::uint64_t hash = state_hash(*node);
          if (const auto same = memo->find(*node, hash)) {
            raw[i] = *same;
            ++memo_hits;
          } else {
            raw[i] = compute(*node, reading());
            memo->remember(*node, hash, raw[i]);
          }
          if (++memo_lookups == kMemoTrial && memo_hits * kMemoHitsPer < memo_lookups)
            memo = nullptr;
        } else {
          raw[i] = compute(*node, reading());
        }
        cache_.store(position, stamp, raw[i]);
      },
      /*with_gpus=*/demand.wants_gpu());
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
  if (!lock.owns_lock() || top == 0 || !reading_version ||
      !(policy.bounds_scores(demand) || (tracks_cpu_memory && policy.bounds_scores(gpu_only)))) {
    score_exact(lock.owns_lock(), model, policy, demand, offered, raw, unknown);
    return;
  }
  cache_.begin(demand, policy.state_version(), model.node_count());
  readings_.begin(*reading_version, model.node_count());
  pending_.clear();
  best_.clear();
  // The best `top` distinct exact scores met so far, best first (as rank_scores keeps them).
  const auto admit = [&](const std::optional<double>& score) {
    if (!score || (best_.size() == top && !(*score > best_.back()))) return;
    const auto at = std::lower_bound(best_.begin(), best_.end(), *score, std::greater<>());
    if (at != best_.end() && *at == *score) return;
    best_.insert(at, *score);
    if (best_.size() > top) best_.pop_back();
  };
  const auto exact = [&](const NodeState& node, std::size_t position, std::uint64_t stamp) {
    NodeReading* reading = &readings_.at(position, stamp);
    std::optional<double> score = policy.score_with_reading(node, demand, reading);
    if (!score && tracks_cpu_memory) score = policy.score_with_reading(node, gpu_only, reading);
    cache_.store(position, stamp, score);
    admit(score);
    return score;
  };
  // First pass: the exact score where it is kept or cheap to know (infeasible, no bound), else
  // an upper bound, kept for the second pass.
  model.visit_nodes(
      offered,
      [&](std::size_t i, const NodeState* node) {
        if (node == nullptr) {
          unknown[i] = 1;
          return;
        }
        const std::size_t position = model.position_of(*node);
        const std::uint64_t stamp = model.stamp(position);
        if (const auto known = cache_.find(position, stamp)) {
          raw[i] = *known;
          admit(raw[i]);
          return;
        }
        std::optional<std::optional<double>> bound;
        if (const auto kept = cache_.find_bound(position, stamp)) {
          bound = std::optional<double>(*kept);
        } else {
          const NodeReading* reading = &readings_.at(position, stamp);
          bound = policy.score_bound(*node, demand, reading);
          // As score_exact: infeasible for the pod's CPU or memory, judged on GPUs alone.
          if (bound && !*bound && tracks_cpu_memory)
            bound = policy.score_bound(*node, gpu_only, reading);
          if (bound && *bound) cache_.store_bound(position, stamp, **bound);
        }
        if (bound && *bound) {
          raw[i] = **bound;
          pending_.push_back({**bound, i, node});
        } else if (bound) {  // infeasible: exact
          raw[i] = std::nullopt;
          cache_.store(position, stamp, std::nullopt);
        } else {
          raw[i] = exact(*node, position, stamp);
        }
      },
      /*with_gpus=*/demand.wants_gpu());
  // Second pass: the exact score of every node whose bound is not below the top-th best
  // distinct exact score found so far (the threshold only rises). The highest bounds are taken
  // first, so that the threshold rises early.
  const auto higher = [](const Pending& a, const Pending& b) { return a.bound > b.bound; };
  const std::size_t first = std::min(pending_.size(), kFirstExact * top);
  std::nth_element(pending_.begin(), pending_.begin() + static_cast<std::ptrdiff_t>(first),
                   pending_.end(), higher);
  std::sort(pending_.begin(), pending_.begin() + static_cast<std::ptrdiff_t>(first), higher);
  for (const Pending& node : pending_) {
    if (best_.size() == top && node.bound < best_.back()) continue;  // stays the bound
    const std::size_t position = model.position_of(*node.node);
    const std::uint64_t stamp = model.stamp(position);
    if (const auto known = cache_.find(position, stamp)) {  // offered twice
      raw[node.index] = *known;
      continue;
    }
    raw[node.index] = exact(*node.node, position, stamp);
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
