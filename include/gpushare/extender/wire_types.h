#pragma once
// kube-scheduler's extender wire types (k8s.io/kube-scheduler/extender/v1). Requests are decoded
// with keys matched case-insensitively (Go's decoder does the same); replies use the Go names.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gpushare/kube/json_access.h"
#include "gpushare/kube/pod_info.h"
#include "gpushare/kube/resource_names.h"

namespace gpushare::extender {

using kube::Json;

struct ExtenderArgs {
  kube::PodInfo pod;
  // nodeCacheCapable: true sends names; false sends whole Node objects. Exactly one is set.
  std::optional<std::vector<std::string>> node_names;
  std::optional<std::vector<Json>> nodes;  // NodeList items, echoed back for survivors

  // Names of the offered nodes, whichever form they came in.
  std::vector<std::string> offered_names() const;
};

struct FilterResult {
  std::vector<std::string> node_names;  // survivors, in offered order
  std::optional<std::vector<Json>> nodes;  // survivors' objects when the request carried objects
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
BindingArgs decode_binding_args(const Json& body);
PreemptionArgs decode_preemption_args(const Json& body, const kube::ResourceNames& names);

std::string encode_filter_result(const FilterResult& result);
std::string encode_priorities(const std::vector<HostPriority>& priorities);
std::string encode_binding_result(std::string_view error);
std::string encode_preemption_result(const std::map<std::string, MetaVictims>& victims);
// {"Error": message}: the body of any failed call.
std::string encode_error(std::string_view error);

}  // namespace gpushare::extender
