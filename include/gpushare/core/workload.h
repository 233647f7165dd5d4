#pragma once
// The workload a fragmentation-aware policy plans for: pod shapes and how often each arrives.
// Either fixed in advance (the FGD paper's "typical pods" of a trace) or learned online from
// the pods a service sees (WorkloadHistogram).

#include <compare>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "gpushare/core/pod_demand.h"

namespace gpushare::core {

// One kind of pod, reduced to what decides whether a node can host it.
struct WorkloadShape {
  std::int64_t cpu_milli = 0;
  std::int64_t memory = 0;  // 0 = not considered (the FGD paper's shapes ignore memory)
  Units per_gpu = 0;        // 0 = CPU-only
  int gpu_count = 0;        // 0 = CPU-only
  std::vector<std::string> allowed_models;  // sorted; empty = any
  // When true, per_gpu is in thousandths of the node's per-GPU capacity rather than absolute
  // units: the built-in prior is written before the cluster's units are known.
  bool relative = false;

  // The pod's shape; its memory request only when `with_memory`.
  static WorkloadShape of(const PodDemand& pod, bool with_memory = false);
  bool wants_gpu() const { return per_gpu > 0 && gpu_count > 0; }
  // Memory this shape wants on each GPU of a node whose GPUs hold `gpu_capacity`.
  Units per_gpu_on(Units gpu_capacity) const {
    return relative ? (per_gpu * gpu_capacity + 999) / 1000 : per_gpu;
  }
  bool allows_model(std::string_view model) const;
  std::string describe() const;  // "cpu=4000 gpu=2x1000 models=V100|T4"

  friend auto operator<=>(const WorkloadShape&, const WorkloadShape&) = default;
  friend bool operator==(const WorkloadShape&, const WorkloadShape&) = default;
};

struct WeightedShape {
  WorkloadShape shape;
  double weight = 0;
};

// Shapes with weights that sum to 1 (or empty).
using TargetWorkload = std::vector<WeightedShape>;

// How much each pod counts towards its shape's weight.
enum class ShapeWeighting {
  kPods,      // 1 per pod: the FGD paper
  kSqrtGpus,  // sqrt(GPUs wanted), at least 1: a rare 8-GPU pod is not lost below the coverage
              // cut, without letting big pods drown the common small ones
};
double pod_weight(const PodDemand& pod, ShapeWeighting weighting);

// The FGD paper's target workload: shapes sorted by weight (heaviest first; ties by larger cpu,
// then per_gpu, gpu_count, models), the shortest prefix whose weight reaches `coverage` of the
// total, renormalised to sum to 1.
TargetWorkload top_shapes(std::vector<WeightedShape> weighted, double coverage);
// Groups pods by shape and keeps the top shapes as above. The defaults are the paper's.
TargetWorkload typical_workload(std::span<const PodDemand> pods, double coverage = 0.95,
                                bool with_memory = false,
                                ShapeWeighting weighting = ShapeWeighting::kPods);

// What a service assumes before it has seen pods: a mix of fractional and whole single-GPU
// pods, expressed relative to each node's GPU size, without CPU demand.
TargetWorkload default_prior_workload();

// Online estimate of the workload: an exponentially decayed histogram of observed pod shapes,
// seeded with a prior whose weight decays like any old observation.
class WorkloadHistogram {
 public:
  struct Options {
    double half_life_pods = 2000;  // an observation's weight halves after this many newer ones
    double prior_weight = 64;      // the prior counts as this many pods at the start
    double coverage = 0.95;        // as the FGD paper's target workload
    std::size_t max_shapes = 512;  // lightest shapes are forgotten beyond this
    // Observations between recomputations of the target (also after 1, 2, 4, ... observations,
    // so that a fresh service leaves the prior quickly).
    int refresh_every = 128;
    bool with_memory = false;  // shapes include the pods' memory requests
    ShapeWeighting weighting = ShapeWeighting::kPods;
  };

  WorkloadHistogram();
  explicit WorkloadHistogram(Options options, TargetWorkload prior = default_prior_workload());

  void observe(const PodDemand& pod);

  // The target the policy plans for; recomputed only now and then (see refresh_every) so
  // that callers caching on version() are not invalidated by every pod.
  const TargetWorkload& target() const { return target_; }
  // Every tracked shape with its decayed weight (the prior's included; not normalised), also
  // the rare ones below the target's coverage cut.
  const std::vector<WeightedShape>& shapes() const { return weights_; }
  std::uint64_t version() const { return version_; }
  std::uint64_t observed() const { return observed_; }
  // Share of the histogram's weight that still comes from the prior, in [0, 1].
  double prior_share() const;
  // JSON object for /inspect.
  std::string describe() const;

 private:
  void refresh();

  Options options_;
  double decay_ = 1;
  std::vector<WeightedShape> weights_;  // decayed counts, prior included
  double prior_remaining_ = 0;          // decayed weight of the prior
  TargetWorkload target_;
  std::uint64_t observed_ = 0;
  std::uint64_t version_ = 0;
};

}  // namespace gpushare::core
