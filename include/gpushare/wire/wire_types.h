#pragma once
// kube-scheduler's extender wire types (k8s.io/kube-scheduler/extender/v1). Requests are decoded
// with keys matched case-insensitively (Go's decoder does the same); replies use the Go names.

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "gpushare/kube/json_access.h"
#include "gpushare/kube/pod_info.h"
#include "gpushare/kube/resource_names.h"
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

// Spare capacity after a request body that lets the decoder parse it in place (simdjson reads
// up to this many bytes past the end).
inline constexpr std::size_t kRequestBodyPadding = 64;

// The one decoder of each request (wire_decode.cpp, on simdjson), used by the HTTP server, the
// tests, the fuzzers and the benchmarks alike. Each takes the request body as text and throws
// kube::BadInput with a message naming the offending field ("request body is not valid JSON"
// for text that is not JSON).
//
// ExtenderArgs (filter, prioritize), keeping `body` itself as the source the node texts view
// (a 40 MB filter with full Node objects is not held twice). The decoder parses `body` in place
// when it has kRequestBodyPadding bytes of spare capacity, else it moves the text once to make
// that room.
ExtenderArgs decode_extender_args_body(std::string&& body, const kube::ResourceNames& names);
// The same from a view: the body is copied, and kept by the arguments only if they view it.
ExtenderArgs decode_extender_args_body(std::string_view body, const kube::ResourceNames& names);
BindingArgs decode_binding_args(std::string_view body);
PreemptionArgs decode_preemption_args(std::string_view body, const kube::ResourceNames& names);
// The bytes the decoders' parsers keep between requests (gpushare_http_parser_bytes, their
// sum): at most 16 small-body parsers of ~15.5 MB each and the large-body one, each freed 10 s
// after its last use (wire_decode.cpp).
struct RequestParserBytes {
  std::size_t small = 0;  // bodies up to 1 MiB
  std::size_t large = 0;  // bodies over 1 MiB
};
RequestParserBytes request_parser_bytes();

std::string encode_filter_result(const FilterResult& result);
// The same reply when it echoes full Node objects, without copying them: the surviving nodes'
// texts are read from the request body they view (held here) as the reply is written. Such a
// reply is about as large as the body; built whole, it was one more body-sized buffer per filter.
class FilterReply {
 public:
  explicit FilterReply(FilterResult result);
  std::size_t size() const { return size_; }
  // Copies the reply's bytes from `offset` on into `out`, as many as fit; returns how many.
  std::size_t copy(std::size_t offset, std::span<char> out) const;
  // What it holds besides the body (head, tail, positions), for tests.
  std::size_t owned_bytes() const;

 private:
  std::string head_;  // the reply up to the first item (all of it without node texts)
  std::vector<std::string_view> items_;   // survivors' texts, viewing source_
  std::vector<std::size_t> item_starts_;  // where each item is in the reply (commas between)
  std::string tail_;
  std::shared_ptr<const std::string> source_;
  std::size_t size_ = 0;
};
std::string encode_priorities(const std::vector<HostPriority>& priorities);
std::string encode_binding_result(std::string_view error);
std::string encode_preemption_result(const std::map<std::string, MetaVictims>& victims);
// {"Error": message}: the body of any failed call.
std::string encode_error(std::string_view error);

}  // namespace gpushare::wire
