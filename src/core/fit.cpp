#include "gpushare/core/fit.h"

#include <fmt/format.h>

#include <algorithm>

namespace gpushare::core {

bool FitResult::unresolvable() const {
  switch (status) {
    case FitStatus::kNoGpus:
    case FitStatus::kMisconfigured:
    case FitStatus::kAllGpusUnhealthy:
    case FitStatus::kModelNotAllowed:
    case FitStatus::kExceedsGpuCapacity:
      return true;
    default:
      return false;
  }
}

std::string FitResult::reason(std::string_view resource) const {
  switch (status) {
    case FitStatus::kFits:
      return "fits";
    case FitStatus::kNoGpus:
      return fmt::format("node has no GPUs advertising {}", resource);
    case FitStatus::kMisconfigured:
      return fmt::format("node's GPU resources are unusable: {}", detail);
    case FitStatus::kAllGpusUnhealthy:
      return "every GPU on the node is marked unhealthy";
    case FitStatus::kModelNotAllowed:
      return "node's GPU model is not among the pod's allowed models";
    case FitStatus::kInsufficientCpu:
      return "insufficient cpu";
    case FitStatus::kInsufficientMemory:
      return "insufficient memory";
    case FitStatus::kExceedsGpuCapacity:
      return fmt::format("requested {} {} exceeds one GPU's capacity of {} on this node", requested,
                         resource, gpu_capacity);
    case FitStatus::kInsufficientGpuMemory:
      return fmt::format("insufficient {} on any single GPU: largest free {} of requested {}",
                         resource, largest_free, requested);
    case FitStatus::kNotEnoughWholeGpus:
      return fmt::format("needs {} wholly free GPUs, node has {}", requested, whole_gpus_free);
  }
  return "unknown";
}

FitStatus fit_status(const NodeState& node, const PodDemand& pod) {
  if (pod.wants_gpu()) {
    if (!node.spec().misconfiguration.empty()) return FitStatus::kMisconfigured;
    if (node.gpu_count() == 0 || node.spec().memory_per_gpu <= 0) return FitStatus::kNoGpus;
    if (node.healthy_gpu_count() == 0) return FitStatus::kAllGpusUnhealthy;
    if (!pod.allowed_models.empty() &&
        std::find(pod.allowed_models.begin(), pod.allowed_models.end(), node.spec().gpu_model) ==
            pod.allowed_models.end()) {
      return FitStatus::kModelNotAllowed;
    }
    if (pod.per_gpu > node.spec().memory_per_gpu || pod.gpu_count > node.healthy_gpu_count()) {
      return FitStatus::kExceedsGpuCapacity;
    }
  }
  // CPU-only pods: only CPU and memory matter (when tracked).
  if (pod.cpu_milli > node.cpu_free()) return FitStatus::kInsufficientCpu;
  if (pod.memory > node.memory_free()) return FitStatus::kInsufficientMemory;
  if (!pod.wants_gpu()) return FitStatus::kFits;
  if (pod.needs_whole_gpus()) {
    if (node.wholly_free_gpu_count() < pod.gpu_count || node.total_free() < pod.total_gpu()) {
      return FitStatus::kNotEnoughWholeGpus;
    }
  } else if (node.largest_free() < pod.per_gpu) {
    return FitStatus::kInsufficientGpuMemory;
  }
  return FitStatus::kFits;
}

FitResult check_fit(const NodeState& node, const PodDemand& pod) {
  FitResult result;
  result.status = fit_status(node, pod);
  result.requested = pod.per_gpu;
  result.largest_free = node.largest_free();
  result.whole_gpus_free = node.wholly_free_gpu_count();
  result.gpu_capacity = node.spec().memory_per_gpu;
  if (result.status == FitStatus::kMisconfigured) result.detail = node.spec().misconfiguration;
  if ((result.status == FitStatus::kExceedsGpuCapacity ||
       result.status == FitStatus::kNotEnoughWholeGpus) &&
      pod.needs_whole_gpus()) {
    result.requested = pod.gpu_count;
  }
  return result;
}

std::vector<int> gpus_that_fit(const NodeState& node, const PodDemand& pod) {
  std::vector<int> result;
  if (node.total_free() < pod.per_gpu) return result;
  for (int i = 0; i < node.gpu_count(); ++i) {
    const auto& gpu = node.gpus()[static_cast<std::size_t>(i)];
    if (gpu.healthy && gpu.free() >= pod.per_gpu) result.push_back(i);
  }
  return result;
}

std::vector<int> lowest_whole_gpus(const NodeState& node, int count) {
  std::vector<int> result;
  for (int i = 0; i < node.gpu_count() && static_cast<int>(result.size()) < count; ++i) {
    const auto& gpu = node.gpus()[static_cast<std::size_t>(i)];
    if (gpu.healthy && gpu.used == 0) result.push_back(i);
  }
  if (static_cast<int>(result.size()) < count) result.clear();
  return result;
}

}  // namespace gpushare::core
