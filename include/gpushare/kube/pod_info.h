#pragma once
// What gpushare needs from a v1 Pod object.

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "gpushare/core/dra.h"
#include "gpushare/core/model_pin.h"
#include "gpushare/core/pod_allocation.h"
#include "gpushare/core/reservation_ledger.h"
#include "gpushare/kube/json_access.h"
#include "gpushare/kube/resource_names.h"

namespace simdjson::dom {
class element;
}

namespace gpushare::kube {

// The pod's controller: the one metadata.ownerReferences entry with `controller: true`, as the
// API server allows at most one. Its UID names the owner across the pods it re-creates
// (consolidation holds memory for an owner's replacement pod).
struct OwnerRef {
  std::string kind;  // e.g. ReplicaSet
  std::string name;
  std::string uid;
  friend bool operator==(const OwnerRef&, const OwnerRef&) = default;
};

struct PodInfo {
  std::string uid;
  std::string namespace_name;
  std::string name;
  std::string node_name;  // spec.nodeName; empty while pending
  std::string phase;      // status.phase
  std::string resource_version;
  bool terminating = false;  // metadata.deletionTimestamp set
  // The controller ownerReference; nullopt without exactly one well-formed entry with
  // `controller: true` (none, several, or one without a UID). Malformed entries are ignored,
  // never fatal: the pod still schedules, as a pod without an owner.
  std::optional<OwnerRef> controller;
  // Sum over regular containers of limits[resource] (requests when no limit is given).
  core::Units request = 0;
  // CPU (milli-cores) and memory (bytes) the pod requests, as kube-scheduler counts them:
  // max(sum of containers and sidecars, each init container) plus the pod overhead.
  std::int64_t cpu_milli = 0;
  std::int64_t memory = 0;
  // What spec.nodeSelector and required node affinity say about the GPU-model label
  // (ResourceNames::gpu_model_label). kube-scheduler enforces it; the policy plans with it once
  // resolved against the cluster's models (demand(models)).
  core::ModelPin model_pin;
  // GPU models the pod may run on, when given as such rather than as a pin (the simulator,
  // tests); empty = any. Used only while model_pin is not pinned.
  std::vector<std::string> allowed_models;
  // From the device-plugin annotations, when present and valid.
  std::optional<int> gpu_index;
  std::optional<core::Units> annotated_request;
  std::optional<core::Units> annotated_device_memory;
  std::optional<bool> assigned;
  std::optional<std::int64_t> assume_time_ns;
  // spec.resourceClaims (Dynamic Resource Allocation), claim names resolved from the status.
  std::vector<core::DraPodClaim> resource_claims;
  // Non-empty when an annotation's value was out of range and clamped (to log, naming the pod).
  std::string annotation_warning;

  bool finished() const { return phase == "Succeeded" || phase == "Failed"; }
  bool wants_gpu() const { return effective_request() > 0; }
  // What the pod holds: the _POD annotation if present, else its containers' limits.
  core::Units effective_request() const { return annotated_request.value_or(request); }
  std::string key() const { return namespace_name + "/" + name; }
  // The controller's UID, "" when there is none.
  std::string_view owner_uid() const {
    return controller ? std::string_view(controller->uid) : std::string_view();
  }
  // What the pod asks of a node: its request, on one GPU, and its CPU and memory.
  core::PodDemand demand() const {
    core::PodDemand d;
    d.per_gpu = effective_request();
    d.cpu_milli = cpu_milli;
    d.memory = memory;
    d.allowed_models = allowed_models;
    return d;
  }
  // The same in a cluster whose GPU nodes carry `models` (core::ClusterModel::gpu_models()):
  // the pin resolved to the models it allows there (core::resolve_models).
  core::PodDemand demand(std::span<const std::string> models) const {
    core::PodDemand d = demand();
    if (model_pin.pinned) d.allowed_models = core::resolve_models(model_pin, models);
    return d;
  }
};

// The one pod decoder (simdjson): the service's requests, the sync's lists and watch events, the
// fuzzers and the benchmarks all decode pods here. Throws BadInput when the object is not a pod
// or a quantity of the resource, CPU or memory is invalid.
PodInfo decode_pod(const simdjson::dom::element& pod, const ResourceNames& names);
// The same from JSON text (BadInput also for invalid JSON).
PodInfo decode_pod_text(std::string_view text, const ResourceNames& names);
// The same for a tree built by nlohmann (cluster files, traces, tests), through its text.
PodInfo parse_pod(const Json& pod, const ResourceNames& names);

// What a pod holds on its node, or nullopt if it holds nothing: not bound, or finished. GPU
// memory as docs/user-guide.md says ("What the annotations mean"): none (per_gpu 0, no GPU) for a
// pod that requests none. CPU and memory for every pod, GPU or not, as kube-scheduler counts them.
std::optional<core::PodAllocation> allocation_of(const PodInfo& pod);

// What the pod, as read from the API server, says about a reservation for `uid` (the pod's own
// UID when empty): bound (with its allocation), pending, or gone (finished, or another UID).
core::PodEvidence evidence_of(const PodInfo& pod, std::string_view uid = {});

// The device-plugin annotations for a pod placed on `gpu` (decimal strings, exact keys).
std::map<std::string, std::string> bind_annotations(int gpu, core::Units pod_request,
                                                    core::Units device_memory,
                                                    std::int64_t assume_time_ns);

}  // namespace gpushare::kube
