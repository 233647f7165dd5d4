#pragma once
// The baselines of the FGD paper's simulator (Weng et al., USENIX ATC'23), scored exactly as
// there, including the integer truncation that makes nearby nodes tie. Constants that the paper
// writes in milli-GPU are scaled by the node's GPU capacity, so that a GPU of 1000 units gives
// the paper's numbers and other units (GiB in the service) give the same proportions.
//
// Unless stated otherwise a sharing pod takes the GPU with the least free memory that still
// fits (lowest index on a tie) and whole-GPU pods take the lowest-index free GPUs.

#include <cstdint>

#include "gpushare/core/placement_policy.h"

namespace gpushare::core {

// The GPUs the paper's baselines give a pod on a node where it fits (see above).
std::vector<int> best_fit_gpus(const NodeState& node, const PodDemand& pod);

// Best fit on CPU and GPU left after placement:
// floor(100 * (1 - (0.5 (c - c_p) / 128 cores + 0.5 (G - demand) / 8 GPUs))).
class BestFitPolicy final : public PlacementPolicy {
 public:
  std::string_view name() const override { return "best-fit"; }
  std::optional<Placement> place(const NodeState& node, const PodDemand& pod) const override;
};

// Tetris-style dot product of the node's free and the pod's requested (CPU, GPU), each scaled
// by the largest node: the smallest product wins. floor(100 * (1 - product / 2)).
class DotProductPolicy final : public PlacementPolicy {
 public:
  std::string_view name() const override { return "dot-product"; }
  std::optional<Placement> place(const NodeState& node, const PodDemand& pod) const override;
};

// Prefer already shared GPUs (score 50..100 by how little they have left), then free GPUs on a
// used node (33..50), then idle nodes (small ones first). CPU-only pods score 0 everywhere.
class GpuPackingPolicy final : public PlacementPolicy {
 public:
  std::string_view name() const override { return "gpu-packing"; }
  std::optional<Placement> place(const NodeState& node, const PodDemand& pod) const override;
};

// A feasible node uniformly at random, and a random fitting GPU in it. Deterministic: the
// score is a hash of (seed, pods observed so far, node, pod), so place() stays a pure function
// and every placed pod draws anew.
class RandomPolicy final : public PlacementPolicy {
 public:
  explicit RandomPolicy(std::uint64_t seed = 0) : seed_(seed) {}
  std::string_view name() const override { return "random"; }
  std::optional<Placement> place(const NodeState& node, const PodDemand& pod) const override;
  void observe(const PodDemand& pod) override;
  std::uint64_t state_version() const override { return draws_; }
  bool reads_node_identity() const override { return true; }  // the draw hashes the name

 private:
  std::uint64_t seed_;
  std::uint64_t draws_ = 0;
};

}  // namespace gpushare::core
