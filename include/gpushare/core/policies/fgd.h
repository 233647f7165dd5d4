#pragma once
// Fragmentation Gradient Descent (Weng et al., USENIX ATC'23): place each pod where it grows
// the expected fragmentation of the target workload the least.

#include <optional>

#include "gpushare/core/fragmentation.h"
#include "gpushare/core/placement_policy.h"
#include "gpushare/core/workload.h"

namespace gpushare::core {

class FgdPolicy final : public PlacementPolicy {
 public:
  // Learns the target workload online from observed pods, starting from the built-in prior.
  FgdPolicy();
  explicit FgdPolicy(WorkloadHistogram::Options learning);
  // The paper's setting: the target workload is known in advance and never changes.
  explicit FgdPolicy(TargetWorkload fixed_target);

  static constexpr std::string_view kName = "fgd";
  std::string_view name() const override { return kName; }
  // Score: floor(100 * sigmoid(dF / gpu capacity)), dF = F(node) - F(node after placement),
  // as the paper's simulator (integer scores: nearby nodes tie). A sharing pod takes the GPU
  // with the best score (lowest index on a tie); others take the lowest-index free GPUs.
  std::optional<Placement> place(const NodeState& node, const PodDemand& pod) const override;
  // place()->score without choosing the GPU: only the candidates that can score best are
  // evaluated exactly (see NodeFragmentation::before_and_minimum).
  std::optional<double> score(const NodeState& node, const PodDemand& pod) const override;
  // The score itself, always (never bounded).
  std::optional<double> score_in(const NodeState& node, const PodDemand& pod,
                                 ScoreContext& context) const override;
  std::optional<std::uint64_t> reading_version() const override { return state_version(); }
  void observe(const PodDemand& pod) override;
  std::uint64_t state_version() const override;
  std::string describe_state() const override;

  const TargetWorkload& target() const;

  // The straightforward computation (FreeResources per candidate), which place() and score()
  // reproduce exactly; used for nodes beyond NodeFragmentation's capacities, and by tests.
  std::optional<Placement> reference_place(const NodeState& node, const PodDemand& pod) const;

 private:
  // place() on a prepared node (the pod fits).
  Placement place_with(const NodeFragmentation& fragmentation, const NodeState& node,
                       const PodDemand& pod) const;

  std::optional<WorkloadHistogram> learned_;
  TargetWorkload fixed_;
  CompiledWorkload compiled_;  // target(), rebuilt whenever it changes
};

}  // namespace gpushare::core
