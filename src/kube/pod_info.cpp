#include "gpushare/kube/pod_info.h"

#include <fmt/format.h>

#include <charconv>

#include "gpushare/core/quantity.h"
#include "gpushare/kube/annotations.h"
#include "gpushare/kube/dra_objects.h"
#include "gpushare/kube/json_fields.h"
#include "gpushare/kube/pod_pin.h"
#include "gpushare/kube/pod_requests.h"
#include "gpushare/kube/quantity_json.h"

namespace gpushare::kube {
namespace {

template <typename T>
std::optional<T> parse_decimal(std::string_view text) {
  T value{};
  const auto* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (ec != std::errc() || ptr != end || text.empty()) return std::nullopt;
  return value;
}

core::Units container_request(json::Object container, const ResourceNames& names,
                              std::string_view pod_key) {
  const auto resources = object_field(container, "resources", "container resources");
  if (!resources) return 0;
  const std::string container_name = string_field(container, "name", "container name");
  for (const char* field : {"limits", "requests"}) {
    const auto values = object_field(*resources, field, "container resources");
    if (!values) continue;
    if (const auto quantity = present_field(*values, names.memory)) {
      return whole_units_of(*quantity, fmt::format("pod {} container {} {} {}", pod_key,
                                                   container_name, field, names.memory));
    }
  }
  return 0;
}

// The device-plugin annotations (exact keys). Malformed ones are ignored rather than fatal:
// they were written by someone else.
void read_annotations(json::Object annotations, PodInfo& info) {
  auto text = [&](std::string_view key) -> std::optional<std::string_view> {
    const auto value = json::find_exact(annotations, key);
    std::string_view result;
    if (!value || value->get_string().get(result) != simdjson::SUCCESS) return std::nullopt;
    return result;
  };
  if (auto v = text(kAnnotationGpuIndex)) {
    if (auto idx = parse_decimal<int>(*v); idx && *idx >= 0) info.gpu_index = idx;
  }
  // A claim beyond any GPU (up to int64's range, or beyond it) is clamped, not dropped: the
  // pod may really hold its GPU, so it must keep counting (as a full GPU, see charge_for).
  auto memory_claim = [&](std::string_view key) -> std::optional<core::Units> {
    const auto v = text(key);
    if (!v) return std::nullopt;
    auto n = parse_decimal<core::Units>(*v);
    const bool too_large =
        (!n && !v->empty() && v->find_first_not_of("0123456789") == std::string_view::npos) ||
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

// metadata.ownerReferences' controller entry. Entries of the wrong type, and controller flags
// that are not `true`, are skipped; two controllers leave none (the API server refuses such a
// pod, so whoever wrote it is not a controller we can name).
std::optional<OwnerRef> controller_of(json::Object metadata) {
  const auto owners = json::find_member(metadata, "ownerReferences");
  json::Array list;
  if (!owners || owners->get_array().get(list) != simdjson::SUCCESS) return std::nullopt;
  std::optional<OwnerRef> found;
  for (const json::Value item : list) {
    json::Object owner;
    if (item.get_object().get(owner) != simdjson::SUCCESS) continue;
    const auto controller = json::find_member(owner, "controller");
    bool is_controller = false;
    if (!controller || controller->get_bool().get(is_controller) != simdjson::SUCCESS ||
        !is_controller)
      continue;
    if (found) return std::nullopt;  // a second controller
    auto text = [&](std::string_view key) {
      const auto value = json::find_member(owner, key);
      std::string_view result;
      if (!value || value->get_string().get(result) != simdjson::SUCCESS) return std::string();
      return std::string(result);
    };
    OwnerRef ref{text("kind"), text("name"), text("uid")};
    if (ref.uid.empty()) return std::nullopt;  // a controller we cannot name
    found = std::move(ref);
  }
  return found;
}

}  // namespace

PodInfo decode_pod(const simdjson::dom::element& pod_value, const ResourceNames& names) {
  json::Object pod;
  if (pod_value.get_object().get(pod) != simdjson::SUCCESS) {
    throw BadInput(fmt::format("pod must be an object, got {}", json::type_name(pod_value)));
  }
  PodInfo info;
  const auto metadata = object_field(pod, "metadata", "pod metadata");
  if (!metadata) throw BadInput("pod has no metadata");
  info.uid = string_field(*metadata, "uid", "pod metadata.uid");
  info.name = string_field(*metadata, "name", "pod metadata.name");
  info.namespace_name = string_field(*metadata, "namespace", "pod metadata.namespace", "default");
  info.resource_version =
      string_field(*metadata, "resourceVersion", "pod metadata.resourceVersion");
  if (const auto deletion = json::find_member(*metadata, "deletionTimestamp")) {
    info.terminating = !deletion->is_null();
  }
  if (info.name.empty()) throw BadInput("pod metadata.name is empty");
  info.controller = controller_of(*metadata);
  if (const auto spec_value = present_field(pod, "spec")) {
    const json::Object spec = as_object(*spec_value, "pod spec");
    info.node_name = string_field(spec, "nodeName", "pod spec.nodeName");
    if (const auto containers = array_field(spec, "containers", "pod spec.containers")) {
      for (const json::Value item : *containers) {
        json::Object container;
        if (item.get_object().get(container) != simdjson::SUCCESS) {
          throw BadInput("pod spec.containers[] must be objects");
        }
        const core::Units amount = container_request(container, names, info.key());
        if (info.request > INT64_MAX / 2 - amount) throw BadInput("pod request out of range");
        info.request += amount;
      }
    }
    const CpuMemory requested = cpu_memory_request_of(*spec_value, info.key());
    info.cpu_milli = requested.cpu_milli;
    info.memory = requested.memory;
    info.model_pin = model_pin_of(*spec_value, names.gpu_model_label);
  }
  if (const auto status = object_field(pod, "status", "pod status")) {
    info.phase = string_field(*status, "phase", "pod status.phase");
  }
  if (const auto annotations = object_field(*metadata, "annotations", "pod annotations")) {
    read_annotations(*annotations, info);
  }
  info.resource_claims = decode_pod_claims(pod_value);
  return info;
}

PodInfo decode_pod_text(std::string_view text, const ResourceNames& names) {
  thread_local json::Parser parser;
  const PodInfo info = decode_pod(parse_text(parser, text, "pod"), names);
  parser.shrink();
  return info;
}

PodInfo parse_pod(const Json& pod, const ResourceNames& names) {
  return decode_tree(pod, [&](json::Value value) { return decode_pod(value, names); });
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
  allocation.model_pin = pod.model_pin;
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
