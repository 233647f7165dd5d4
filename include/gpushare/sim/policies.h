#pragma once
// The policies the simulator can run: every core policy (the very objects the service uses)
// plus two that only make sense here: the paper's GPU-clustering baseline, which needs the
// history of pods on each node, and "gpushare-original", kube-scheduler's default node scoring
// with the Go extender's best-fit GPU choice.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "gpushare/core/placement_policy.h"
#include "gpushare/core/workload.h"

namespace gpushare::sim {

// Told where each pod went, for policies that keep per-node history.
class PlacementObserver {
 public:
  virtual ~PlacementObserver() = default;
  virtual void placed(const core::NodeState& node, const core::PodDemand& pod) = 0;
};

// GPU-clustering (paper baseline): pods tagged share-gpu or k-gpu; a node scores
// floor(25 (8 GPUs - G) / 8 GPUs) (missing GPUs count as used) plus 75 if every GPU pod on it
// has the pod's tag, 50 if the tag is among others, 25 if it has no GPU pods, else 0.
// CPU-only pods score 0. GPU choice as best-fit.
class GpuClusteringPolicy final : public core::PlacementPolicy, public PlacementObserver {
 public:
  std::string_view name() const override { return "gpu-clustering"; }
  std::optional<core::Placement> place(const core::NodeState& node,
                                       const core::PodDemand& pod) const override;
  void placed(const core::NodeState& node, const core::PodDemand& pod) override;

 private:
  // Tag -> number of pods with it, per node name. Tag 0 = sharing pod, k = k whole GPUs.
  std::unordered_map<std::string, std::unordered_map<int, int>> tags_by_node_;
};

// What the Go gpushare extender gets in practice: it only filters and binds, so nodes are
// chosen by kube-scheduler's default scoring, approximated here as NodeResourcesFit
// LeastAllocated (cpu, memory; weight 1) + NodeResourcesBalancedAllocation (cpu, memory;
// weight 1), integer scores as kube-scheduler computes them, with its non-zero defaults for
// pods that request nothing (100m CPU, 200 MiB). Ties are random (the simulator's tie order).
// The extender then binds to the GPU with the least free memory that fits (best fit).
class KubeDefaultPolicy final : public core::PlacementPolicy {
 public:
  std::string_view name() const override { return "gpushare-original"; }
  std::optional<core::Placement> place(const core::NodeState& node,
                                       const core::PodDemand& pod) const override;
};

// What a run needs to build policies the paper's way.
struct TraceContext {
  core::TargetWorkload typical_workload;  // FGD's target: the trace's top shapes (95 %)
  std::uint64_t seed = 0;
};

struct Contender {
  std::string name;
  std::unique_ptr<core::PlacementPolicy> policy;
  PlacementObserver* observer = nullptr;  // the policy itself when it keeps per-node history
};

// Core policy names (the service's), then "fgd-online" (FGD learning its target as the service
// does), then the simulator-only ones.
std::vector<std::string> sim_policy_names();

// nullopt for an unknown name. "fgd" gets the trace's typical workload as its fixed target, as
// in the paper; "random" is seeded with the run's seed.
std::optional<Contender> make_contender(std::string_view name, const TraceContext& context);

}  // namespace gpushare::sim
