#include "gpushare/core/policies/spread.h"

#include <functional>

#include "fitting_gpu_scan.h"
#include "gpushare/core/fit.h"

namespace gpushare::core {

std::optional<double> SpreadPolicy::score(const NodeState& node, const PodDemand& pod) const {
  if (!fits(node, pod)) return std::nullopt;
  // As place() computes it: the score does not depend on the GPU chosen.
  const double node_capacity = static_cast<double>(std::max<Units>(1, node.total_capacity()));
  return static_cast<double>(node.total_free() - pod.total_gpu()) / node_capacity;
}

std::optional<Placement> SpreadPolicy::place(const NodeState& node, const PodDemand& pod) const {
  if (!fits(node, pod)) return std::nullopt;
  Placement placement;
  const double node_capacity = static_cast<double>(std::max<Units>(1, node.total_capacity()));
  // Emptiest node first: the share of the node still free after placement.
  placement.score = static_cast<double>(node.total_free() - pod.total_gpu()) / node_capacity;
  if (!pod.wants_gpu()) return placement;
  if (pod.needs_whole_gpus()) {
    placement.gpus = lowest_whole_gpus(node, pod.gpu_count);
    return placement;
  }
  const int best = preferred_fitting_gpu(node, pod.per_gpu, std::greater<Units>());
  placement.gpus = {best};
  return placement;
}

}  // namespace gpushare::core
