#include "gpushare/core/workload.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>

namespace gpushare::core {
namespace {

std::string json_escaped(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      out += fmt::format("\\u{:04x}", static_cast<unsigned>(c));
    } else {
      out += c;
    }
  }
  return out;
}

// Heaviest first; ties broken towards bigger shapes, as the paper's simulator sorts.
bool heavier(const WeightedShape& a, const WeightedShape& b) {
  if (a.weight != b.weight) return a.weight > b.weight;
  return b.shape < a.shape;
}

}  // namespace

WorkloadShape WorkloadShape::of(const PodDemand& pod, bool with_memory) {
  WorkloadShape shape;
  shape.cpu_milli = pod.cpu_milli;
  if (with_memory) shape.memory = pod.memory;
  if (pod.wants_gpu()) {
    shape.per_gpu = pod.per_gpu;
    shape.gpu_count = pod.gpu_count;
  }
  shape.allowed_models = pod.allowed_models;
  std::sort(shape.allowed_models.begin(), shape.allowed_models.end());
  return shape;
}

bool WorkloadShape::allows_model(std::string_view model) const {
  return allowed_models.empty() ||
         std::find(allowed_models.begin(), allowed_models.end(), model) != allowed_models.end();
}

std::string WorkloadShape::describe() const {
  std::string text =
      fmt::format("cpu={} gpu={}x{}{}", cpu_milli, gpu_count, per_gpu, relative ? "/1000" : "");
  if (memory > 0) text += fmt::format(" memory={}", memory);
  if (!allowed_models.empty()) text += fmt::format(" models={}", fmt::join(allowed_models, "|"));
  return text;
}

TargetWorkload top_shapes(std::vector<WeightedShape> weighted, double coverage) {
  std::erase_if(weighted, [](const WeightedShape& s) { return !(s.weight > 0); });
  std::sort(weighted.begin(), weighted.end(), heavier);
  double total = 0;
  for (const auto& s : weighted) total += s.weight;
  if (total <= 0) return {};
  double kept = 0;
  std::size_t count = 0;
  // A relative tolerance so that "covers 95 %" is not lost to rounding of decayed weights.
  while (count < weighted.size() && kept < coverage * total * (1 - 1e-12)) {
    kept += weighted[count].weight;
    ++count;
  }
  weighted.resize(std::max<std::size_t>(count, 1));
  for (auto& s : weighted) s.weight /= kept > 0 ? kept : 1;
  return weighted;
}

double pod_weight(const PodDemand& pod, ShapeWeighting weighting) {
  if (weighting == ShapeWeighting::kPods || !pod.wants_gpu()) return 1.0;
  return std::sqrt(std::max(1.0, static_cast<double>(pod.gpu_count)));
}

TargetWorkload typical_workload(std::span<const PodDemand> pods, double coverage, bool with_memory,
                                ShapeWeighting weighting) {
  std::map<WorkloadShape, double> counts;
  for (const auto& pod : pods) {
    counts[WorkloadShape::of(pod, with_memory)] += pod_weight(pod, weighting);
  }
  std::vector<WeightedShape> weighted;
  weighted.reserve(counts.size());
  for (auto& [shape, count] : counts) weighted.push_back({shape, count});
  return top_shapes(std::move(weighted), coverage);
}

TargetWorkload default_prior_workload() {
  // Typical GPU-sharing mix: many small and medium fractions, some whole GPUs.
  struct Entry {
    Units thousandths;
    double weight;
  };
  constexpr Entry entries[] = {{250, 0.25}, {500, 0.30}, {750, 0.10}, {1000, 0.35}};
  TargetWorkload prior;
  for (const auto& e : entries) {
    WorkloadShape shape;
    shape.per_gpu = e.thousandths;
    shape.gpu_count = 1;
    shape.relative = true;
    prior.push_back({shape, e.weight});
  }
  return prior;
}

WorkloadHistogram::WorkloadHistogram() : WorkloadHistogram(Options{}) {}

WorkloadHistogram::WorkloadHistogram(Options options, TargetWorkload prior) : options_(options) {
  options_.refresh_every = std::max(1, options_.refresh_every);
  decay_ = options_.half_life_pods > 0 ? std::exp2(-1.0 / options_.half_life_pods) : 1.0;
  double prior_total = 0;
  for (const auto& s : prior) prior_total += std::max(0.0, s.weight);
  for (auto& s : prior) {
    if (s.weight <= 0 || prior_total <= 0) continue;
    weights_.push_back({s.shape, options_.prior_weight * s.weight / prior_total});
  }
  prior_remaining_ = prior_total > 0 ? options_.prior_weight : 0;
  refresh();
}

void WorkloadHistogram::observe(const PodDemand& pod) {
  for (auto& s : weights_) s.weight *= decay_;
  prior_remaining_ *= decay_;
  const WorkloadShape shape = WorkloadShape::of(pod, options_.with_memory);
  auto it = std::find_if(weights_.begin(), weights_.end(),
                         [&](const WeightedShape& s) { return s.shape == shape; });
  const double weight = pod_weight(pod, options_.weighting);
  if (it != weights_.end()) {
    it->weight += weight;
  } else {
    if (weights_.size() >= options_.max_shapes) {
      // Forget the lightest shape to bound memory and scoring cost.
      auto lightest = std::min_element(
          weights_.begin(), weights_.end(),
          [](const WeightedShape& a, const WeightedShape& b) { return a.weight < b.weight; });
      weights_.erase(lightest);
    }
    weights_.push_back({shape, weight});
  }
  ++observed_;
  const bool power_of_two = (observed_ & (observed_ - 1)) == 0;
  if (power_of_two || observed_ % static_cast<std::uint64_t>(options_.refresh_every) == 0) {
    refresh();
  }
}

void WorkloadHistogram::refresh() {
  target_ = top_shapes(weights_, options_.coverage);
  ++version_;
}

double WorkloadHistogram::prior_share() const {
  double total = 0;
  for (const auto& s : weights_) total += s.weight;
  return total > 0 ? std::min(1.0, prior_remaining_ / total) : 0.0;
}

std::string WorkloadHistogram::describe() const {
  std::string shapes;
  for (const auto& s : target_) {
    if (!shapes.empty()) shapes += ',';
    std::string models;
    for (const auto& m : s.shape.allowed_models) {
      if (!models.empty()) models += ',';
      models += fmt::format("\"{}\"", json_escaped(m));
    }
    shapes += fmt::format(
        "{{\"cpuMilli\":{},\"memory\":{},\"perGpu\":{},\"gpuCount\":{},\"relative\":{},"
        "\"models\":[{}],\"weight\":{:.4f}}}",
        s.shape.cpu_milli, s.shape.memory, s.shape.per_gpu, s.shape.gpu_count, s.shape.relative,
        models, s.weight);
  }
  return fmt::format(
      "{{\"observedPods\":{},\"priorShare\":{:.4f},\"halfLifePods\":{},\"coverage\":{},"
      "\"trackedShapes\":{},\"targetShapes\":[{}]}}",
      observed_, prior_share(), options_.half_life_pods, options_.coverage, weights_.size(),
      shapes);
}

}  // namespace gpushare::core
