#pragma once
// The policies the simulator can run: every core policy (the very objects the service uses)
// plus two that only make sense here: the paper's GPU-clustering baseline, which needs the
// history of pods on each node, and "gpushare-original", kube-scheduler's default node scoring
// with the Go extender's best-fit GPU choice.

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "gpushare/core/placement_policy.h"
#include "gpushare/core/policy_registry.h"
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

// What the service's policies see in practice: the extender does not track CPU or memory
// (kube-scheduler filters on them before calling it). Feasibility is still decided on the
// full node; the wrapped policy scores a copy without CPU and memory and learns from pods
// without them.
class GpuOnlyView final : public core::PlacementPolicy {
 public:
  explicit GpuOnlyView(std::unique_ptr<core::PlacementPolicy> inner);
  std::string_view name() const override { return inner_->name(); }
  std::optional<core::Placement> place(const core::NodeState& node,
                                       const core::PodDemand& pod) const override;
  void observe(const core::PodDemand& pod) override;
  std::uint64_t state_version() const override { return inner_->state_version(); }
  std::string describe_state() const override { return inner_->describe_state(); }

 private:
  std::unique_ptr<core::PlacementPolicy> inner_;
};

// What a run needs to build policies the paper's way.
struct TraceContext {
  core::TargetWorkload typical_workload;        // FGD's target: the trace's top shapes (95 %)
  std::span<const core::PodDemand> trace_pods;  // the trace, for other targets
  std::uint64_t seed = 0;
};

struct Contender {
  std::string name;
  std::unique_ptr<core::PlacementPolicy> policy;
  PlacementObserver* observer = nullptr;  // the policy itself when it keeps per-node history
};

// Core policy names (the service's), then "fgd-online" and "fgd-plus-online" (learning their
// target from the pods placed so far, as the service does), then the simulator-only ones.
// Any name may carry the suffix "/gpu-only" (see GpuOnlyView).
std::vector<std::string> sim_policy_names();
inline constexpr std::string_view kGpuOnlySuffix = "/gpu-only";

// nullopt for an unknown name. "fgd" and "fgd-plus" get a target computed from the whole trace
// (as the paper gives FGD); "random" is seeded with the run's seed.
std::optional<Contender> make_contender(std::string_view name, const TraceContext& context);

}  // namespace gpushare::sim
