#include "gpushare/core/policies/random_choice.h"

#include <string_view>
#include <vector>

#include "gpushare/core/fit.h"

namespace gpushare::core {
namespace {

std::uint64_t mix(std::uint64_t x) {  // splitmix64 finaliser
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

std::uint64_t hash_text(std::string_view text) {  // FNV-1a
  std::uint64_t h = 0xcbf29ce484222325ULL;
  for (char c : text) h = (h ^ static_cast<unsigned char>(c)) * 0x100000001b3ULL;
  return h;
}

}  // namespace

std::optional<Placement> RandomPolicy::place(const NodeState& node, const PodDemand& pod) const {
  if (!fits(node, pod)) return std::nullopt;
  std::uint64_t h = mix(seed_ ^ mix(draws_));
  h = mix(h ^ hash_text(node.name()));
  h = mix(h ^ static_cast<std::uint64_t>(pod.per_gpu) ^
          (static_cast<std::uint64_t>(pod.cpu_milli) << 20));
  Placement placement;
  placement.score = static_cast<double>(h >> 11) * 0x1.0p-53;  // uniform in [0, 1)
  if (!pod.wants_gpu()) return placement;
  if (pod.needs_whole_gpus()) {
    placement.gpus = lowest_whole_gpus(node, pod.gpu_count);
  } else {
    const std::vector<int> candidates = gpus_that_fit(node, pod);
    placement.gpus = {candidates[mix(h) % candidates.size()]};
  }
  return placement;
}

void RandomPolicy::observe(const PodDemand&) {
  ++draws_;
}

}  // namespace gpushare::core
