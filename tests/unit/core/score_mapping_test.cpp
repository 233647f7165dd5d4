// Raw policy scores onto kube-scheduler's 0..10 extender scale.

#include "gpushare/core/score_mapping.h"

#include <gtest/gtest.h>

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
