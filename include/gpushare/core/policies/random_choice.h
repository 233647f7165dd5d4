#pragma once
// A baseline of the FGD paper's simulator (Weng et al., USENIX ATC'23), scored exactly as there,
// including the integer truncation that makes nearby nodes tie. Constants that the paper writes
// in milli-GPU are scaled by the node's GPU capacity (policies/paper_scales.h).

#include <cstdint>

#include "gpushare/core/placement_policy.h"

namespace gpushare::core {

// A feasible node uniformly at random, and a random fitting GPU in it. Deterministic: the
// score is a hash of (seed, pods observed so far, node, pod), so place() stays a pure function
// and every placed pod draws anew.
class RandomPolicy final : public PlacementPolicy {
 public:
  explicit RandomPolicy(std::uint64_t seed = 0) : seed_(seed) {}
  static constexpr std::string_view kName = "random";
  std::string_view name() const override { return kName; }
  std::optional<Placement> place(const NodeState& node, const PodDemand& pod) const override;
  void observe(const PodDemand& pod) override;
  std::uint64_t state_version() const override { return draws_; }
  bool reads_node_identity() const override { return true; }  // the draw hashes the name

 private:
  std::uint64_t seed_;
  std::uint64_t draws_ = 0;
};

}  // namespace gpushare::core
