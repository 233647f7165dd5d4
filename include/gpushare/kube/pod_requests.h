#pragma once
// The CPU and memory a pod requests, counted as kube-scheduler's resource-fit counts them.

#include <cstdint>
#include <string_view>

#include "gpushare/kube/json_access.h"

namespace simdjson::dom {
class element;
}

namespace gpushare::kube {

struct CpuMemory {
  std::int64_t cpu_milli = 0;  // milli-cores
  std::int64_t memory = 0;     // bytes

  friend bool operator==(const CpuMemory&, const CpuMemory&) = default;
};

// From a v1 PodSpec, per resource (CPU and memory apart):
//  - a container asks for requests[r], or limits[r] when the request is absent (the API server
//    copies an absent request from the limit when it stores the pod);
//  - the containers and the sidecars (init containers with restartPolicy Always) are summed;
//  - each other init container runs alone beside the sidecars declared before it, so the pod
//    needs max(that sum, every such init container plus its earlier sidecars);
//  - spec.overhead is added.
// Each quantity is rounded up: CPU to a milli-core, memory to a byte. Throws BadInput naming the
// pod, the container and the field for a malformed quantity, and "out of range" when a sum
// leaves int64.
CpuMemory cpu_memory_request_of(const simdjson::dom::element& spec, std::string_view pod_key);
// The same for a tree built by nlohmann (tests), through its text.
CpuMemory pod_cpu_memory_request(const Json& spec, std::string_view pod_key);

}  // namespace gpushare::kube
