#pragma once
#include "gpushare/core/placement_policy.h"

namespace gpushare::core {

// Best fit: the GPU left with the least free memory after placement (lowest index on a tie);
// nodes scored so the tightest GPU fit wins, then the fuller node. Keeps large holes open.
class BinpackPolicy final : public PlacementPolicy {
 public:
  static constexpr std::string_view kName = "binpack";
  std::string_view name() const override { return kName; }
  std::optional<Placement> place(const NodeState& node, const PodDemand& pod) const override;
  std::optional<double> score(const NodeState& node, const PodDemand& pod) const override;
};

}  // namespace gpushare::core
