#include "gpushare/core/policies/best_fit.h"

#include <functional>

#include "fitting_gpu_scan.h"
#include "gpushare/core/fit.h"
#include "gpushare/core/fragmentation.h"
#include "paper_scales.h"

namespace gpushare::core {

using namespace paper_scales;

std::vector<int> best_fit_gpus(const NodeState& node, const PodDemand& pod) {
  if (!pod.wants_gpu()) return {};
  if (pod.needs_whole_gpus()) return lowest_whole_gpus(node, pod.gpu_count);
  const int best = preferred_fitting_gpu(node, pod.per_gpu, std::less<Units>());
  return best < 0 ? std::vector<int>{} : std::vector<int>{best};
}

std::optional<Placement> BestFitPolicy::place(const NodeState& node, const PodDemand& pod) const {
  if (!fits(node, pod)) return std::nullopt;
  // Same order of floating-point operations as the paper's simulator, so ties match.
  double raw = 0;
  raw += cpu_left_after(node, pod) / kMaxSpecCpuMilli * 0.5;
  const double gpu_left =
      static_cast<double>(FreeResources::of(node).total_gpu_free() - pod.total_gpu());
  raw += gpu_left / gpu_scale(node) * 0.5;
  Placement placement;
  placement.score = static_cast<double>(static_cast<std::int64_t>((1.0 - raw) * 100));
  placement.gpus = best_fit_gpus(node, pod);
  return placement;
}

}  // namespace gpushare::core
