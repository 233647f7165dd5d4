#pragma once
#include "gpushare/core/placement_policy.h"

namespace gpushare::core {

// Worst fit: the GPU with the most free memory (lowest index on a tie); nodes scored so the
// emptiest node wins. Lowest interference between tenants, at the cost of fragmentation.
class SpreadPolicy final : public PlacementPolicy {
 public:
  static constexpr std::string_view kName = "spread";
  std::string_view name() const override { return kName; }
  std::optional<Placement> place(const NodeState& node, const PodDemand& pod) const override;
  std::optional<double> score(const NodeState& node, const PodDemand& pod) const override;
};

}  // namespace gpushare::core
