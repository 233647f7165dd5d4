#pragma once
// What a pod holds on its node, as the model records it: GPU memory, CPU and memory.

#include <cstdint>
#include <string>
#include <vector>

#include "gpushare/core/model_pin.h"
#include "gpushare/core/pod_demand.h"

namespace gpushare::core {

struct PodAllocation {
  std::string uid;  // identity: a pod re-created under the same name is a different pod
  std::string namespace_name;
  std::string name;
  std::string node;
  // GPUs the pod holds, `per_gpu` on each. Empty: bound without an index annotation; then
  // `per_gpu` counts against the node's total rather than one GPU. A pod that requests no GPU
  // memory (per_gpu 0) holds no GPU and only its CPU and memory count.
  std::vector<int> gpus;
  Units per_gpu = 0;
  std::int64_t cpu_milli = 0;  // requested milli-cores
  std::int64_t memory = 0;     // requested bytes
  // Assumed: chosen by us and not yet seen bound by the API server. Counts as allocated.
  bool assumed = false;
  std::int64_t assume_time_ns = 0;
  // The pod's pin to GPU models, for /inspect (placement already happened).
  ModelPin model_pin;

  bool holds_gpu() const { return per_gpu > 0; }
  // Saturates instead of overflowing for an absurd per_gpu on several GPUs.
  Units total() const {
    if (gpus.empty()) return per_gpu;
    Units product = 0;
    return __builtin_mul_overflow(per_gpu, static_cast<Units>(gpus.size()), &product) ? INT64_MAX
                                                                                      : product;
  }
  friend bool operator==(const PodAllocation&, const PodAllocation&) = default;
};

}  // namespace gpushare::core
