#include "gpushare/kube/claim_check.h"

#include <fmt/format.h>

namespace gpushare::kube {

std::string claim_warning(const core::ClusterModel& model, const PodInfo& pod,
                          const core::PodAllocation& allocation) {
  std::string warning;
  if (!pod.annotation_warning.empty()) warning = pod.annotation_warning;
  if (const core::Units uncounted = model.uncounted_claim(allocation); uncounted > 0) {
    if (!warning.empty()) warning += "; ";
    warning += fmt::format("claims {} on node {} {}, more than it can hold; counted as {}",
                           allocation.per_gpu, allocation.node,
                           allocation.gpus.empty() ? std::string("(no GPU index)")
                                                   : fmt::format("GPU {}", allocation.gpus.front()),
                           allocation.per_gpu - uncounted);
  }
  if (warning.empty()) return warning;
  return fmt::format("pod {} (uid {}): {}", pod.key(), pod.uid, warning);
}

}  // namespace gpushare::kube
