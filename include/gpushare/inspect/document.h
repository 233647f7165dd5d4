#pragma once
// The /inspect document: what /gpushare-scheduler/inspect and /inspect/{node} serve and kubectl
// inspect gpushare renders. Built here only: the extender's HTTP server and the kubectl plugin
// say what they know (the model, DocumentSources) and take the document.
//
// A document is built in two steps. The model's sections (snapshot.h: nodes, gpuModels, totals
// and, given a policy, "policy" and "fragmentation") are read under the model store's lock; the
// sections from outside the model (pod phases, recentRejections, configWarnings) are added after
// it is released, since their sources take locks of their own. A new section is a member of
// DocumentSources and one step of Document::add.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gpushare/core/cluster_model.h"
#include "gpushare/core/placement_policy.h"
#include "gpushare/inspect/snapshot.h"
#include "gpushare/kube/json_access.h"

namespace gpushare::inspect {

// One filter rejection, as "recentRejections" lists it.
struct Rejection {
  std::int64_t time_ns = 0;
  std::string pod;  // namespace/name
  std::string node;
  std::string reason;
};

// A mistake in an object the extender reads, as "configWarnings" lists it (the extender keeps
// them in service::ConfigWarnings while they stand).
struct ConfigWarning {
  // The `kind` label of gpushare_config_warnings.
  static constexpr std::string_view kUnknownKey = "unknown_key";  // a key the object may not have
  static constexpr std::string_view kBadValue = "bad_value";      // a value that is not usable
  // A DRA object the model cannot use (sync/dra_sync.h); in /inspect, not in the gauge.
  static constexpr std::string_view kDraObject = "dra_object";

  std::string object;  // namespace/name
  std::string kind;
  std::string key;
  std::string value;
  std::string message;  // a sentence naming the object, key and value, and what was done
  std::string node;     // the node the object is about ("" if none): /inspect/{node} shows it

  friend bool operator==(const ConfigWarning&, const ConfigWarning&) = default;
};

// What a document shows beyond the model. A source left unset leaves its section out.
struct DocumentSources {
  PodPhaseLookup pod_phase;  // each pod's "phase"
  // "recentRejections": [{timeUnixNano, pod, node, reason}], newest first.
  std::optional<std::vector<Rejection>> rejections;
  // "configWarnings": [{object, kind, key, value, message, node}]; a node's document keeps
  // those about its node.
  std::optional<std::vector<ConfigWarning>> config_warnings;
  // "consolidation" (the whole cluster's document only): the consolidator's report
  // (GET /gpushare-scheduler/consolidation), of which consolidation_section() keeps what the web
  // view shows.
  std::optional<kube::Json> consolidation;
};

// The document's "consolidation" section from the consolidator's report: {mode, acting,
// waiting, error, plan: {moves: [{pod, from: {node, gpu}, to: {node, gpu}, memory}], podsMoved,
// gpusFreed} or null, inFlight: {pod, from, to, phase} or null, holds: [{node, gpu, memory,
// owner, replacing, expiresAt}], lastStop: {reason, at} or null}. Fields the report lacks or
// mistypes are left out (moves and holds: the entries that are not objects).
kube::Json consolidation_section(const kube::Json& report);

class Document {
 public:
  // The whole cluster, every node sorted by name. With `policy`: "policy" (its name and
  // describe_state()) and "fragmentation"; without (the kubectl plugin, which reads API objects
  // and knows no policy), neither. Call under the model store's lock.
  static Document cluster(const core::ClusterModel& model, const core::PlacementPolicy* policy);
  // One node, as {"nodes": [node]}, or nullopt when the model does not know it. Call under the
  // model store's lock.
  static std::optional<Document> node(const core::ClusterModel& model, std::string_view name);

  // The sections from outside the model; call once, with no lock held.
  void add(DocumentSources sources);

  kube::Json& json() { return json_; }
  const kube::Json& json() const { return json_; }

 private:
  Document(kube::Json json, std::string node) : json_(std::move(json)), node_(std::move(node)) {}

  kube::Json json_;
  std::string node_;  // the node of a node's document; "" for the cluster's
};

}  // namespace gpushare::inspect
