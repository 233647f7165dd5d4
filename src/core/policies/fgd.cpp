#include "gpushare/core/policies/fgd.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>

#include "gpushare/core/fit.h"
#include "gpushare/core/fragmentation.h"
#include "reference_candidates.h"

namespace gpushare::core {
namespace {

int fgd_score(double fragmentation_before, double fragmentation_after, Units gpu_capacity) {
  // The paper divides milli-GPU by 1000, i.e. measures the change in whole GPUs.
  const double delta = (fragmentation_before - fragmentation_after) /
                       static_cast<double>(std::max<Units>(1, gpu_capacity));
  return static_cast<int>(100.0 / (1.0 + std::exp(-delta)));
}

}  // namespace

FgdPolicy::FgdPolicy() : learned_(WorkloadHistogram()), compiled_(target()) {}

FgdPolicy::FgdPolicy(WorkloadHistogram::Options learning)
    : learned_(WorkloadHistogram(learning)), compiled_(target()) {}

FgdPolicy::FgdPolicy(TargetWorkload fixed_target)
    : fixed_(std::move(fixed_target)), compiled_(target()) {}

const TargetWorkload& FgdPolicy::target() const {
  return learned_ ? learned_->target() : fixed_;
}

std::optional<Placement> FgdPolicy::place(const NodeState& node, const PodDemand& pod) const {
  if (!fits(node, pod)) return std::nullopt;
  NodeFragmentation fragmentation;
  if (!fragmentation.prepare(compiled_, node, pod)) return reference_place(node, pod);
  return place_with(fragmentation, node, pod);
}

Placement FgdPolicy::place_with(const NodeFragmentation& fragmentation, const NodeState& node,
                                const PodDemand& pod) const {
  const Units capacity = node.spec().memory_per_gpu;
  Placement placement;
  if (!pod.wants_gpu() || pod.needs_whole_gpus()) {
    if (pod.wants_gpu()) placement.gpus = lowest_whole_gpus(node, pod.gpu_count);
    double before = 0;
    double after = 0;
    fragmentation.before_and_after(placement.gpus, before, after);
    placement.score = fgd_score(before, after, capacity);
    return placement;
  }
  const double before = fragmentation.before();
  std::array<double, NodeFragmentation::kMaxGpus> after;
  fragmentation.candidates_after(after);
  int best_gpu = -1;
  int best_score = -1;
  for (int k = 0; k < fragmentation.candidates(); ++k) {
    const int score = fgd_score(before, after[static_cast<std::size_t>(k)], capacity);
    if (score > best_score) {
      best_score = score;
      best_gpu = fragmentation.candidate_gpu(k);
    }
  }
  placement.gpus = {best_gpu};
  placement.score = best_score;
  return placement;
}

std::optional<double> FgdPolicy::score(const NodeState& node, const PodDemand& pod) const {
  ScoreContext context;
  return score_in(node, pod, context);
}

std::optional<double> FgdPolicy::score_in(const NodeState& node, const PodDemand& pod,
                                          ScoreContext& context) const {
  if (!context.fit_checked && !fits(node, pod)) return std::nullopt;
  NodeFragmentation fragmentation;
  if (!fragmentation.prepare_to_score(compiled_, node, pod, context.reading, context.shared)) {
    return reference_score(*this, node, pod);
  }
  const Units capacity = node.spec().memory_per_gpu;
  const int count = fragmentation.candidates();
  if (!pod.wants_gpu() || pod.needs_whole_gpus() || count == 0) {
    const auto placement = place_with(fragmentation, node, pod);
    return placement.score;
  }
  // The score falls as F(after) grows (every step of fgd_score is monotonic), so the best is
  // among the candidates with the smallest F(after). Those left out exceed it by more than
  // `margin`, which lowers the sigmoid's argument by more than 2^-40 (the rounding of the
  // subtraction and division is covered by the term in F): far beyond the error of std::exp,
  // so their scores cannot come out higher either.
  const double divisor = static_cast<double>(std::max<Units>(1, capacity));
  const double margin = divisor * 0x1p-38 + 0x1p-44 * fragmentation.fragmentation_bound();
  std::array<double, NodeFragmentation::kMaxGpus> after;
  double before = 0;
  const int window = fragmentation.before_and_minimum(margin, before, after);
  int best = -1;
  for (int k = 0; k < window; ++k) {
    best = std::max(best, fgd_score(before, after[static_cast<std::size_t>(k)], capacity));
  }
  return best;
}

std::optional<Placement> FgdPolicy::reference_place(const NodeState& node,
                                                    const PodDemand& pod) const {
  if (!fits(node, pod)) return std::nullopt;
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
  const auto [best_gpu, best_score] =
      best_reference_gpu(node, pod, before, [&](const FreeResources& after) {
        return fgd_score(fragmentation_before, fragmentation(after, workload), capacity);
      });
  placement.gpus = {best_gpu};
  placement.score = best_gpu < 0 ? -1 : best_score;
  return placement;
}

void FgdPolicy::observe(const PodDemand& pod) {
  if (!learned_) return;
  const std::uint64_t version = learned_->version();
  learned_->observe(pod);
  if (learned_->version() != version) compiled_ = CompiledWorkload(learned_->target());
}

std::uint64_t FgdPolicy::state_version() const {
  return learned_ ? learned_->version() : 0;
}

std::string FgdPolicy::describe_state() const {
  if (learned_) return fmt::format("{{\"policy\":\"fgd\",\"workload\":{}}}", learned_->describe());
  return fmt::format("{{\"policy\":\"fgd\",\"fixedTargetShapes\":{}}}", fixed_.size());
}

}  // namespace gpushare::core
