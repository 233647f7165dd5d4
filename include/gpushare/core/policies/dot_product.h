#pragma once
// A baseline of the FGD paper's simulator (Weng et al., USENIX ATC'23), scored exactly as there,
// including the integer truncation that makes nearby nodes tie. Constants that the paper writes
// in milli-GPU are scaled by the node's GPU capacity (policies/paper_scales.h).

#include "gpushare/core/placement_policy.h"

namespace gpushare::core {

// Tetris-style dot product of the node's free and the pod's requested (CPU, GPU), each scaled
// by the largest node: the smallest product wins. floor(100 * (1 - product / 2)).
class DotProductPolicy final : public PlacementPolicy {
 public:
  static constexpr std::string_view kName = "dot-product";
  std::string_view name() const override { return kName; }
  std::optional<Placement> place(const NodeState& node, const PodDemand& pod) const override;
};

}  // namespace gpushare::core
