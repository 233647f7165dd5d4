#include "gpushare/kube/pod_info.h"

#include <charconv>

#include <fmt/format.h>

#include "gpushare/core/quantity.h"
#include "gpushare/kube/annotations.h"
#include "gpushare/kube/pod_requests.h"

namespace gpushare::kube {
namespace {

// Reads a quantity given as a JSON string ("8", "1k") or, leniently, a JSON integer.
core::Units units_of(const Json& value, std::string_view what) {
  try {
    if (value.is_string()) return core::parse_whole_units(value.get_ref<const std::string&>());
    if (value.is_number_unsigned()) {
      const auto v = value.get<std::uint64_t>();
      if (v > static_cast<std::uint64_t>(INT64_MAX / 1000)) throw core::QuantityError("out of range");
      return static_cast<core::Units>(v);
    }
    if (value.is_number_integer()) {
      const auto v = value.get<std::int64_t>();
      if (v < 0) throw core::QuantityError("negative quantities are not allowed here");
      return v;
    }
  } catch (const core::QuantityError& e) {
    throw BadInput(fmt::format("{}: {}", what, e.what()));
  }
  throw BadInput(fmt::format("{} must be a quantity string, got {}", what, value.type_name()));
}

template <typename T>
std::optional<T> parse_decimal(std::string_view text) {
  T value{};
  const auto* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (ec != std::errc() || ptr != end || text.empty()) return std::nullopt;
  return value;
}

core::Units container_request(const Json& container, const ResourceNames& names,
                              std::string_view pod_key) {
  const Json* resources = get_object(container, "resources", "container resources");
  if (resources == nullptr) return 0;
  const std::string container_name = get_string(container, "name", "container name");
  for (const char* field : {"limits", "requests"}) {
    const Json* values = get_object(*resources, field, "container resources");
    if (values == nullptr) continue;
    if (const Json* quantity = find_key(*values, names.memory); quantity && !quantity->is_null()) {
      return units_of(*quantity, fmt::format("pod {} container {} {} {}", pod_key, container_name,
                                             field, names.memory));
    }
  }
  return 0;
}

}  // namespace

PodInfo parse_pod(const Json& pod, const ResourceNames& names) {
  if (!pod.is_object()) throw BadInput(fmt::format("pod must be an object, got {}", pod.type_name()));
  PodInfo info;
  const Json* metadata = get_object(pod, "metadata", "pod metadata");
  if (metadata == nullptr) throw BadInput("pod has no metadata");
  info.uid = get_string(*metadata, "uid", "pod metadata.uid");
  info.name = get_string(*metadata, "name", "pod metadata.name");
  info.namespace_name = get_string(*metadata, "namespace", "pod metadata.namespace", "default");
  info.resource_version = get_string(*metadata, "resourceVersion", "pod metadata.resourceVersion");
  if (const Json* deletion = find_key(*metadata, "deletionTimestamp")) {
    info.terminating = !deletion->is_null();
  }
  if (info.name.empty()) throw BadInput("pod metadata.name is empty");
  if (const Json* spec = get_object(pod, "spec", "pod spec")) {
    info.node_name = get_string(*spec, "nodeName", "pod spec.nodeName");
    if (const Json* containers = get_array(*spec, "containers", "pod spec.containers")) {
      for (const Json& container : *containers) {
        if (!container.is_object()) throw BadInput("pod spec.containers[] must be objects");
        const core::Units amount = container_request(container, names, info.key());
        if (info.request > INT64_MAX / 2 - amount) throw BadInput("pod request out of range");
        info.request += amount;
      }
    }
    const CpuMemory requested = pod_cpu_memory_request(*spec, info.key());
    info.cpu_milli = requested.cpu_milli;
    info.memory = requested.memory;
  }
  if (const Json* status = get_object(pod, "status", "pod status")) {
    info.phase = get_string(*status, "phase", "pod status.phase");
  }
  if (const Json* annotations = get_object(*metadata, "annotations", "pod annotations")) {
    auto text = [&](std::string_view key) -> std::optional<std::string> {
      auto it = annotations->find(key);
      if (it == annotations->end() || !it->is_string()) return std::nullopt;
      return it->get<std::string>();
    };
    // Malformed annotations are ignored rather than fatal: they were written by someone else.
    if (auto v = text(kAnnotationGpuIndex)) {
      if (auto idx = parse_decimal<int>(*v); idx && *idx >= 0) info.gpu_index = idx;
    }
    // A claim beyond any GPU (up to int64's range, or beyond it) is clamped, not dropped: the
    // pod may really hold its GPU, so it must keep counting (as a full GPU, see charge_for).
    auto memory_claim = [&](std::string_view key) -> std::optional<core::Units> {
      const auto v = text(key);
      if (!v) return std::nullopt;
      auto n = parse_decimal<core::Units>(*v);
      const bool too_large = (!n && !v->empty() && v->find_first_not_of("0123456789") == std::string::npos) ||
                             (n && *n > core::kMaxGpuMemoryClaim);
      if (too_large) {
        info.annotation_warning = fmt::format("annotation {}=\"{}{}\" is beyond any GPU", key,
                                              v->substr(0, 24), v->size() > 24 ? "..." : "");
        return core::kMaxGpuMemoryClaim;
      }
      if (n && *n >= 0) return n;
      return std::nullopt;
    };
    info.annotated_request = memory_claim(kAnnotationPodRequest);
    info.annotated_device_memory = memory_claim(kAnnotationDeviceMemory);
    if (auto v = text(kAnnotationAssigned)) info.assigned = (*v == "true");
    if (auto v = text(kAnnotationAssumeTime)) info.assume_time_ns = parse_decimal<std::int64_t>(*v);
  }
  return info;
}

std::optional<core::PodAllocation> allocation_of(const PodInfo& pod) {
  if (pod.node_name.empty() || pod.finished()) return std::nullopt;
  core::PodAllocation allocation;
  allocation.uid = pod.uid;
  allocation.namespace_name = pod.namespace_name;
  allocation.name = pod.name;
  allocation.node = pod.node_name;
  allocation.cpu_milli = pod.cpu_milli;
  allocation.memory = pod.memory;
  // A pod without GPU memory holds no GPU, whatever stale annotations it carries.
  if (pod.wants_gpu()) {
    if (pod.gpu_index) allocation.gpus = {*pod.gpu_index};
    allocation.per_gpu = pod.effective_request();
    allocation.assume_time_ns = pod.assume_time_ns.value_or(0);
  }
  return allocation;
}

core::PodEvidence evidence_of(const PodInfo& pod, std::string_view uid) {
  core::PodEvidence evidence;
  evidence.uid = uid.empty() ? pod.uid : std::string(uid);
  if (pod.uid != evidence.uid || pod.finished()) {
    evidence.kind = core::PodEvidence::Kind::kGone;
  } else if (auto allocation = allocation_of(pod)) {
    evidence.kind = core::PodEvidence::Kind::kBound;
    evidence.bound = std::move(allocation);
  } else {
    evidence.kind = core::PodEvidence::Kind::kPending;
  }
  return evidence;
}

std::map<std::string, std::string> bind_annotations(int gpu, core::Units pod_request,
                                                    core::Units device_memory,
                                                    std::int64_t assume_time_ns) {
  return {
      {std::string(kAnnotationGpuIndex), std::to_string(gpu)},
      {std::string(kAnnotationPodRequest), std::to_string(pod_request)},
      {std::string(kAnnotationDeviceMemory), std::to_string(device_memory)},
      {std::string(kAnnotationAssigned), "false"},
      {std::string(kAnnotationAssumeTime), std::to_string(assume_time_ns)},
  };
}

}  // namespace gpushare::kube
