#pragma once
// Preemption is placement: which of the victims kube-scheduler proposes on a node must go so
// that the pod fits one GPU there. Pure, like the rest of the core.

#include <optional>
#include <string>
#include <vector>

#include "gpushare/core/node_state.h"
#include "gpushare/core/pod_allocation.h"
#include "gpushare/core/pod_demand.h"

namespace gpushare::core {

// A victim kube-scheduler proposes, with what it holds as far as the model or its object tells
// (nullopt: nothing known).
struct PreemptionVictim {
  std::string uid;
  std::optional<PodAllocation> allocation;
};

// The victims to evict on `node` for a pod demanding `demand` (GPU demand only), in the order
// given: the victims holding no GPU memory on this node are kept (kube-scheduler chose them
// for other resources), then the fewest GPU-holding victims that free one GPU enough (largest
// first per GPU; the GPU needing the fewest victims, then the least memory, wins). A victim
// listed twice counts once. nullopt when even evicting every victim leaves no GPU that fits.
std::optional<std::vector<std::string>> choose_victims(
    const NodeState& node, const PodDemand& demand, const std::vector<PreemptionVictim>& victims);

}  // namespace gpushare::core
