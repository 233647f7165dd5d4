#pragma once
// Output of simulation runs: the CSV of every point, a table per policy, an SVG line plot.

#include <ostream>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "gpushare/sim/simulator.h"

namespace gpushare::sim {

inline constexpr std::string_view kCsvHeader = "policy,seed,arrived_pct,alloc_pct,frag_pct";

// One row per run and integer arrived %.
void write_curve_csv(std::ostream& out, std::span<const RunResult> runs);

// A policy's runs averaged over seeds.
struct PolicySummary {
  std::string policy;
  std::size_t seeds = 0;
  std::vector<CurvePoint> curve;  // mean over seeds, arrived % present in every run
  double final_alloc_pct = 0;     // after the last pod, mean over seeds
  double mean_seconds = 0;
  double mean_cpu_seconds = 0;
  double alloc_stddev_at_100 = 0;  // seed-to-seed standard deviation at 100 % arrival

  // Allocation at an integer arrived %, NaN if no point.
  double alloc_at(int arrived_pct) const;
};

// Groups runs by policy in order of first appearance.
std::vector<PolicySummary> summarize(std::span<const RunResult> runs);

// Idle GPUs (fractions included) left at an allocation percentage, as the paper counts them.
double unallocated_gpus(double alloc_pct, double capacity_gpus);

// Markdown table: allocation % at 80/90/100/110/120 % arrival, unallocated GPUs at 100 % and at
// the end, CPU seconds per run.
void write_table(std::ostream& out, std::span<const PolicySummary> summaries, double capacity_gpus);

// Allocation % vs. arrived %, one line per policy.
void write_svg(std::ostream& out, std::span<const PolicySummary> summaries, std::string_view title);

}  // namespace gpushare::sim
