// Raw policy scores onto kube-scheduler's 0..10 extender scale.

#include "gpushare/core/score_mapping.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <limits>
#include <random>

#include "gpushare/core/placement_policy.h"

namespace gpushare::core {
namespace {

TEST(RankScores, BestDistinctScoresCountDownFromTen) {
  const std::vector<std::optional<double>> raw{0.5, std::nullopt, 0.9, 0.1, 0.9};
  EXPECT_EQ(rank_scores(raw), (std::vector<int>{9, 0, 10, 8, 10}));  // equal raw scores share
}

TEST(RankScores, KeepsTheOrderMinMaxLumpsTogether) {
  // A 4-unit pod: an exact hole (1.0), a near-exact one, and a node with a huge hole far below.
  const std::vector<std::optional<double>> raw{1.0, 0.99, 0.0};
  EXPECT_EQ(min_max_scores(raw), (std::vector<int>{10, 10, 1}));  // min-max: a tie at 10
  EXPECT_EQ(rank_scores(raw), (std::vector<int>{10, 9, 8}));
}

TEST(RankScores, BeyondTheTenthEveryFeasibleNodeGetsOne) {
  std::vector<std::optional<double>> raw;
  for (int i = 0; i < 14; ++i) raw.emplace_back(static_cast<double>(i));
  const std::vector<int> scores = rank_scores(raw);
  EXPECT_EQ(scores[13], 10);
  EXPECT_EQ(scores[5], 2);
  EXPECT_EQ(scores[4], 1);
  EXPECT_EQ(scores[0], 1);
}

// The definition: every distinct score sorted best first, the best max_score of them levels
// max_score..1 by position, the rest 1, a node without a score 0.
std::vector<int> ranks_by_full_sort(const std::vector<std::optional<double>>& raw, int max_score) {
  std::vector<double> distinct;
  for (const auto& score : raw) {
    if (score) distinct.push_back(*score);
  }
  std::sort(distinct.begin(), distinct.end(), std::greater<>());
  distinct.erase(std::unique(distinct.begin(), distinct.end()), distinct.end());
  std::vector<int> result;
  for (const auto& score : raw) {
    if (!score) {
      result.push_back(0);
      continue;
    }
    const auto rank = std::find(distinct.begin(), distinct.end(), *score) - distinct.begin();
    result.push_back(std::max(1, max_score - static_cast<int>(rank)));
  }
  return result;
}

TEST(RankScores, EqualsTheFullSortOnRandomScoresWithTiesAndGaps) {
  std::mt19937 random(7);
  for (int round = 0; round < 300; ++round) {
    const int size = std::uniform_int_distribution<int>(0, 400)(random);
    // Few distinct values in some rounds (many ties, as nodes in equal states), many in others.
    const int levels = std::uniform_int_distribution<int>(1, round % 2 == 0 ? 12 : 100000)(random);
    std::vector<std::optional<double>> raw;
    for (int i = 0; i < size; ++i) {
      if (std::uniform_int_distribution<int>(0, 9)(random) == 0) {
        raw.emplace_back(std::nullopt);
      } else {
        raw.emplace_back(std::uniform_int_distribution<int>(0, levels)(random) * 0.37 - 5.0);
      }
    }
    for (const int max_score : {0, 1, 10, 100}) {
      ASSERT_EQ(rank_scores(raw, max_score), ranks_by_full_sort(raw, max_score))
          << "round " << round << ", max_score " << max_score;
    }
  }
}

// rank_scores reads an infeasible node as -infinity internally: a feasible node scored
// -infinity (or +infinity) must still get its level, never 0.
TEST(RankScores, InfiniteScoresAreScoresAndInfeasibleNodesStayZero) {
  constexpr double kInf = std::numeric_limits<double>::infinity();
  const std::vector<std::optional<double>> few{-kInf, std::nullopt, 1.0, kInf, -kInf};
  EXPECT_EQ(rank_scores(few), (std::vector<int>{8, 0, 9, 10, 8}));
  std::mt19937 random(11);
  for (int round = 0; round < 200; ++round) {
    const int size = std::uniform_int_distribution<int>(0, 300)(random);
    std::vector<std::optional<double>> raw;
    for (int i = 0; i < size; ++i) {
      switch (std::uniform_int_distribution<int>(0, 5)(random)) {
        case 0:
        case 1:
        case 2:
          raw.emplace_back(std::nullopt);  // half the nodes infeasible, in no order
          break;
        case 3:
          raw.emplace_back(std::uniform_int_distribution<int>(0, 1)(random) == 0 ? -kInf : kInf);
          break;
        default:
          raw.emplace_back(std::uniform_int_distribution<int>(0, round % 30)(random) * 0.5);
      }
    }
    for (const int max_score : {1, 10}) {
      ASSERT_EQ(rank_scores(raw, max_score), ranks_by_full_sort(raw, max_score))
          << "round " << round << ", max_score " << max_score;
    }
  }
}

TEST(ScoreMapping, NamesAndDispatch) {
  EXPECT_EQ(score_mapping_named("rank"), ScoreMapping::kRank);
  EXPECT_EQ(score_mapping_named("minmax"), ScoreMapping::kMinMax);
  EXPECT_EQ(score_mapping_named("MinMax"), std::nullopt);
  const std::vector<std::optional<double>> raw{2.0, 1.0, 0.0};
  EXPECT_EQ(map_scores(raw, ScoreMapping::kRank), (std::vector<int>{10, 9, 8}));
  EXPECT_EQ(map_scores(raw, ScoreMapping::kMinMax), (std::vector<int>{10, 6, 1}));
  EXPECT_EQ(score_mapping_name(ScoreMapping::kRank), "rank");
}

}  // namespace
}  // namespace gpushare::core
