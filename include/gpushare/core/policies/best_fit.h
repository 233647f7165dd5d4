#pragma once
// A baseline of the FGD paper's simulator (Weng et al., USENIX ATC'23), scored exactly as there,
// including the integer truncation that makes nearby nodes tie. Constants that the paper writes
// in milli-GPU are scaled by the node's GPU capacity (policies/paper_scales.h).

#include "gpushare/core/placement_policy.h"

namespace gpushare::core {

// Unless stated otherwise the paper's baselines give a sharing pod the GPU with the least free
// memory that still fits (lowest index on a tie) and whole-GPU pods the lowest-index free GPUs.
std::vector<int> best_fit_gpus(const NodeState& node, const PodDemand& pod);

// Best fit on CPU and GPU left after placement:
// floor(100 * (1 - (0.5 (c - c_p) / 128 cores + 0.5 (G - demand) / 8 GPUs))).
class BestFitPolicy final : public PlacementPolicy {
 public:
  static constexpr std::string_view kName = "best-fit";
  std::string_view name() const override { return kName; }
  std::optional<Placement> place(const NodeState& node, const PodDemand& pod) const override;
};

}  // namespace gpushare::core
