#include "gpushare/kube/pod_requests.h"

#include <algorithm>
#include <string>

#include <fmt/format.h>

#include "gpushare/kube/quantity_json.h"

namespace gpushare::kube {
namespace {

constexpr std::string_view kCpu = "cpu";
constexpr std::string_view kMemory = "memory";

std::int64_t checked_add(std::int64_t a, std::int64_t b, std::string_view pod_key,
                         std::string_view resource) {
  std::int64_t sum = 0;
  if (__builtin_add_overflow(a, b, &sum)) {
    throw BadInput(fmt::format("pod {} {} request out of range", pod_key, resource));
  }
  return sum;
}

CpuMemory plus(const CpuMemory& a, const CpuMemory& b, std::string_view pod_key) {
  return {checked_add(a.cpu_milli, b.cpu_milli, pod_key, kCpu),
          checked_add(a.memory, b.memory, pod_key, kMemory)};
}

// Resource by resource, as kube-scheduler's maxResourceList.
CpuMemory larger(const CpuMemory& a, const CpuMemory& b) {
  return {std::max(a.cpu_milli, b.cpu_milli), std::max(a.memory, b.memory)};
}

// The quantity of `resource` in a ResourceList (requests, limits or overhead), if set.
const Json* listed(const Json* list, std::string_view resource) {
  if (list == nullptr) return nullptr;
  const Json* value = find_key(*list, resource);
  return value != nullptr && !value->is_null() ? value : nullptr;
}

// CPU from `cpu_list` and memory from `memory_list` (a container may take each from another
// list); `where(list)` names a list for errors, e.g. "pod ml/web container app requests".
template <typename Where>
CpuMemory read_lists(const Json* cpu_list, const Json* memory_list, const Where& where) {
  CpuMemory amount;
  if (const Json* cpu = listed(cpu_list, kCpu)) {
    amount.cpu_milli = quantity_of(*cpu, fmt::format("{} {}", where(cpu_list), kCpu)).milli();
  }
  if (const Json* memory = listed(memory_list, kMemory)) {
    amount.memory =
        quantity_of(*memory, fmt::format("{} {}", where(memory_list), kMemory)).units_ceil();
  }
  return amount;
}

// One container's request: requests[r], or limits[r] where the request is absent.
CpuMemory container_request(const Json& container, std::string_view kind,
                            std::string_view pod_key) {
  const Json* resources = get_object(container, "resources", "container resources");
  if (resources == nullptr) return {};
  const std::string name = get_string(container, "name", "container name");
  const Json* requests = get_object(*resources, "requests", "container resources");
  const Json* limits = get_object(*resources, "limits", "container resources");
  return read_lists(listed(requests, kCpu) != nullptr ? requests : limits,
                    listed(requests, kMemory) != nullptr ? requests : limits,
                    [&](const Json* list) {
                      return fmt::format("pod {} {} {} {}", pod_key, kind, name,
                                         list == requests ? "requests" : "limits");
                    });
}

bool is_sidecar(const Json& init_container) {
  return get_string(init_container, "restartPolicy", "init container restartPolicy") == "Always";
}

}  // namespace

CpuMemory pod_cpu_memory_request(const Json& spec, std::string_view pod_key) {
  CpuMemory running;  // containers and sidecars, all running together
  if (const Json* containers = get_array(spec, "containers", "pod spec.containers")) {
    for (const Json& container : *containers) {
      if (!container.is_object()) throw BadInput("pod spec.containers[] must be objects");
      running = plus(running, container_request(container, "container", pod_key), pod_key);
    }
  }
  // Init containers run one at a time, each beside the sidecars started before it. A sidecar
  // keeps running, so it also joins the containers' sum.
  CpuMemory sidecars;
  CpuMemory init_peak;
  if (const Json* init_containers = get_array(spec, "initContainers", "pod spec.initContainers")) {
    for (const Json& container : *init_containers) {
      if (!container.is_object()) throw BadInput("pod spec.initContainers[] must be objects");
      const CpuMemory request = container_request(container, "init container", pod_key);
      if (is_sidecar(container)) {
        running = plus(running, request, pod_key);
        sidecars = plus(sidecars, request, pod_key);
        init_peak = larger(init_peak, sidecars);  // as kube-scheduler does; never above `running`
      } else {
        init_peak = larger(init_peak, plus(request, sidecars, pod_key));
      }
    }
  }
  const Json* overhead_list = get_object(spec, "overhead", "pod spec.overhead");
  const CpuMemory overhead = read_lists(overhead_list, overhead_list, [&](const Json*) {
    return fmt::format("pod {} overhead", pod_key);
  });
  return plus(larger(running, init_peak), overhead, pod_key);
}

}  // namespace gpushare::kube
