#pragma once
// kube-scheduler's extender wire types (k8s.io/kube-scheduler/extender/v1), as values. Decoding
// is in wire_decode.h, encoding in wire_encode.h and filter_reply.h.

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gpushare/kube/json_access.h"
#include "gpushare/kube/pod_info.h"
#include "gpushare/wire/name_list.h"

namespace gpushare::wire {

using kube::Json;

// A Node object of a request kept as its JSON text, which filter echoes back verbatim.
struct NodeText {
  std::string name;       // metadata.name
  std::string_view json;  // the item's text; views the owner's `node_source`
};

struct ExtenderArgs {
  kube::PodInfo pod;
  // nodeCacheCapable: true sends names; false sends whole Node objects (NodeList items, kept as
  // their text and echoed back verbatim for survivors). Exactly one of the two is set.
  std::optional<NameList> node_names;
  std::optional<std::vector<NodeText>> node_texts;
  std::shared_ptr<const std::string> node_source;  // owns the text node_texts view

  bool has_node_objects() const { return node_texts.has_value(); }
  // Names of the offered nodes, whichever form they came in.
  std::vector<std::string> offered_names() const;
};

struct FilterResult {
  NameList node_names;                     // survivors, in offered order
  std::optional<std::vector<Json>> nodes;  // survivors' objects, for callers that hold trees
  // Survivors' objects as JSON text, when the request carried objects.
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

}  // namespace gpushare::wire
