#include "gpushare/core/policies/fgd_plus.h"

#include <algorithm>
#include <array>
#include <limits>

#include <fmt/format.h>

#include "gpushare/core/fit.h"

namespace gpushare::core {
namespace {

constexpr std::int64_t kUntracked = std::numeric_limits<std::int64_t>::max();

}  // namespace

WorkloadHistogram::Options FgdPlusPolicy::default_learning() {
  WorkloadHistogram::Options options;
  options.with_memory = true;
  options.weighting = ShapeWeighting::kSqrtGpus;
  return options;
}

TargetWorkload FgdPlusPolicy::target_for(std::span<const PodDemand> pods) {
  const auto learning = default_learning();
  return typical_workload(pods, learning.coverage, learning.with_memory, learning.weighting);
}

FgdPlusPolicy::FgdPlusPolicy() : FgdPlusPolicy(default_learning(), Options{}) {}

FgdPlusPolicy::FgdPlusPolicy(WorkloadHistogram::Options learning, Options options)
    : learned_(WorkloadHistogram(learning)), options_(options) {
  update_ratios();
}

FgdPlusPolicy::FgdPlusPolicy(TargetWorkload fixed_target, Options options)
    : fixed_(std::move(fixed_target)), options_(options) {
  update_ratios();
}

const TargetWorkload& FgdPlusPolicy::target() const {
  return learned_ ? learned_->target() : fixed_;
}

void FgdPlusPolicy::update_ratios() {
  double cpu = 0;
  double memory = 0;
  double gpu = 0;
  for (const auto& [shape, weight] : target()) {
    if (shape.relative) continue;  // the prior says nothing about CPU or memory
    cpu += weight * static_cast<double>(shape.cpu_milli);
    memory += weight * static_cast<double>(shape.memory);
    if (shape.wants_gpu()) gpu += weight * static_cast<double>(shape.per_gpu * shape.gpu_count);
  }
  cpu_per_gpu_unit_ = gpu > 0 ? cpu / gpu : 0;
  memory_per_gpu_unit_ = gpu > 0 ? memory / gpu : 0;
  compiled_ = CompiledWorkload(target());
}

double FgdPlusPolicy::stranded_gpu(Units idle_units, std::int64_t cpu_free,
                                   std::int64_t memory_free) const {
  const double idle = static_cast<double>(idle_units);
  double usable = idle;
  if (cpu_per_gpu_unit_ > 0 && cpu_free != kUntracked) {
    usable = std::min(usable, static_cast<double>(std::max<std::int64_t>(0, cpu_free)) /
                                  cpu_per_gpu_unit_);
  }
  if (memory_per_gpu_unit_ > 0 && memory_free != kUntracked) {
    usable = std::min(usable, static_cast<double>(std::max<std::int64_t>(0, memory_free)) /
                                  memory_per_gpu_unit_);
  }
  return idle - usable;
}

double FgdPlusPolicy::stranded_gpu(const FreeResources& node) const {
  return stranded_gpu(node.total_gpu_free(), node.cpu_free, node.memory_free);
}

double FgdPlusPolicy::measure(double fragmentation, Units idle, std::int64_t cpu_free,
                              std::int64_t memory_free) const {
  double value = fragmentation;
  if (options_.balance_weight != 0) {
    value += options_.balance_weight * stranded_gpu(idle, cpu_free, memory_free);
  }
  return value;
}

double FgdPlusPolicy::measure(const FreeResources& node) const {
  double value = fragmentation(node, target());
  if (options_.balance_weight != 0) value += options_.balance_weight * stranded_gpu(node);
  return value;
}

std::optional<Placement> FgdPlusPolicy::place(const NodeState& node, const PodDemand& pod) const {
  if (!check_fit(node, pod).fits()) return std::nullopt;
  NodeFragmentation fragmentation;
  if (!fragmentation.prepare(compiled_, node, pod)) return reference_place(node, pod);
  return place_with(fragmentation, node, pod, nullptr);
}

std::optional<double> FgdPlusPolicy::score(const NodeState& node, const PodDemand& pod) const {
  if (!check_fit(node, pod).fits()) return std::nullopt;
  NodeFragmentation fragmentation;
  if (!fragmentation.prepare(compiled_, node, pod)) {
    const auto placement = reference_place(node, pod);
    return placement ? std::optional<double>(placement->score) : std::nullopt;
  }
  double best = 0;
  place_with(fragmentation, node, pod, &best);
  return best;
}

// The score of the best candidate; into *score_only (without choosing the GPU) when given.
Placement FgdPlusPolicy::place_with(const NodeFragmentation& fragmentation, const NodeState& node,
                                    const PodDemand& pod, double* score_only) const {
  const Units idle = fragmentation.total_before();
  const double capacity = static_cast<double>(std::max<Units>(1, node.spec().memory_per_gpu));
  double measure_before = 0;
  // As reference_place: higher is better, the growth of M in GPUs and a little packing.
  const auto score = [&](double fragmentation_after, Units idle_after) {
    return -(measure(fragmentation_after, idle_after, fragmentation.cpu_after(),
                     fragmentation.memory_after()) -
             measure_before) / capacity -
           options_.pack_weight * static_cast<double>(idle_after) / (8 * capacity);
  };
  const auto set_before = [&](double fragmentation_before) {
    measure_before = measure(fragmentation_before, idle, fragmentation.cpu_before(),
                             fragmentation.memory_before());
  };
  Placement placement;
  const int count = fragmentation.candidates();
  if (!pod.wants_gpu() || pod.needs_whole_gpus()) {
    if (pod.wants_gpu()) placement.gpus = lowest_whole_gpus(node, pod.gpu_count);
    const Units taken = pod.wants_gpu() ? pod.per_gpu * static_cast<Units>(placement.gpus.size()) : 0;
    double before = 0;
    double after = 0;
    fragmentation.before_and_after(placement.gpus, before, after);
    set_before(before);
    placement.score = score(after, idle - taken);
  } else if (count == 0) {
    placement.gpus = {-1};  // as reference_place, though check_fit leaves a GPU that fits
  } else if (score_only != nullptr) {
    // Every candidate leaves the same idle memory, CPU and memory, so the score falls as
    // F(after) grows (each step is a monotonic floating-point operation): the best score is
    // among the candidates with the smallest F(after), which before_and_minimum sums exactly.
    std::array<double, NodeFragmentation::kMaxGpus> after;
    double before = 0;
    const int window = fragmentation.before_and_minimum(0.0, before, after);
    set_before(before);
    placement.score = score(after[0], idle - pod.per_gpu);
    for (int k = 1; k < window; ++k) {
      placement.score = std::max(placement.score, score(after[static_cast<std::size_t>(k)], idle - pod.per_gpu));
    }
  } else {
    set_before(fragmentation.before());
    std::array<double, NodeFragmentation::kMaxGpus> after;
    fragmentation.candidates_after(after);
    int best_gpu = -1;
    for (int k = 0; k < count; ++k) {
      const double candidate = score(after[static_cast<std::size_t>(k)], idle - pod.per_gpu);
      if (best_gpu < 0 || candidate > placement.score) {
        best_gpu = fragmentation.candidate_gpu(k);
        placement.score = candidate;
      }
    }
    placement.gpus = {best_gpu};
  }
  if (score_only != nullptr) *score_only = placement.score;
  return placement;
}

std::optional<Placement> FgdPlusPolicy::reference_place(const NodeState& node,
                                                        const PodDemand& pod) const {
  if (!check_fit(node, pod).fits()) return std::nullopt;
  const FreeResources before = FreeResources::of(node);
  const double measure_before = measure(before);
  const double capacity = static_cast<double>(std::max<Units>(1, node.spec().memory_per_gpu));
  // Higher is better: the growth of M in GPUs, and a little packing.
  const auto score = [&](const FreeResources& after) {
    return -(measure(after) - measure_before) / capacity -
           options_.pack_weight * static_cast<double>(after.total_gpu_free()) / (8 * capacity);
  };
  Placement placement;
  if (!pod.wants_gpu() || pod.needs_whole_gpus()) {
    if (pod.wants_gpu()) placement.gpus = lowest_whole_gpus(node, pod.gpu_count);
    FreeResources after = before;
    after.take(pod, placement.gpus);
    placement.score = score(after);
    return placement;
  }
  FreeResources after = before;
  after.take(pod, {});  // CPU and memory once; the GPU one candidate at a time
  std::vector<Units> tried;  // GPUs with equal free memory give the same node after placement
  int best_gpu = -1;
  double best_score = 0;
  for (int gpu : gpus_that_fit(node, pod)) {
    const auto index = static_cast<std::size_t>(gpu);
    const Units free = before.gpu_free[index];
    if (std::find(tried.begin(), tried.end(), free) != tried.end()) continue;
    tried.push_back(free);
    after.gpu_free[index] = free - pod.per_gpu;
    const double candidate = score(after);
    after.gpu_free[index] = free;
    if (best_gpu < 0 || candidate > best_score) {
      best_gpu = gpu;
      best_score = candidate;
    }
  }
  placement.gpus = {best_gpu};
  placement.score = best_score;
  return placement;
}

void FgdPlusPolicy::observe(const PodDemand& pod) {
  if (!learned_) return;
  const std::uint64_t version = learned_->version();
  learned_->observe(pod);
  if (learned_->version() != version) update_ratios();
}

std::uint64_t FgdPlusPolicy::state_version() const { return learned_ ? learned_->version() : 0; }

std::string FgdPlusPolicy::describe_state() const {
  const std::string workload =
      learned_ ? learned_->describe()
               : fmt::format("{{\"fixedTargetShapes\":{}}}", fixed_.size());
  return fmt::format(
      "{{\"policy\":\"fgd-plus\",\"balanceWeight\":{},\"packWeight\":{},"
      "\"cpuMilliPerGpuUnit\":{:.4f},\"memoryPerGpuUnit\":{:.4f},\"workload\":{}}}",
      options_.balance_weight, options_.pack_weight, cpu_per_gpu_unit_, memory_per_gpu_unit_,
      workload);
}

}  // namespace gpushare::core
