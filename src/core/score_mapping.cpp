#include "gpushare/core/score_mapping.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace gpushare::core {

std::vector<int> min_max_scores(std::span<const std::optional<double>> raw, int max_score) {
  std::vector<int> result(raw.size(), 0);
  double lo = 0;
  double hi = 0;
  bool any = false;
  for (const auto& score : raw) {
    if (!score) continue;
    lo = any ? std::min(lo, *score) : *score;
    hi = any ? std::max(hi, *score) : *score;
    any = true;
  }
  if (!any) return result;
  for (std::size_t i = 0; i < raw.size(); ++i) {
    if (!raw[i]) continue;
    if (hi - lo <= 1e-12) {
      result[i] = max_score;
    } else {
      const double scaled = 1.0 + (max_score - 1) * (*raw[i] - lo) / (hi - lo);
      result[i] = std::clamp(static_cast<int>(std::lround(scaled)), 1, max_score);
    }
  }
  return result;
}

namespace {

// How many of `best` (distinct, best first) are above `score`: its position among them. A
// binary search by selects, not branches: where many nodes tie at several top levels, which
// way each step goes is as unpredictable as the scores.
[[gnu::always_inline]] inline std::size_t count_above(const std::vector<double>& best,
                                                      double score) {
  if (best.empty()) return 0;
  const double* const first = best.data();
  const double* base = first;  // the answer is in [base - first, base - first + n]
  std::size_t n = best.size();
  while (n > 1) {
    const std::size_t half = n / 2;
    base = base[half] > score ? base + half : base;
    n -= half;
  }
  return static_cast<std::size_t>(base - first) + static_cast<std::size_t>(*base > score);
}

}  // namespace

std::vector<int> rank_scores(std::span<const std::optional<double>> raw, int max_score) {
  // Only the best max_score distinct values get levels of their own (the rest share 1), so only
  // they are kept, best first: one pass over the scores, each compared with the worst kept.
  // Which nodes are feasible follows no pattern a branch predictor can learn, so feasibility is
  // branched on once per node, where the first loop reads the score into a dense copy (an
  // infeasible node as -infinity, below every kept value); the second decides on the copy
  // without that branch (level 0 by multiplication). Ties and infinite scores get the levels of
  // the definition: a feasible node scored -infinity is told from an infeasible one by its
  // optional, never by its value.
  constexpr double kInfeasible = -std::numeric_limits<double>::infinity();
  const std::size_t keep = max_score > 0 ? static_cast<std::size_t>(max_score) : 0;
  std::vector<double> best;
  best.reserve(keep + 1);
  // The last score looked up and its position: where most nodes tie at one level, the one
  // branch that tells a repeat is predictable and spares the search. It stays right when
  // `best` changes: admit inserts only the score it just looked up, at the position found, and
  // only a value below it can be dropped. (The start, NaN, equals no score.)
  double last_score = std::numeric_limits<double>::quiet_NaN();
  std::size_t last_position = 0;
  const auto position_of = [&](double score) {
    if (score == last_score) return last_position;
    last_score = score;
    last_position = count_above(best, score);
    return last_position;
  };
  const auto admit = [&](double score) {
    const std::size_t position = position_of(score);
    if (position < best.size() && best[position] == score) return;
    best.insert(best.begin() + static_cast<std::ptrdiff_t>(position), score);
    if (best.size() > keep) best.pop_back();
  };
  std::vector<double> values(raw.size());
  for (std::size_t i = 0; i < raw.size(); ++i) {
    const double score = raw[i].value_or(kInfeasible);
    values[i] = score;
    if (keep > 0 && (best.size() < keep ? raw[i].has_value() : score > best.back())) admit(score);
  }
  std::vector<int> result(raw.size(), 0);
  // Below every kept value: the level after the last kept one (most nodes, on a large offer).
  const int below = std::max(1, max_score - static_cast<int>(best.size()));
  const double worst_kept = best.empty() ? kInfeasible : best.back();
  for (std::size_t i = 0; i < raw.size(); ++i) {
    const double score = values[i];
    const bool feasible = raw[i].has_value();
    // Feasible and not below the worst kept value; `&`, not `&&`: one branch.
    if (feasible & !(score < worst_kept)) {
      const auto rank = static_cast<int>(position_of(score));  // 0 = best
      result[i] = std::max(1, max_score - rank);
    } else {
      result[i] = below * static_cast<int>(feasible);
    }
  }
  return result;
}

std::vector<int> map_scores(std::span<const std::optional<double>> raw, ScoreMapping mapping,
                            int max_score) {
  return mapping == ScoreMapping::kRank ? rank_scores(raw, max_score)
                                        : min_max_scores(raw, max_score);
}

std::optional<ScoreMapping> score_mapping_named(std::string_view name) {
  if (name == "minmax") return ScoreMapping::kMinMax;
  if (name == "rank") return ScoreMapping::kRank;
  return std::nullopt;
}

std::string_view score_mapping_name(ScoreMapping mapping) {
  return mapping == ScoreMapping::kRank ? "rank" : "minmax";
}

}  // namespace gpushare::core
