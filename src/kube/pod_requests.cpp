#include "gpushare/kube/pod_requests.h"

#include <fmt/format.h>

#include <algorithm>
#include <string>

#include "gpushare/kube/json_fields.h"
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

using List = std::optional<json::Object>;

// The quantity of `resource` in a ResourceList (requests, limits or overhead), if set.
std::optional<json::Value> listed(const List& list, std::string_view resource) {
  if (!list) return std::nullopt;
  return present_field(*list, resource);
}

// CPU from `cpu_list` and memory from `memory_list` (a container may take each from another
// list); `where(list)` names a list for errors, e.g. "pod ml/web container app requests".
template <typename Where>
CpuMemory read_lists(const List& cpu_list, const List& memory_list, const Where& where) {
  CpuMemory amount;
  if (const auto cpu = listed(cpu_list, kCpu)) {
    amount.cpu_milli = quantity_of(*cpu, fmt::format("{} {}", where(cpu_list), kCpu)).milli();
  }
  if (const auto memory = listed(memory_list, kMemory)) {
    amount.memory =
        quantity_of(*memory, fmt::format("{} {}", where(memory_list), kMemory)).units_ceil();
  }
  return amount;
}

// One container's request: requests[r], or limits[r] where the request is absent.
CpuMemory container_request(json::Object container, std::string_view kind,
                            std::string_view pod_key) {
  const List resources = object_field(container, "resources", "container resources");
  if (!resources) return {};
  const std::string name = string_field(container, "name", "container name");
  const List requests = object_field(*resources, "requests", "container resources");
  const List limits = object_field(*resources, "limits", "container resources");
  const List& cpu_list = listed(requests, kCpu) ? requests : limits;
  const List& memory_list = listed(requests, kMemory) ? requests : limits;
  return read_lists(cpu_list, memory_list, [&](const List& list) {
    return fmt::format("pod {} {} {} {}", pod_key, kind, name,
                       &list == &requests ? "requests" : "limits");
  });
}

bool is_sidecar(json::Object init_container) {
  return string_field(init_container, "restartPolicy", "init container restartPolicy") == "Always";
}

// Each element of `array` as an object, or BadInput(`message`).
json::Object element_object(json::Value value, const char* message) {
  json::Object object;
  if (value.get_object().get(object) != simdjson::SUCCESS) throw BadInput(message);
  return object;
}

}  // namespace

CpuMemory cpu_memory_request_of(const simdjson::dom::element& spec_value,
                                std::string_view pod_key) {
  const json::Object spec = as_object(spec_value, "pod spec");
  CpuMemory running;  // containers and sidecars, all running together
  if (const auto containers = array_field(spec, "containers", "pod spec.containers")) {
    for (const json::Value item : *containers) {
      const json::Object container = element_object(item, "pod spec.containers[] must be objects");
      running = plus(running, container_request(container, "container", pod_key), pod_key);
    }
  }
  // Init containers run one at a time, each beside the sidecars started before it. A sidecar
  // keeps running, so it also joins the containers' sum.
  CpuMemory sidecars;
  CpuMemory init_peak;
  if (const auto init_containers = array_field(spec, "initContainers", "pod spec.initContainers")) {
    for (const json::Value item : *init_containers) {
      const json::Object container =
          element_object(item, "pod spec.initContainers[] must be objects");
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
  const List overhead_list = object_field(spec, "overhead", "pod spec.overhead");
  const CpuMemory overhead = read_lists(overhead_list, overhead_list, [&](const List&) {
    return fmt::format("pod {} overhead", pod_key);
  });
  return plus(larger(running, init_peak), overhead, pod_key);
}

CpuMemory pod_cpu_memory_request(const Json& spec, std::string_view pod_key) {
  return decode_tree(spec,
                     [&](json::Value value) { return cpu_memory_request_of(value, pod_key); });
}

}  // namespace gpushare::kube
