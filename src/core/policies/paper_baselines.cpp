#include "gpushare/core/policies/paper_baselines.h"

#include <algorithm>
#include <limits>

#include "gpushare/core/fit.h"
#include "gpushare/core/fragmentation.h"

namespace gpushare::core {
namespace {

// The paper's normalisers: the largest node has 128 cores and 8 GPUs.
constexpr double kMaxSpecCpuMilli = 128000;
constexpr double kMaxSpecGpus = 8;

// CPU left after placement; 0 when the node does not track CPU (the term then drops out).
double cpu_left_after(const NodeState& node, const PodDemand& pod) {
  if (node.spec().cpu_milli <= 0) return 0;
  return static_cast<double>(node.cpu_free() - pod.cpu_milli);
}

double gpu_scale(const NodeState& node) {
  return kMaxSpecGpus * static_cast<double>(std::max<Units>(1, node.spec().memory_per_gpu));
}

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

std::vector<int> best_fit_gpus(const NodeState& node, const PodDemand& pod) {
  if (!pod.wants_gpu()) return {};
  if (pod.needs_whole_gpus()) return lowest_whole_gpus(node, pod.gpu_count);
  // The GPUs gpus_that_fit() would list, scanned in place.
  int best = -1;
  Units best_free = 0;
  if (node.total_free() >= pod.per_gpu) {
    for (int gpu = 0; gpu < node.gpu_count(); ++gpu) {
      const GpuState& state = node.gpus()[static_cast<std::size_t>(gpu)];
      if (!state.healthy || state.free() < pod.per_gpu) continue;
      if (best < 0 || state.free() < best_free) {
        best = gpu;
        best_free = state.free();
      }
    }
  }
  return best < 0 ? std::vector<int>{} : std::vector<int>{best};
}

std::optional<Placement> BestFitPolicy::place(const NodeState& node, const PodDemand& pod) const {
  if (!check_fit(node, pod).fits()) return std::nullopt;
  // Same order of floating-point operations as the paper's simulator, so ties match.
  double raw = 0;
  raw += cpu_left_after(node, pod) / kMaxSpecCpuMilli * 0.5;
  const double gpu_left = static_cast<double>(FreeResources::of(node).total_gpu_free() -
                                              pod.total_gpu());
  raw += gpu_left / gpu_scale(node) * 0.5;
  Placement placement;
  placement.score = static_cast<double>(static_cast<std::int64_t>((1.0 - raw) * 100));
  placement.gpus = best_fit_gpus(node, pod);
  return placement;
}

std::optional<Placement> DotProductPolicy::place(const NodeState& node,
                                                 const PodDemand& pod) const {
  if (!check_fit(node, pod).fits()) return std::nullopt;
  const double cpu_free =
      node.spec().cpu_milli > 0 ? static_cast<double>(node.cpu_free()) : 0.0;
  const double gpu_free = static_cast<double>(FreeResources::of(node).total_gpu_free());
  double product = 0;
  product += cpu_free / kMaxSpecCpuMilli * (static_cast<double>(pod.cpu_milli) / kMaxSpecCpuMilli);
  product += gpu_free / gpu_scale(node) * (static_cast<double>(pod.total_gpu()) / gpu_scale(node));
  product /= 2;
  Placement placement;
  placement.score = static_cast<double>(static_cast<std::int64_t>(100 * (1 - product)));
  placement.gpus = best_fit_gpus(node, pod);
  return placement;
}

std::optional<Placement> GpuPackingPolicy::place(const NodeState& node,
                                                 const PodDemand& pod) const {
  if (!check_fit(node, pod).fits()) return std::nullopt;
  Placement placement;
  placement.gpus = best_fit_gpus(node, pod);
  if (!pod.wants_gpu()) return placement;  // score 0
  const Units capacity = std::max<Units>(1, node.spec().memory_per_gpu);
  const int gpu_count = node.gpu_count();
  if (node.wholly_free_gpu_count() == gpu_count) {
    // An idle node: small nodes first.
    placement.score = std::max(33 - gpu_count, gpu_count);
    return placement;
  }
  // The GPUs the paper's simulator would take: least free first (stable), those that fit.
  std::vector<int> order(static_cast<std::size_t>(gpu_count));
  for (int i = 0; i < gpu_count; ++i) order[static_cast<std::size_t>(i)] = i;
  const auto free_of = [&](int i) {
    const auto& gpu = node.gpus()[static_cast<std::size_t>(i)];
    return gpu.healthy ? gpu.free() : 0;
  };
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return free_of(a) < free_of(b); });
  int wanted = pod.gpu_count;
  int wholly_free_taken = 0;
  std::int64_t free_percent_sum = 0;
  for (int i : order) {
    if (wanted == 0) break;
    const Units free = free_of(i);
    if (free < pod.per_gpu) continue;
    --wanted;
    if (free == capacity) ++wholly_free_taken;
    free_percent_sum += free * 100 / capacity;
  }
  if (wholly_free_taken > 0) {
    placement.score = std::max(50 - wholly_free_taken, 33);
  } else {
    placement.score = static_cast<double>(std::max<std::int64_t>(100 - free_percent_sum / 10, 50));
  }
  return placement;
}

std::optional<Placement> RandomPolicy::place(const NodeState& node, const PodDemand& pod) const {
  if (!check_fit(node, pod).fits()) return std::nullopt;
  std::uint64_t h = mix(seed_ ^ mix(draws_));
  h = mix(h ^ hash_text(node.name()));
  h = mix(h ^ static_cast<std::uint64_t>(pod.per_gpu) ^ (static_cast<std::uint64_t>(pod.cpu_milli) << 20));
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

void RandomPolicy::observe(const PodDemand&) { ++draws_; }

}  // namespace gpushare::core
