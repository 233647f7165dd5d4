#include "gpushare/sim/report.h"

#include <gtest/gtest.h>

#include <cmath>
#include <sstream>

namespace gpushare::sim {
namespace {

RunResult run(std::string policy, std::uint64_t seed, std::vector<CurvePoint> curve,
              double final_alloc) {
  RunResult r;
  r.policy = std::move(policy);
  r.seed = seed;
  r.curve = std::move(curve);
  r.final_alloc_pct = final_alloc;
  r.seconds = 3;
  r.cpu_seconds = 1.5;
  return r;
}

std::vector<RunResult> sample_runs() {
  return {run("a<b", 1, {{80, 80, 1}, {90, 89, 2}, {100, 94, 3}, {110, 95, 3}}, 95),
          run("a<b", 2, {{80, 80, 1}, {90, 89, 2}, {100, 96, 3}}, 97),
          run("c", 1, {{80, 79, 0}, {100, 90, 0}, {120, 91, 0}}, 91)};
}

TEST(Summaries, AverageSeedsOverPointsEveryRunHas) {
  const auto summaries = summarize(sample_runs());
  ASSERT_EQ(summaries.size(), 2u);
  EXPECT_EQ(summaries[0].policy, "a<b");
  EXPECT_EQ(summaries[0].seeds, 2u);
  EXPECT_DOUBLE_EQ(summaries[0].alloc_at(100), 95.0);
  EXPECT_TRUE(std::isnan(summaries[0].alloc_at(110)));  // only one of two seeds got there
  EXPECT_DOUBLE_EQ(summaries[0].final_alloc_pct, 96.0);
  EXPECT_NEAR(summaries[0].alloc_stddev_at_100, std::sqrt(2.0), 1e-12);
  EXPECT_DOUBLE_EQ(summaries[1].alloc_at(120), 91.0);
}

TEST(Summaries, UnallocatedGpusAsThePaperCountsThem) {
  EXPECT_NEAR(unallocated_gpus(95.23, 6212), 296.3, 0.1);
}

TEST(Table, OneRowPerPolicyWithDashesForMissingPoints) {
  std::ostringstream out;
  write_table(out, summarize(sample_runs()), 100);
  const std::string text = out.str();
  EXPECT_NE(text.find("| policy | seeds | 80 % | 90 % | 100 % | 110 % | 120 % |"),
            std::string::npos);
  EXPECT_NE(text.find("| a<b | 2 | 80.00 | 89.00 | 95.00 | - | - | 5 | 4 | 1.50 |"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("| c | 1 | 79.00 | - | 90.00 | - | 91.00 | 10 | 9 | 1.50 |"),
            std::string::npos)
      << text;
}

TEST(Svg, OneLineAndLegendEntryPerPolicyEscaped) {
  std::ostringstream out;
  write_svg(out, summarize(sample_runs()), "title & more");
  const std::string svg = out.str();
  EXPECT_EQ(svg.rfind("<svg ", 0), 0u);
  EXPECT_NE(svg.find("</svg>"), std::string::npos);
  EXPECT_NE(svg.find("title &amp; more"), std::string::npos);
  EXPECT_NE(svg.find(">a&lt;b</text>"), std::string::npos);
  std::size_t lines = 0;
  for (std::size_t at = svg.find("stroke-width=\"1.8\""); at != std::string::npos;
       at = svg.find("stroke-width=\"1.8\"", at + 1)) {
    ++lines;
  }
  EXPECT_EQ(lines, 2u);
}

}  // namespace
}  // namespace gpushare::sim
