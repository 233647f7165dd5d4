#include "gpushare/deviceplugin/matching.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <map>
#include <stdexcept>

#include "gpushare/kube/annotations.h"

namespace gpushare::deviceplugin {
namespace {

using nlohmann::json;

std::optional<std::int64_t> parse_int(std::string_view text) {
  std::int64_t value = 0;
  const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc() || ptr != text.data() + text.size()) return std::nullopt;
  return value;
}

// A gpu-mem quantity: a count of units, written as an integer string (or a JSON number).
std::optional<std::int64_t> quantity(const json& value) {
  if (value.is_number_integer()) return value.get<std::int64_t>();
  if (value.is_string()) return parse_int(value.get_ref<const std::string&>());
  return std::nullopt;
}

const json* member(const json& object, std::string_view key) {
  if (!object.is_object()) return nullptr;
  const auto it = object.find(key);
  return it == object.end() ? nullptr : &*it;
}

std::string string_member(const json& object, std::string_view key) {
  const json* value = member(object, key);
  return value && value->is_string() ? value->get<std::string>() : std::string();
}

bool older(const PendingPod& a, const PendingPod& b) {
  if (a.assume_time_ns != b.assume_time_ns) return a.assume_time_ns < b.assume_time_ns;
  return a.key() < b.key();
}

}  // namespace

std::optional<PendingPod> read_pod(const json& pod, std::string_view resource_name,
                                   std::string* problem) {
  const json* metadata = member(pod, "metadata");
  const json* spec = member(pod, "spec");
  if (!metadata || !spec) {
    if (problem) *problem = "pod without metadata or spec";
    return std::nullopt;
  }
  PendingPod out;
  out.namespace_name = string_member(*metadata, "namespace");
  out.name = string_member(*metadata, "name");
  out.uid = string_member(*metadata, "uid");
  out.resource_version = string_member(*metadata, "resourceVersion");
  if (member(*metadata, "deletionTimestamp")) return std::nullopt;
  const json* status = member(pod, "status");
  out.phase = status ? string_member(*status, "phase") : std::string();
  if (out.phase == "Succeeded" || out.phase == "Failed") return std::nullopt;

  if (const json* containers = member(*spec, "containers"); containers && containers->is_array()) {
    for (const json& container : *containers) {
      const json* resources = member(container, "resources");
      const json* limits = resources ? member(*resources, "limits") : nullptr;
      const json* value = limits ? member(*limits, resource_name) : nullptr;
      if (!value) continue;
      const auto units = quantity(*value);
      if (!units || *units < 0) {
        if (problem) {
          *problem = fmt::format("pod {}: container {} has an unreadable {} limit {}", out.key(),
                                 string_member(container, "name"), resource_name, value->dump());
        }
        return std::nullopt;
      }
      if (*units == 0) continue;
      out.containers.push_back(string_member(container, "name"));
      out.requests.push_back(*units);
      out.total += *units;
    }
  }
  if (out.requests.empty()) return std::nullopt;

  const json* annotations = member(*metadata, "annotations");
  if (annotations && annotations->is_object()) {
    const std::string index = string_member(*annotations, kube::kAnnotationGpuIndex);
    if (!index.empty()) {
      const auto parsed = parse_int(index);
      if (parsed && *parsed >= 0 && *parsed < 1024) {
        out.gpu_index = static_cast<int>(*parsed);
      } else if (problem) {
        *problem = fmt::format("pod {}: unreadable {} \"{}\"", out.key(), kube::kAnnotationGpuIndex,
                               index);
      }
    }
    out.assigned = string_member(*annotations, kube::kAnnotationAssigned) == "true";
    const std::string assume = string_member(*annotations, kube::kAnnotationAssumeTime);
    if (const auto parsed = parse_int(assume)) out.assume_time_ns = *parsed;
  }
  return out;
}

bool waiting(const PendingPod& pod) {
  return (pod.phase.empty() || pod.phase == "Pending") && !pod.assigned && pod.assume_time_ns > 0 &&
         pod.gpu_index.has_value() && !pod.requests.empty();
}

