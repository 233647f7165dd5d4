#pragma once
// A baseline of the FGD paper's simulator (Weng et al., USENIX ATC'23), scored exactly as there,
// including the integer truncation that makes nearby nodes tie. Constants that the paper writes
// in milli-GPU are scaled by the node's GPU capacity (policies/paper_scales.h).

#include "gpushare/core/placement_policy.h"

namespace gpushare::core {

// Prefer already shared GPUs (score 50..100 by how little they have left), then free GPUs on a
// used node (33..50), then idle nodes (small ones first). CPU-only pods score 0 everywhere.
class GpuPackingPolicy final : public PlacementPolicy {
 public:
  static constexpr std::string_view kName = "gpu-packing";
  std::string_view name() const override { return kName; }
  std::optional<Placement> place(const NodeState& node, const PodDemand& pod) const override;
};

}  // namespace gpushare::core
