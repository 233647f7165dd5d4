#pragma once
// What a pod asks of a node, in the model's units.

#include <cstdint>
#include <string>
#include <vector>

namespace gpushare::core {

using Units = std::int64_t;

// The most GPU memory one pod may claim on one GPU, in any unit the device plugin uses (GiB or
// MiB): a 1 EiB GPU in MiB, far beyond any real card, and small enough that sums of many such
// claims stay far from int64's range. Claims read from outside (annotations) above it are
// clamped to it; the model then counts no claim above its GPU's capacity.
inline constexpr Units kMaxGpuMemoryClaim = Units{1} << 40;

struct PodDemand {
  // Memory wanted on each GPU the pod uses. For a gpushare pod: its whole request, on one GPU.
  Units per_gpu = 0;
  // Number of GPUs. gpushare pods use exactly one; the simulator also models multi-GPU pods,
  // which need that many GPUs that are wholly free.
  int gpu_count = 1;
  // CPU (milli-cores) and memory; checked only on nodes that track them (the simulator).
  std::int64_t cpu_milli = 0;
  std::int64_t memory = 0;
  // GPU models the pod may use; empty = any.
  std::vector<std::string> allowed_models;

  bool wants_gpu() const { return per_gpu > 0 && gpu_count > 0; }
  bool needs_whole_gpus() const { return gpu_count > 1; }
  Units total_gpu() const { return wants_gpu() ? per_gpu * gpu_count : 0; }
};

}  // namespace gpushare::core
