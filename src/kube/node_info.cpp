#include "gpushare/kube/node_info.h"

#include <fmt/format.h>

#include <charconv>
#include <map>

#include "gpushare/core/quantity.h"
#include "gpushare/kube/annotations.h"
#include "gpushare/kube/json_fields.h"
#include "gpushare/kube/quantity_json.h"

namespace gpushare::kube {
namespace {

// Upper bounds that no real GPU node reaches; beyond them a value is a typo, not hardware.
constexpr std::int64_t kMaxGpusPerNode = 1024;

using List = std::optional<json::Object>;

// Returns the whole-unit value of resource `name` in capacity (else allocatable), or -1 if absent.
// Sets `error` for values that are present but unusable.
std::int64_t resource_value(const List& capacity, const List& allocatable, std::string_view name,
                            std::string& error) {
  for (const List* list : {&capacity, &allocatable}) {
    if (!*list) continue;
    const auto value = present_field(**list, name);
    if (!value) continue;
    try {
      std::string_view text;
      if (value->get_string().get(text) == simdjson::SUCCESS) return core::parse_whole_units(text);
      // A uint64 beyond int64 is not a quantity either (nlohmann read it as negative).
      if (value->is_int64() && value->get_int64().value_unsafe() >= 0)
        return value->get_int64().value_unsafe();
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
std::optional<core::Quantity> allocatable_quantity(const List& allocatable, const List& capacity,
                                                   std::string_view name) {
  for (const List* list : {&allocatable, &capacity}) {
    if (!*list) continue;
    const auto value = present_field(**list, name);
    if (!value) continue;
    try {
      return quantity_of(*value, name);
    } catch (const BadInput&) {
      return std::nullopt;
    }
  }
  return std::nullopt;
}

}  // namespace

core::NodeSpec decode_node(const simdjson::dom::element& node_value, const ResourceNames& names) {
  json::Object node;
  if (node_value.get_object().get(node) != simdjson::SUCCESS) {
    throw BadInput(fmt::format("node must be an object, got {}", json::type_name(node_value)));
  }
  const auto metadata = object_field(node, "metadata", "node metadata");
  if (!metadata) throw BadInput("node has no metadata");
  core::NodeSpec spec;
  spec.name = string_field(*metadata, "name", "node metadata.name");
  if (spec.name.empty()) throw BadInput("node metadata.name is empty");
  if (const auto labels = object_field(*metadata, "labels", "node labels")) {
    // A map: label names are matched exactly, as kube-scheduler's node affinity matches them.
    std::string_view model;
    if (const auto value = json::find_exact(*labels, names.gpu_model_label);
        value && value->get_string().get(model) == simdjson::SUCCESS) {
      spec.gpu_model = std::string(model);
    }
  }
  if (const auto node_spec = object_field(node, "spec", "node spec")) {
    if (const auto flag = json::find_member(*node_spec, "unschedulable"); flag && flag->is_bool()) {
      spec.unschedulable = flag->get_bool().value_unsafe();
    }
  }
  const List status = object_field(node, "status", "node status");
  const List capacity = status ? object_field(*status, "capacity", "node capacity") : std::nullopt;
  const List allocatable =
      status ? object_field(*status, "allocatable", "node allocatable") : std::nullopt;
  if (status) {
    if (const auto addresses = array_field(*status, "addresses", "node addresses")) {
      for (const json::Value item : *addresses) {
        json::Object address;
        if (item.get_object().get(address) == simdjson::SUCCESS &&
            string_field(address, "type", "address type") == "InternalIP") {
          spec.address = string_field(address, "address", "node address");
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
    spec.misconfiguration = fmt::format("node advertises {} {} but {} is {}", memory, names.memory,
                                        names.count, count < 0 ? "missing" : "0");
  } else if (count > kMaxGpusPerNode) {
    spec.misconfiguration = fmt::format("{} of {} is not plausible", names.count, count);
  } else {
    spec.gpu_count = static_cast<int>(count);
    // As the device plugin defines it: integer division, every GPU the same size.
    spec.memory_per_gpu = memory / count;
    if (memory % count != 0) {
      spec.misconfiguration =
          fmt::format("{} {} is not divisible by {} {}", names.memory, memory, names.count, count);
    }
  }
  if (!spec.misconfiguration.empty()) {
    spec.gpu_count = 0;
    spec.memory_per_gpu = 0;
  }
  return spec;
}

core::NodeSpec parse_node(const Json& node, const ResourceNames& names) {
  return decode_tree(node, [&](json::Value value) { return decode_node(value, names); });
}

UnhealthyGpus parse_unhealthy_list(std::string node, std::string_view gpus) {
  UnhealthyGpus result;
  result.node = std::move(node);
  std::size_t start = 0;
  while (start <= gpus.size()) {
    std::size_t end = gpus.find(',', start);
    if (end == std::string_view::npos) end = gpus.size();
    std::string_view entry = gpus.substr(start, end - start);
    while (!entry.empty() && (entry.front() == ' ' || entry.front() == '\t'))
      entry.remove_prefix(1);
    while (!entry.empty() &&
           (entry.back() == ' ' || entry.back() == '\t' || entry.back() == '\n')) {
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

std::optional<UnhealthyGpus> decode_unhealthy_configmap(
    const simdjson::dom::element& configmap_value) {
  json::Object configmap;
  if (configmap_value.get_object().get(configmap) != simdjson::SUCCESS) return std::nullopt;
  const auto metadata = object_field(configmap, "metadata", "configmap metadata");
  if (!metadata) return std::nullopt;
  const std::string name = string_field(*metadata, "name", "configmap name");
  if (!name.starts_with(kUnhealthyConfigMapPrefix) ||
      name.size() == kUnhealthyConfigMapPrefix.size()) {
    return std::nullopt;
  }
  std::string gpus;
  std::vector<std::pair<std::string, std::string>> unknown_keys;
  if (const auto data = object_field(configmap, "data", "configmap data")) {
    gpus = string_field(*data, "gpus", "configmap data.gpus");
    // In key order, the last of duplicates, as a map of the data says them.
    std::map<std::string, std::string, std::less<>> others;
    for (const auto field : *data) {
      if (field.key == "gpus") continue;
      std::string_view text;
      // The API server only stores strings here; anything else is shown as nlohmann writes it.
      others.insert_or_assign(std::string(field.key),
                              field.value.get_string().get(text) == simdjson::SUCCESS
                                  ? std::string(text)
                                  : Json::parse(simdjson::minify(field.value)).dump());
    }
    unknown_keys.assign(others.begin(), others.end());
  }
  UnhealthyGpus result = parse_unhealthy_list(name.substr(kUnhealthyConfigMapPrefix.size()), gpus);
  const std::string namespace_name = string_field(*metadata, "namespace", "configmap namespace");
  result.object = namespace_name.empty() ? name : namespace_name + "/" + name;
  result.unknown_keys = std::move(unknown_keys);
  return result;
}

std::optional<UnhealthyGpus> parse_unhealthy_configmap(const Json& configmap) {
  return decode_tree(configmap,
                     [](json::Value value) { return decode_unhealthy_configmap(value); });
}

}  // namespace gpushare::kube
