#pragma once
// The FGD paper's arrival sequence: a seeded shuffle of the trace, topped up with pods drawn
// with replacement until the arrived GPU demand reaches a multiple of the cluster's capacity.

#include <cstdint>
#include <random>
#include <span>
#include <vector>

#include "gpushare/sim/trace.h"

namespace gpushare::sim {

// A deterministic generator: std::mt19937_64's sequence is fixed by the standard, and the
// bounded draws below avoid the library-specific std::uniform_int_distribution.
class SeededRandom {
 public:
  explicit SeededRandom(std::uint64_t seed) : engine_(seed) {}
  // Uniform in [0, bound), bound > 0.
  std::uint64_t below(std::uint64_t bound);
  template <typename T>
  void shuffle(std::vector<T>& items) {
    for (std::size_t i = items.size(); i > 1; --i) std::swap(items[i - 1], items[below(i)]);
  }

 private:
  std::mt19937_64 engine_;
};

// Indices into `pods` in arrival order:
//  1. order the pods by name and shuffle them with `seed`;
//  2. append pods drawn with replacement;
//  3. stop before the first pod that would push the arrived GPU demand past
//     `max_arrival` x `capacity`.
std::vector<std::size_t> arrival_order(std::span<const TracePod> pods, std::uint64_t seed,
                                       double max_arrival, core::Units capacity);

// A random order of `count` nodes for the seed: ties between equal scores go to the node that
// comes first, as the paper's simulator does by prefixing node names with a random number.
std::vector<std::size_t> node_tie_order(std::size_t count, std::uint64_t seed);

}  // namespace gpushare::sim
