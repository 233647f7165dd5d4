#pragma once
// kube-scheduler's extender wire types (k8s.io/kube-scheduler/extender/v1). Requests are decoded
// with keys matched case-insensitively (Go's decoder does the same); replies use the Go names.

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gpushare/kube/json_access.h"
#include "gpushare/kube/pod_info.h"
#include "gpushare/kube/resource_names.h"

namespace gpushare::extender {

using kube::Json;

// A Node object of a request kept as its JSON text, which filter echoes back verbatim.
struct NodeText {
  std::string name;       // metadata.name
  std::string_view json;  // the item's text; views the owner's `node_source`
};

struct ExtenderArgs {
  kube::PodInfo pod;
  // nodeCacheCapable: true sends names; false sends whole Node objects. Exactly one of
  // node_names, nodes and node_texts is set.
  std::optional<std::vector<std::string>> node_names;
  std::optional<std::vector<Json>> nodes;  // NodeList items, echoed back for survivors
  // What decode_extender_args_body sets instead of `nodes`: the items as text, without a DOM.
  std::optional<std::vector<NodeText>> node_texts;
  std::shared_ptr<const std::string> node_source;  // owns the text node_texts view

  bool has_node_objects() const { return nodes.has_value() || node_texts.has_value(); }
  // Names of the offered nodes, whichever form they came in.
  std::vector<std::string> offered_names() const;
};

struct FilterResult {
  std::vector<std::string> node_names;  // survivors, in offered order
  std::optional<std::vector<Json>> nodes;  // survivors' objects when the request carried objects
  // Survivors' objects as JSON text, when the request was decoded by decode_extender_args_body.
  std::optional<std::vector<std::string_view>> node_texts;
  std::shared_ptr<const std::string> node_source;  // owns the text node_texts view
  std::map<std::string, std::string> failed;
  std::map<std::string, std::string> failed_unresolvable;
  std::string error;
};

struct HostPriority {
  std::string host;
  std::int64_t score = 0;
};

struct BindingArgs {
  std::string pod_name;
  std::string pod_namespace;
  std::string pod_uid;
  std::string node;
};

struct MetaVictims {
  std::vector<std::string> pod_uids;
  std::int64_t num_pdb_violations = 0;
};

struct PreemptionArgs {
  kube::PodInfo pod;
  // Victims per node, as UIDs (NodeNameToMetaVictims, nodeCacheCapable) or whole pods.
  std::map<std::string, MetaVictims> victims;
  // Whole victim pods when the request carried them (NodeNameToVictims), by UID.
  std::map<std::string, kube::PodInfo> victim_pods;
};

// Decoders throw kube::BadInput with a message naming the offending field.
Json parse_json_body(std::string_view body);
ExtenderArgs decode_extender_args(const Json& body, const kube::ResourceNames& names);
// decode_extender_args(parse_json_body(body), names) in one pass over the text, without building
// a DOM of the node list: the same ExtenderArgs (Node objects land in node_texts rather than
// nodes) and the same BadInput errors. For the filter and prioritize hot path.
ExtenderArgs decode_extender_args_body(std::string_view body, const kube::ResourceNames& names);
// The same, keeping `body` itself as the node texts' source instead of a copy of the node list
// (a 40 MB filter with full Node objects would otherwise be held twice).
ExtenderArgs decode_extender_args_body(std::string&& body, const kube::ResourceNames& names);
BindingArgs decode_binding_args(const Json& body);
PreemptionArgs decode_preemption_args(const Json& body, const kube::ResourceNames& names);

std::string encode_filter_result(const FilterResult& result);
std::string encode_priorities(const std::vector<HostPriority>& priorities);
std::string encode_binding_result(std::string_view error);
std::string encode_preemption_result(const std::map<std::string, MetaVictims>& victims);
// {"Error": message}: the body of any failed call.
std::string encode_error(std::string_view error);

}  // namespace gpushare::extender
