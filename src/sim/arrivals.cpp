#include "gpushare/sim/arrivals.h"

#include <algorithm>
#include <limits>
#include <numeric>

namespace gpushare::sim {

std::uint64_t SeededRandom::below(std::uint64_t bound) {
  // Rejection sampling: unbiased for any bound.
  const std::uint64_t limit =
      std::numeric_limits<std::uint64_t>::max() - std::numeric_limits<std::uint64_t>::max() % bound;
  std::uint64_t draw = engine_();
  while (draw >= limit) draw = engine_();
  return draw % bound;
}

std::vector<std::size_t> arrival_order(std::span<const TracePod> pods, std::uint64_t seed,
                                       double max_arrival, core::Units capacity) {
  std::vector<std::size_t> order(pods.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return pods[a].name < pods[b].name; });
  // Top-up draws index the name-sorted trace too, so the file's row order never matters.
  const std::vector<std::size_t> by_name = order;
  SeededRandom random(seed);
  random.shuffle(order);

  const double limit = max_arrival * static_cast<double>(capacity);
  std::vector<std::size_t> arrivals;
  double arrived = 0;
  const auto admit = [&](std::size_t index) {
    const double demand = static_cast<double>(pods[index].demand.total_gpu());
    if (arrived + demand > limit) return false;
    arrived += demand;
    arrivals.push_back(index);
    return true;
  };
  for (std::size_t index : order) {
    if (!admit(index)) return arrivals;
  }
  // Without any GPU demand in the trace the top-up would never end.
  const bool any_gpu = std::any_of(pods.begin(), pods.end(),
                                   [](const TracePod& p) { return p.demand.total_gpu() > 0; });
  if (!any_gpu || pods.empty()) return arrivals;
  while (admit(by_name[static_cast<std::size_t>(random.below(by_name.size()))])) {
  }
  return arrivals;
}

std::vector<std::size_t> node_tie_order(std::size_t count, std::uint64_t seed) {
  std::vector<std::size_t> order(count);
  std::iota(order.begin(), order.end(), std::size_t{0});
  // A stream apart from the workload's, so the node order does not shift with the trace.
  SeededRandom random(seed ^ 0x6e6f64652d746965ULL);
  random.shuffle(order);
  return order;
}

}  // namespace gpushare::sim
