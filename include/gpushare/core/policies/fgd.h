#pragma once
// Fragmentation Gradient Descent (Weng et al., USENIX ATC'23): place each pod where it grows
// the expected fragmentation of the target workload the least.

#include <optional>

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

  std::string_view name() const override { return "fgd"; }
  // Score: floor(100 * sigmoid(dF / gpu capacity)), dF = F(node) - F(node after placement),
  // as the paper's simulator (integer scores: nearby nodes tie). A sharing pod takes the GPU
  // with the best score (lowest index on a tie); others take the lowest-index free GPUs.
  std::optional<Placement> place(const NodeState& node, const PodDemand& pod) const override;
  void observe(const PodDemand& pod) override;
  std::uint64_t state_version() const override;
  std::string describe_state() const override;

  const TargetWorkload& target() const;

 private:
  std::optional<WorkloadHistogram> learned_;
  TargetWorkload fixed_;
};

}  // namespace gpushare::core
