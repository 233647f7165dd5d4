#include "gpushare/core/policies/fgd_plus.h"

#include <algorithm>
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
}

double FgdPlusPolicy::stranded_gpu(const FreeResources& node) const {
  const double idle = static_cast<double>(node.total_gpu_free());
  double usable = idle;
  if (cpu_per_gpu_unit_ > 0 && node.cpu_free != kUntracked) {
    usable = std::min(usable, static_cast<double>(std::max<std::int64_t>(0, node.cpu_free)) /
                                  cpu_per_gpu_unit_);
  }
  if (memory_per_gpu_unit_ > 0 && node.memory_free != kUntracked) {
    usable = std::min(usable, static_cast<double>(std::max<std::int64_t>(0, node.memory_free)) /
                                  memory_per_gpu_unit_);
  }
  return idle - usable;
}

double FgdPlusPolicy::measure(const FreeResources& node) const {
  double value = fragmentation(node, target());
  if (options_.balance_weight != 0) value += options_.balance_weight * stranded_gpu(node);
  return value;
}

std::optional<Placement> FgdPlusPolicy::place(const NodeState& node, const PodDemand& pod) const {
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
