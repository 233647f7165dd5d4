#include "gpushare/core/policies/fgd.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "gpushare/core/fit.h"
#include "gpushare/core/fragmentation.h"

namespace gpushare::core {
namespace {

int fgd_score(double fragmentation_before, double fragmentation_after, Units gpu_capacity) {
  // The paper divides milli-GPU by 1000, i.e. measures the change in whole GPUs.
  const double delta = (fragmentation_before - fragmentation_after) /
                       static_cast<double>(std::max<Units>(1, gpu_capacity));
  return static_cast<int>(100.0 / (1.0 + std::exp(-delta)));
}

}  // namespace

FgdPolicy::FgdPolicy() : learned_(WorkloadHistogram()) {}

FgdPolicy::FgdPolicy(WorkloadHistogram::Options learning) : learned_(WorkloadHistogram(learning)) {}

FgdPolicy::FgdPolicy(TargetWorkload fixed_target) : fixed_(std::move(fixed_target)) {}

const TargetWorkload& FgdPolicy::target() const { return learned_ ? learned_->target() : fixed_; }

std::optional<Placement> FgdPolicy::place(const NodeState& node, const PodDemand& pod) const {
  if (!check_fit(node, pod).fits()) return std::nullopt;
  const TargetWorkload& workload = target();
  const FreeResources before = FreeResources::of(node);
  const double fragmentation_before = fragmentation(before, workload);
  const Units capacity = node.spec().memory_per_gpu;
  Placement placement;
  if (!pod.wants_gpu() || pod.needs_whole_gpus()) {
    if (pod.wants_gpu()) placement.gpus = lowest_whole_gpus(node, pod.gpu_count);
    FreeResources after = before;
    after.take(pod, placement.gpus);
    placement.score = fgd_score(fragmentation_before, fragmentation(after, workload), capacity);
    return placement;
  }
  int best_gpu = -1;
  int best_score = -1;
  FreeResources after = before;
  after.take(pod, {});  // CPU and memory once; GPUs one candidate at a time below
  std::vector<Units> tried;  // equal free memory, equal what-if: the lower index keeps it
  for (int gpu : gpus_that_fit(node, pod)) {
    const auto index = static_cast<std::size_t>(gpu);
    const Units free = before.gpu_free[index];
    if (std::find(tried.begin(), tried.end(), free) != tried.end()) continue;
    tried.push_back(free);
    after.gpu_free[index] = free - pod.per_gpu;
    const int score = fgd_score(fragmentation_before, fragmentation(after, workload), capacity);
    after.gpu_free[index] = free;
    if (score > best_score) {
      best_score = score;
      best_gpu = gpu;
    }
  }
  placement.gpus = {best_gpu};
  placement.score = best_score;
  return placement;
}

void FgdPolicy::observe(const PodDemand& pod) {
  if (learned_) learned_->observe(pod);
}

std::uint64_t FgdPolicy::state_version() const { return learned_ ? learned_->version() : 0; }

std::string FgdPolicy::describe_state() const {
  if (learned_) return fmt::format("{{\"policy\":\"fgd\",\"workload\":{}}}", learned_->describe());
  return fmt::format("{{\"policy\":\"fgd\",\"fixedTargetShapes\":{}}}", fixed_.size());
}

}  // namespace gpushare::core
