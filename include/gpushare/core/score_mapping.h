#pragma once
// How prioritize turns a policy's raw node scores into kube-scheduler's extender scale 0..10.
//
// kube-scheduler adds score x weight x 10 to the sum of its own score plugins (each 0..100 x its
// weight), so the mapping decides how much of the policy's order survives:
//  - min-max: 1..10 by linear position between the worst and the best feasible node. Coarse:
//    nodes whose raw scores differ can share a level (a 4 GiB pod: an exact 4 GiB hole and a 96 GiB
//    hole on a 4 TiB card both land on 10), and kube's own plugins then decide between them.
//  - rank: the best distinct raw score gets 10, the next 9, ... the tenth and below 1. The
//    policy's order among its ten best candidates is kept exactly, whatever the scale of the raw
//    scores; equal raw scores share a level.
// Infeasible nodes (nullopt) get 0 under both.

#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace gpushare::core {

enum class ScoreMapping { kMinMax, kRank };

// The top of kube-scheduler's extender scale (MaxExtenderPriority).
inline constexpr int kMaxExtenderScore = 10;

// Min-max: infeasible nodes (nullopt) get 0, feasible ones 1..max_score by linear position over
// the feasible set, so the best node always gets max_score.
std::vector<int> min_max_scores(std::span<const std::optional<double>> raw,
                                int max_score = kMaxExtenderScore);
std::vector<int> rank_scores(std::span<const std::optional<double>> raw,
                             int max_score = kMaxExtenderScore);
// The best distinct raw scores rank_scores(raw, max_score) tells apart (levels max_score down
// to 2): every other feasible node gets 1 whatever its raw score, so raw values below all of
// those give the same levels (core/scorer.h, Scorer::score_top).
constexpr std::size_t rank_levels_apart(int max_score = kMaxExtenderScore) {
  return max_score > 1 ? static_cast<std::size_t>(max_score - 1) : 0;
}
std::vector<int> map_scores(std::span<const std::optional<double>> raw, ScoreMapping mapping,
                            int max_score = kMaxExtenderScore);

// "minmax" or "rank"; nullopt otherwise.
std::optional<ScoreMapping> score_mapping_named(std::string_view name);
std::string_view score_mapping_name(ScoreMapping mapping);
inline constexpr std::string_view kScoreMappingNames = "minmax, rank";

}  // namespace gpushare::core
