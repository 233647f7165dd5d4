#pragma once
// What gpushare needs from a v1 Node object and from unhealthy-gpu ConfigMaps.

#include <optional>
#include <string>
#include <vector>

#include "gpushare/core/node_state.h"
#include "gpushare/kube/json_access.h"
#include "gpushare/kube/resource_names.h"

namespace simdjson::dom {
class element;
}

namespace gpushare::kube {

// Node capacity -> NodeSpec. GPU count and memory come from status.capacity (allocatable as
// fallback). Inconsistent values (memory without a count, memory not divisible by the count,
// absurd sizes) do not throw: they land in NodeSpec::misconfiguration, so filter can say why.
// CPU (milli-cores) and memory (bytes) come from status.allocatable, what kube-scheduler places
// against (capacity as fallback); absent or malformed, they are 0, "not tracked", and nothing
// is logged here.
// Throws BadInput only when the object is not a node at all. The one node decoder (simdjson);
// the Json overload (cluster files, tests) goes through the tree's text.
core::NodeSpec decode_node(const simdjson::dom::element& node, const ResourceNames& names);
core::NodeSpec parse_node(const Json& node, const ResourceNames& names);

struct UnhealthyGpus {
  std::string node;                   // from the ConfigMap name unhealthy-gpu-<node>
  std::string object;                 // namespace/name of the ConfigMap
  std::vector<int> indices;           // valid entries of data.gpus
  std::vector<std::string> rejected;  // entries that were not GPU indices (logged by callers)
  // data keys other than "gpus", with their values: a misspelt `gpu:` marks no GPU unhealthy,
  // which callers must say rather than put the GPU back in service silently.
  std::vector<std::pair<std::string, std::string>> unknown_keys;
};

// Parses an unhealthy-gpu-<node> ConfigMap; nullopt if the name does not have that form.
// Unlike the Go original, an unparsable entry is rejected, never read as GPU 0.
std::optional<UnhealthyGpus> decode_unhealthy_configmap(const simdjson::dom::element& configmap);
std::optional<UnhealthyGpus> parse_unhealthy_configmap(const Json& configmap);
UnhealthyGpus parse_unhealthy_list(std::string node, std::string_view gpus);

}  // namespace gpushare::kube
