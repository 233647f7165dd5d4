#include "gpushare/sim/report.h"

#include <fmt/format.h>
#include <fmt/ostream.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

namespace gpushare::sim {
namespace {

std::string xml_escaped(std::string_view text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '&':
        out += "&amp;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

// Colour-blind-safe palette (Okabe-Ito, then Tol's muted colours).
constexpr std::string_view kColours[] = {"#000000", "#e69f00", "#56b4e9", "#009e73",
                                         "#d55e00", "#0072b2", "#cc79a7", "#999933",
                                         "#882255", "#44aa99", "#aa4499", "#332288"};

}  // namespace

void write_curve_csv(std::ostream& out, std::span<const RunResult> runs) {
  out << kCsvHeader << '\n';
  for (const auto& run : runs) {
    for (const auto& p : run.curve) {
      fmt::print(out, "{},{},{},{:.4f},{:.4f}\n", run.policy, run.seed, p.arrived_pct, p.alloc_pct,
                 p.frag_pct);
    }
  }
}

double PolicySummary::alloc_at(int arrived_pct) const {
  for (const auto& p : curve) {
    if (p.arrived_pct == arrived_pct) return p.alloc_pct;
  }
  return std::numeric_limits<double>::quiet_NaN();
}

std::vector<PolicySummary> summarize(std::span<const RunResult> runs) {
  std::vector<PolicySummary> summaries;
  for (const auto& run : runs) {
    auto it = std::find_if(summaries.begin(), summaries.end(),
                           [&](const PolicySummary& s) { return s.policy == run.policy; });
    if (it != summaries.end()) continue;
    PolicySummary summary;
    summary.policy = run.policy;
    std::map<int, std::pair<double, double>> sums;  // arrived % -> (alloc, frag)
    std::map<int, std::size_t> counts;
    std::vector<double> at_100;
    for (const auto& other : runs) {
      if (other.policy != run.policy) continue;
      ++summary.seeds;
      summary.final_alloc_pct += other.final_alloc_pct;
      summary.mean_seconds += other.seconds;
      summary.mean_cpu_seconds += other.cpu_seconds;
      for (const auto& p : other.curve) {
        sums[p.arrived_pct].first += p.alloc_pct;
        sums[p.arrived_pct].second += p.frag_pct;
        ++counts[p.arrived_pct];
        if (p.arrived_pct == 100) at_100.push_back(p.alloc_pct);
      }
    }
    summary.final_alloc_pct /= static_cast<double>(summary.seeds);
    summary.mean_seconds /= static_cast<double>(summary.seeds);
    summary.mean_cpu_seconds /= static_cast<double>(summary.seeds);
    for (const auto& [pct, sum] : sums) {
      if (counts[pct] != summary.seeds) continue;  // beyond the shortest run
      const auto n = static_cast<double>(summary.seeds);
      summary.curve.push_back({pct, sum.first / n, sum.second / n});
    }
    if (at_100.size() > 1) {
      double mean = 0;
      for (double v : at_100) mean += v;
      mean /= static_cast<double>(at_100.size());
      double squares = 0;
      for (double v : at_100) squares += (v - mean) * (v - mean);
      summary.alloc_stddev_at_100 = std::sqrt(squares / static_cast<double>(at_100.size() - 1));
    }
    summaries.push_back(std::move(summary));
  }
  return summaries;
}

double unallocated_gpus(double alloc_pct, double capacity_gpus) {
  return capacity_gpus * (100.0 - alloc_pct) / 100.0;
}

void write_table(std::ostream& out, std::span<const PolicySummary> summaries,
                 double capacity_gpus) {
  fmt::print(out,
             "| policy | seeds | 80 % | 90 % | 100 % | 110 % | 120 % | unallocated GPUs at 100 % "
             "| final unallocated GPUs | CPU s/run |\n");
  fmt::print(out, "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
  for (const auto& s : summaries) {
    fmt::print(out, "| {} | {} |", s.policy, s.seeds);
    for (int pct : {80, 90, 100, 110, 120}) {
      const double alloc = s.alloc_at(pct);
      if (std::isnan(alloc)) {
        fmt::print(out, " - |");
      } else {
        fmt::print(out, " {:.2f} |", alloc);
      }
    }
    const double at_100 = s.alloc_at(100);
    if (std::isnan(at_100)) {
      fmt::print(out, " - |");
    } else {
      fmt::print(out, " {:.0f} |", unallocated_gpus(at_100, capacity_gpus));
    }
    fmt::print(out, " {:.0f} | {:.2f} |\n", unallocated_gpus(s.final_alloc_pct, capacity_gpus),
               s.mean_cpu_seconds);
  }
}

void write_svg(std::ostream& out, std::span<const PolicySummary> summaries,
               std::string_view title) {
  // Plot area in pixels and the data ranges it shows.
  constexpr double kWidth = 760, kHeight = 480;
  constexpr double kLeft = 64, kRight = 200, kTop = 40, kBottom = 56;
  const double plot_w = kWidth - kLeft - kRight;
  const double plot_h = kHeight - kTop - kBottom;
  // The interesting part is where policies part ways: allocation from a little below the worst
  // policy at 90 % arrival, arrival from where the ideal line enters that range. Lines leaving
  // the box are clipped.
  double x_max = 100;
  double y_floor = 100;
  for (const auto& s : summaries) {
    for (const auto& p : s.curve) {
      x_max = std::max(x_max, static_cast<double>(p.arrived_pct));
      if (p.arrived_pct >= 90) y_floor = std::min(y_floor, p.alloc_pct);
    }
  }
  x_max = std::ceil(x_max / 10) * 10;
  const double y_min = std::clamp(std::floor((y_floor - 2) / 5) * 5, 0.0, 95.0);
  const double y_max = 100;
  const double y_step = y_max - y_min > 30 ? 10 : y_max - y_min > 12 ? 5 : 2;
  const double x_min = std::min(90.0, std::floor(y_min / 10) * 10);
  const auto px = [&](double x) { return kLeft + (x - x_min) / (x_max - x_min) * plot_w; };
  const auto py = [&](double y) { return kTop + (y_max - y) / (y_max - y_min) * plot_h; };

  fmt::print(out,
             "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{1}\" "
             "viewBox=\"0 0 {0} {1}\" font-family=\"sans-serif\" font-size=\"12\">\n",
             kWidth, kHeight);
  fmt::print(out, "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n");
  fmt::print(out, "<text x=\"{}\" y=\"22\" text-anchor=\"middle\" font-size=\"14\">{}</text>\n",
             kLeft + plot_w / 2, xml_escaped(title));
  // Grid and axes.
  for (double x = x_min; x <= x_max + 1e-9; x += 10) {
    fmt::print(out,
               "<line x1=\"{0:.1f}\" y1=\"{1:.1f}\" x2=\"{0:.1f}\" y2=\"{2:.1f}\" stroke=\"#ddd\"/>"
               "<text x=\"{0:.1f}\" y=\"{3:.1f}\" text-anchor=\"middle\">{4:.0f}</text>\n",
               px(x), kTop, kTop + plot_h, kTop + plot_h + 16, x);
  }
  for (double y = y_min; y <= y_max + 1e-9; y += y_step) {
    fmt::print(out,
               "<line x1=\"{0:.1f}\" y1=\"{1:.1f}\" x2=\"{2:.1f}\" y2=\"{1:.1f}\" stroke=\"#ddd\"/>"
               "<text x=\"{3:.1f}\" y=\"{4:.1f}\" text-anchor=\"end\">{5:.0f}</text>\n",
               kLeft, py(y), kLeft + plot_w, kLeft - 6, py(y) + 4, y);
  }
  fmt::print(
      out,
      "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"none\" stroke=\"#444\"/>\n"
      "<clipPath id=\"plot\"><rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\"/></clipPath>\n",
      kLeft, kTop, plot_w, plot_h, kLeft, kTop, plot_w, plot_h);
  // The ideal: everything that arrived is allocated, up to the cluster's capacity.
  fmt::print(out,
             "<polyline fill=\"none\" stroke=\"#bbb\" stroke-dasharray=\"4 3\" "
             "clip-path=\"url(#plot)\" points=\"{:.1f},{:.1f} {:.1f},{:.1f} {:.1f},{:.1f}\"/>\n",
             px(x_min), py(x_min), px(100), py(100), px(x_max), py(100));
  fmt::print(out,
             "<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\">arrived GPU demand (% of "
             "capacity)</text>\n",
             kLeft + plot_w / 2, kHeight - 16);
  fmt::print(out,
             "<text transform=\"translate(18 {:.1f}) rotate(-90)\" text-anchor=\"middle\">GPU "
             "allocation (% of capacity)</text>\n",
             kTop + plot_h / 2);
  std::size_t index = 0;
  for (const auto& s : summaries) {
    const std::string_view colour = kColours[index % std::size(kColours)];
    std::string points;
    for (const auto& p : s.curve) {
      if (p.arrived_pct < x_min - 10) continue;  // the clip box starts at x_min
      points += fmt::format("{:.1f},{:.1f} ", px(p.arrived_pct), py(p.alloc_pct));
    }
    fmt::print(out,
               "<polyline fill=\"none\" stroke=\"{}\" stroke-width=\"1.8\" "
               "clip-path=\"url(#plot)\" points=\"{}\"/>\n",
               colour, points);
    const double ly = kTop + 14 + 18 * static_cast<double>(index);
    fmt::print(out,
               "<line x1=\"{0:.1f}\" y1=\"{1:.1f}\" x2=\"{2:.1f}\" y2=\"{1:.1f}\" stroke=\"{3}\" "
               "stroke-width=\"2.5\"/><text x=\"{4:.1f}\" y=\"{5:.1f}\">{6}</text>\n",
               kLeft + plot_w + 12, ly, kLeft + plot_w + 36, colour, kLeft + plot_w + 42, ly + 4,
               xml_escaped(s.policy));
    ++index;
  }
  fmt::print(out, "</svg>\n");
}

}  // namespace gpushare::sim