std::optional<Match> match_call(std::span<const PendingPod> pods,
                                std::span<const InProgress> in_progress, std::int64_t size,
                                std::optional<int> device_gpu) {
  for (auto it = in_progress.rbegin(); it != in_progress.rend(); ++it) {
    if (it->next < it->pod.requests.size() && it->pod.requests[it->next] == size) {
      return Match{it->pod, it->gpu, it->next, true, {}};
    }
  }
  const PendingPod* best = nullptr;
  std::vector<const PendingPod*> fitting;
  for (const auto& pod : pods) {
    if (!waiting(pod) || pod.requests.front() != size) continue;
    bool busy = false;  // already handed its first container's GPU
    for (const auto& entry : in_progress) busy = busy || entry.pod.key() == pod.key();
    if (busy) continue;
    fitting.push_back(&pod);
  }
  for (const PendingPod* pod : fitting) {
    if (!best) {
      best = pod;
      continue;
    }
    const bool on_gpu = device_gpu && pod->gpu_index == device_gpu;
    const bool best_on_gpu = device_gpu && best->gpu_index == device_gpu;
    if (on_gpu != best_on_gpu ? on_gpu : older(*pod, *best)) best = pod;
  }
  if (!best) return std::nullopt;
  Match match{*best, *best->gpu_index, 0, false, {}};
  for (const PendingPod* pod : fitting) {
    if (pod != best && pod->gpu_index != best->gpu_index)
      match.ambiguous_with.push_back(pod->key());
  }
  return match;
}

int gpu_of_devices(const Advertisement& ad, std::span<const std::string> ids) {
  std::optional<int> gpu;
  for (const auto& id : ids) {
    const auto ref = parse_device_id(id);
    const AdvertisedGpu* owner = ref ? ad.by_uuid(ref->uuid) : nullptr;
    if (!owner || ref->unit >= ad.units_per_gpu) {
      throw std::invalid_argument(
          fmt::format("device ID \"{}\" is not one this plugin advertises", id));
    }
    if (gpu && *gpu != owner->index) {
      throw std::invalid_argument(
          fmt::format("device IDs on two GPUs ({} and {}): a gpushare container runs on one GPU",
                      ad.gpus[static_cast<std::size_t>(*gpu)].uuid, owner->uuid));
    }
    gpu = owner->index;
  }
  if (!gpu) throw std::invalid_argument("no device IDs");
  return *gpu;
}

std::vector<std::string> preferred_ids(const Advertisement& ad,
                                       std::span<const std::string> available,
                                       std::span<const std::string> must_include, std::int64_t size,
                                       std::optional<int> gpu) {
  std::vector<std::string> out(must_include.begin(), must_include.end());
  std::set<std::string> taken(out.begin(), out.end());
  // Available IDs per GPU, in unit order.
  std::map<int, std::map<std::int64_t, std::string>> by_gpu;
  for (const auto& id : available) {
    const auto ref = parse_device_id(id);
    const AdvertisedGpu* owner = ref ? ad.by_uuid(ref->uuid) : nullptr;
    if (owner && !taken.contains(id)) by_gpu[owner->index].emplace(ref->unit, id);
  }
  auto take_from = [&](int index) {
    for (const auto& [unit, id] : by_gpu[index]) {
      if (static_cast<std::int64_t>(out.size()) >= size) return;
      if (taken.insert(id).second) out.push_back(id);
    }
  };
  if (gpu) take_from(*gpu);
  while (static_cast<std::int64_t>(out.size()) < size) {
    int fullest = -1;
    std::size_t most = 0;
    for (const auto& [index, ids] : by_gpu) {
      std::size_t left = 0;
      for (const auto& [unit, id] : ids) left += taken.contains(id) ? 0 : 1;
      if (left > most) {
        most = left;
        fullest = index;
      }
    }
    if (fullest < 0) break;
    take_from(fullest);
  }
  return out;
}

std::vector<Correction> reconcile(std::span<const Handout> handouts,
                                  std::span<const HeldDevices> held,
                                  std::span<const PendingPod> pods,
                                  std::vector<Handout>* still_unknown) {
  std::vector<Correction> out;
  for (const auto& handout : handouts) {
    const HeldDevices* holder = nullptr;
    for (const auto& entry : held) {
      for (const auto& id : entry.device_ids) {
        if (!handout.device_ids.empty() && id == handout.device_ids.front()) holder = &entry;
      }
    }
    if (!holder) {
      if (still_unknown) still_unknown->push_back(handout);
      continue;
    }
    if (holder->pod_key == handout.marked_pod) continue;
    const PendingPod* truth = nullptr;
    for (const auto& pod : pods) {
      if (pod.key() == holder->pod_key) truth = &pod;
    }
    if (!truth || !truth->gpu_index) continue;  // not a gpushare pod of ours: nothing to move
    out.push_back(Correction{holder->pod_key, handout.gpu, handout.marked_pod, *truth->gpu_index});
  }
  return out;
}

}  // namespace gpushare::deviceplugin
