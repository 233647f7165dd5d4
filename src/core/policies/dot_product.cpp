#include "gpushare/core/policies/dot_product.h"

#include "gpushare/core/fit.h"
#include "gpushare/core/fragmentation.h"
#include "gpushare/core/policies/best_fit.h"
#include "paper_scales.h"

namespace gpushare::core {

using namespace paper_scales;

std::optional<Placement> DotProductPolicy::place(const NodeState& node,
                                                 const PodDemand& pod) const {
  if (!fits(node, pod)) return std::nullopt;
  const double cpu_free = node.spec().cpu_milli > 0 ? static_cast<double>(node.cpu_free()) : 0.0;
  const double gpu_free = static_cast<double>(FreeResources::of(node).total_gpu_free());
  double product = 0;
  product += cpu_free / kMaxSpecCpuMilli * (static_cast<double>(pod.cpu_milli) / kMaxSpecCpuMilli);
  product += gpu_free / gpu_scale(node) * (static_cast<double>(pod.total_gpu()) / gpu_scale(node));
  product /= 2;
  Placement placement;
  placement.score = static_cast<double>(static_cast<std::int64_t>(100 * (1 - product)));
  placement.gpus = best_fit_gpus(node, pod);
  return placement;
}

}  // namespace gpushare::core
