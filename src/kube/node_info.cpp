#include "gpushare/kube/node_info.h"

#include <charconv>

#include <fmt/format.h>

#include "gpushare/core/quantity.h"
#include "gpushare/kube/annotations.h"
#include "gpushare/kube/quantity_json.h"

namespace gpushare::kube {
namespace {

// Upper bounds that no real GPU node reaches; beyond them a value is a typo, not hardware.
constexpr std::int64_t kMaxGpusPerNode = 1024;

// Returns the whole-unit value of resource `name` in capacity (else allocatable), or -1 if absent.
// Sets `error` for values that are present but unusable.
std::int64_t resource_value(const Json* capacity, const Json* allocatable, std::string_view name,
                            std::string& error) {
  for (const Json* list : {capacity, allocatable}) {
    if (list == nullptr) continue;
    const Json* value = find_key(*list, name);
    if (value == nullptr || value->is_null()) continue;
    try {
      if (value->is_string()) return core::parse_whole_units(value->get_ref<const std::string&>());
      if (value->is_number_integer() && value->get<std::int64_t>() >= 0) {
        return value->get<std::int64_t>();
      }
      error = fmt::format("{} is not a quantity", name);
    } catch (const core::QuantityError& e) {
      error = fmt::format("{}: {}", name, e.what());
    }
    return -1;
  }
  return -1;
}

// What kube-scheduler may place on the node: allocatable `name` (capacity when allocatable does
// not list it), as a Quantity, or nullopt when absent or malformed (then it is not tracked).
std::optional<core::Quantity> allocatable_quantity(const Json* allocatable, const Json* capacity,
                                                   std::string_view name) {
  for (const Json* list : {allocatable, capacity}) {
    if (list == nullptr) continue;
    const Json* value = find_key(*list, name);
    if (value == nullptr || value->is_null()) continue;
    try {
      return quantity_of(*value, name);
    } catch (const BadInput&) {
      return std::nullopt;
    }
  }
  return std::nullopt;
}

}  // namespace

core::NodeSpec parse_node(const Json& node, const ResourceNames& names) {
  if (!node.is_object()) throw BadInput(fmt::format("node must be an object, got {}", node.type_name()));
  const Json* metadata = get_object(node, "metadata", "node metadata");
  if (metadata == nullptr) throw BadInput("node has no metadata");
  core::NodeSpec spec;
  spec.name = get_string(*metadata, "name", "node metadata.name");
  if (spec.name.empty()) throw BadInput("node metadata.name is empty");
  if (const Json* labels = get_object(*metadata, "labels", "node labels")) {
    spec.gpu_model = get_string(*labels, kGpuModelLabel, "node GPU model label");
  }
  if (const Json* node_spec = get_object(node, "spec", "node spec")) {
    if (const Json* flag = find_key(*node_spec, "unschedulable"); flag && flag->is_boolean()) {
      spec.unschedulable = flag->get<bool>();
    }
  }
  const Json* status = get_object(node, "status", "node status");
  const Json* capacity = status ? get_object(*status, "capacity", "node capacity") : nullptr;
  const Json* allocatable = status ? get_object(*status, "allocatable", "node allocatable") : nullptr;
  if (status != nullptr) {
    if (const Json* addresses = get_array(*status, "addresses", "node addresses")) {
      for (const Json& address : *addresses) {
        if (address.is_object() && get_string(address, "type", "address type") == "InternalIP") {
          spec.address = get_string(address, "address", "node address");
          break;
        }
      }
    }
  }
  if (auto cpu = allocatable_quantity(allocatable, capacity, "cpu")) spec.cpu_milli = cpu->milli();
  if (auto bytes = allocatable_quantity(allocatable, capacity, "memory")) {
    spec.memory = bytes->units_ceil();
  }
  std::string error;
  const std::int64_t memory = resource_value(capacity, allocatable, names.memory, error);
  const std::int64_t count = resource_value(capacity, allocatable, names.count, error);
  if (!error.empty()) {
    spec.misconfiguration = error;
  } else if (memory <= 0) {
    // Not a gpushare node (or the device plugin has not registered yet): no GPUs.
  } else if (count <= 0) {
    spec.misconfiguration =
        fmt::format("node advertises {} {} but {} is {}", memory, names.memory, names.count,
                    count < 0 ? "missing" : "0");
  } else if (count > kMaxGpusPerNode) {
    spec.misconfiguration = fmt::format("{} of {} is not plausible", names.count, count);
  } else {
    spec.gpu_count = static_cast<int>(count);
    // As the device plugin defines it: integer division, every GPU the same size.
    spec.memory_per_gpu = memory / count;
    if (memory % count != 0) {
      spec.misconfiguration = fmt::format("{} {} is not divisible by {} {}", names.memory, memory,
                                          names.count, count);
    }
  }
  if (!spec.misconfiguration.empty()) {
    spec.gpu_count = 0;
    spec.memory_per_gpu = 0;
  }
  return spec;
}

UnhealthyGpus parse_unhealthy_list(std::string node, std::string_view gpus) {
  UnhealthyGpus result;
  result.node = std::move(node);
  std::size_t start = 0;
  while (start <= gpus.size()) {
    std::size_t end = gpus.find(',', start);
    if (end == std::string_view::npos) end = gpus.size();
    std::string_view entry = gpus.substr(start, end - start);
    while (!entry.empty() && (entry.front() == ' ' || entry.front() == '\t')) entry.remove_prefix(1);
    while (!entry.empty() && (entry.back() == ' ' || entry.back() == '\t' || entry.back() == '\n')) {
      entry.remove_suffix(1);
    }
    if (!entry.empty()) {
      int index = -1;
      auto [ptr, ec] = std::from_chars(entry.data(), entry.data() + entry.size(), index);
      if (ec == std::errc() && ptr == entry.data() + entry.size() && index >= 0 &&
          index < kMaxGpusPerNode) {
        result.indices.push_back(index);
      } else {
        result.rejected.emplace_back(entry);
      }
    }
    start = end + 1;
  }
  return result;
}

std::optional<UnhealthyGpus> parse_unhealthy_configmap(const Json& configmap) {
  if (!configmap.is_object()) return std::nullopt;
  const Json* metadata = get_object(configmap, "metadata", "configmap metadata");
  if (metadata == nullptr) return std::nullopt;
  const std::string name = get_string(*metadata, "name", "configmap name");
  if (!name.starts_with(kUnhealthyConfigMapPrefix) || name.size() == kUnhealthyConfigMapPrefix.size()) {
    return std::nullopt;
  }
  std::string gpus;
  std::vector<std::pair<std::string, std::string>> unknown_keys;
  if (const Json* data = get_object(configmap, "data", "configmap data")) {
    gpus = get_string(*data, "gpus", "configmap data.gpus");
    for (const auto& [key, value] : data->items()) {
      if (key != "gpus")
        unknown_keys.emplace_back(key, value.is_string() ? value.get<std::string>() : value.dump());
    }
  }
  UnhealthyGpus result = parse_unhealthy_list(name.substr(kUnhealthyConfigMapPrefix.size()), gpus);
  const std::string namespace_name = get_string(*metadata, "namespace", "configmap namespace");
  result.object = namespace_name.empty() ? name : namespace_name + "/" + name;
  result.unknown_keys = std::move(unknown_keys);
  return result;
}

}  // namespace gpushare::kube
