#pragma once
#include "gpushare/core/placement_policy.h"

namespace gpushare::core {

// Worst fit: the GPU with the most free memory (lowest index on a tie); nodes scored so the
// emptiest node wins. Lowest interference between tenants, at the cost of fragmentation.
class SpreadPolicy final : public PlacementPolicy {
 public:
  std::string_view name() const override { return "spread"; }
  std::optional<Placement> place(const NodeState& node, const PodDemand& pod) const override;
  std::optional<double> score(const NodeState& node, const PodDemand& pod) const override;
};

}  // namespace gpushare::core
