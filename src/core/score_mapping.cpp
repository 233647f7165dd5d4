#include "gpushare/core/score_mapping.h"

#include <algorithm>
#include <cmath>
#include <functional>

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

std::vector<int> rank_scores(std::span<const std::optional<double>> raw, int max_score) {
  // Only the best max_score distinct values get levels of their own (the rest share 1), so only
  // they are kept, best first: one pass over the scores, each compared with the worst kept.
  const std::size_t keep = max_score > 0 ? static_cast<std::size_t>(max_score) : 0;
  std::vector<double> best;
  best.reserve(keep + 1);
  for (const auto& score : raw) {
    if (!score || keep == 0) continue;
    if (best.size() == keep && !(*score > best.back())) continue;
    const auto position = std::lower_bound(best.begin(), best.end(), *score, std::greater<>());
    if (position != best.end() && *position == *score) continue;
    best.insert(position, *score);
    if (best.size() > keep) best.pop_back();
  }
  std::vector<int> result(raw.size(), 0);
  // Below every kept value: the level after the last kept one (most nodes, on a large offer).
  const int below = std::max(1, max_score - static_cast<int>(best.size()));
  for (std::size_t i = 0; i < raw.size(); ++i) {
    if (!raw[i]) continue;
    if (!best.empty() && *raw[i] < best.back()) {
      result[i] = below;
      continue;
    }
    const auto position = std::lower_bound(best.begin(), best.end(), *raw[i], std::greater<>());
    const auto rank = static_cast<int>(position - best.begin());  // 0 = best
    result[i] = std::max(1, max_score - rank);
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
