#pragma once
// Dynamic Resource Allocation (resource.k8s.io) in the model: GPUs published in ResourceSlices
// and the GPU memory ResourceClaims hold on them. Pure: kube/dra_objects.h decodes the objects
// into these types, the sync feeds them in, the ClusterModel turns them into GPUs and usage.
//
// How DRA meets the device-plugin model:
//  - a device of the configured driver with a memory capacity is one GPU of its node (slices
//    with spec.nodeName; allNodes and node-selector slices publish no node-local GPU), with its
//    own capacity: a node's GPUs may differ in size, and a MIG device is a GPU of its own size;
//  - an ask takes only devices its DeviceClass selects: the class's driver and the attribute
//    equalities of its CEL selectors (`device.attributes["<domain>"].<name> == <value>`); a
//    selector clause of another form is not evaluated (the class gets a warning);
//  - DRA capacities are bytes; the model counts GPU memory in the device plugin's unit, so bytes
//    are divided by DraConfig::bytes_per_unit (--dra-memory-unit, GiB by default): a device's
//    capacity rounds down, what a claim holds or asks rounds up;
//  - an allocated claim holds consumedCapacity.memory on each device of its result, or the whole
//    device when the result records no consumed capacity (a device allocated exclusively); it
//    counts on the node that publishes the device, as kube's allocator counts it, whatever node
//    its allocation's node selector names; what claims hold on one device is clamped, as a sum,
//    to the device's capacity (with a warning);
//  - only the newest generation of a pool counts, and a pool counts once all its
//    resourceSliceCount slices of that generation are seen (kube's allocator skips incomplete
//    pools), with device names unique across them;
//  - a node's DRA GPUs are numbered in the order kube's allocator tries them: pools by (driver,
//    name), slices by name, devices in slice order.

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "gpushare/core/node_state.h"
#include "gpushare/core/placement_policy.h"
#include "gpushare/core/pod_demand.h"

namespace gpushare::core {

inline constexpr std::int64_t kGiB = std::int64_t{1} << 30;
// The most DRA GPUs one node is given (the device plugin's plausibility bound, kube's
// node_info.cpp): devices past it are ignored, with a warning naming the slice.
inline constexpr std::size_t kMaxDraGpusPerNode = 1024;

struct DraConfig {
  std::string driver = "gpu.nvidia.com";
  std::int64_t bytes_per_unit = kGiB;
};

struct DraDevice {
  std::string name;
  std::optional<std::int64_t> memory_bytes;  // capacity "memory" (or "<driver>/memory")
  std::string capacity_error;                // set when that capacity could not be read
  std::string product;                       // attribute productName, if any
  bool shareable = false;                    // allowMultipleAllocations
  // Attributes by qualified name ("<domain>/<name>"; a bare name is in the driver's domain), the
  // value as text: a string as is, a bool "true"/"false", an int or version in decimal.
  std::map<std::string, std::string, std::less<>> attributes;
  friend bool operator==(const DraDevice&, const DraDevice&) = default;
};

struct DraSlice {
  std::string name;
  std::string driver;
  std::string pool;
  std::int64_t generation = 0;
  std::int64_t slice_count = 1;  // resourceSliceCount
  std::string node;              // spec.nodeName; empty for allNodes / nodeSelector slices
  std::vector<DraDevice> devices;
  friend bool operator==(const DraSlice&, const DraSlice&) = default;
};

// What one request (or one firstAvailable subrequest) asks: exact-count mode (allocationMode All
// counts as every device).
struct DraDeviceAsk {
  std::string name;
  std::string device_class;
  std::int64_t count = 1;
  bool all = false;
  std::optional<std::int64_t> memory_bytes;  // capacity.requests.memory
  friend bool operator==(const DraDeviceAsk&, const DraDeviceAsk&) = default;
};

// One request of a claim: `exactly` one ask, or a prioritised list (firstAvailable) of
// alternatives that kube's allocator tries in order on each node, the first that can be
// satisfied there (with the claim's other requests) winning. For such a list the request's own
// ask mirrors its first alternative, what a free node gives.
struct DraRequest : DraDeviceAsk {
  std::vector<DraDeviceAsk> first_available;
  // The alternatives in the order kube tries them: firstAvailable, or the request itself.
  std::span<const DraDeviceAsk> ways() const {
    if (first_available.empty()) return {static_cast<const DraDeviceAsk*>(this), 1};
    return first_available;
  }
  friend bool operator==(const DraRequest&, const DraRequest&) = default;
};

struct DraResult {
  std::string request;
  std::string driver;
  std::string pool;
  std::string device;
  std::optional<std::int64_t> consumed_bytes;  // consumedCapacity.memory
  std::string share_id;
  friend bool operator==(const DraResult&, const DraResult&) = default;
};

struct DraClaim {
  std::string namespace_name;
  std::string name;
  std::string uid;
  std::vector<DraRequest> requests;
  bool allocated = false;
  std::vector<DraResult> results;
  std::string node;                       // from status.allocation.nodeSelector, if it names one
  std::vector<std::string> reserved_for;  // pod names in status.reservedFor
  std::string key() const { return namespace_name + "/" + name; }
  friend bool operator==(const DraClaim&, const DraClaim&) = default;
};

struct DraClaimTemplate {
  std::string namespace_name;
  std::string name;
  std::vector<DraRequest> requests;
  friend bool operator==(const DraClaimTemplate&, const DraClaimTemplate&) = default;
};

// An attribute equality of a DeviceClass selector: attributes[name] == value (DraDevice's forms).
struct DraAttributeMatch {
  std::string name;  // qualified: "<domain>/<name>"
  std::string value;
  friend bool operator==(const DraAttributeMatch&, const DraAttributeMatch&) = default;
};

struct DraDeviceClass {
  std::string name;
  std::string driver;  // from a selector `device.driver == "..."`; empty = not known
  // Every selector's `&&` clauses, ANDed: the attribute equalities read, and the clauses of any
  // other form (not evaluated: the class then selects more devices than kube's would).
  std::vector<DraAttributeMatch> attributes;
  std::vector<std::string> unread;
  // Whether the class selects `device` of `driver` by its attribute equalities.
  bool selects(const std::map<std::string, std::string, std::less<>>& device_attributes) const;
  friend bool operator==(const DraDeviceClass&, const DraDeviceClass&) = default;
};

// A pod's entry in spec.resourceClaims, with the claim generated for a template when the pod's
// status names it.
struct DraPodClaim {
  std::string name;
  std::string claim;  // resourceClaimName, or the generated claim's name
  std::string template_name;
  friend bool operator==(const DraPodClaim&, const DraPodClaim&) = default;
};

// One of a node's DRA GPUs.
struct DraGpu {
  int index = 0;  // the GPU's index in the node's NodeState
  std::string driver, pool, slice, device;
  Units capacity = 0;
  std::string product;
  bool shareable = false;
  std::map<std::string, std::string, std::less<>> attributes;  // DraDevice::attributes
};

// GPU memory a claim holds on one GPU.
struct DraHolding {
  int gpu = 0;
  Units amount = 0;
  std::string claim;  // namespace/name
  std::string pod;    // a pod in status.reservedFor (namespace/name), empty if none
  std::string device;
  std::string share_id;
};

// A DRA object the model cannot use (or uses only in part).
struct DraWarning {
  std::string object;   // "ResourceSlice <name>" or "ResourceClaim <namespace>/<name>"
  std::string node;     // the node it is about, "" if none
  std::string message;  // a sentence naming the object and what the model does about it
  friend auto operator<=>(const DraWarning&, const DraWarning&) = default;
};

class DraState {
 public:
  explicit DraState(DraConfig config = {}) : config_(std::move(config)) {}
  const DraConfig& config() const { return config_; }
  void set_config(DraConfig config);

  // Objects by name (slices, classes) or namespace/name (claims, templates). Each change marks
  // the nodes it may touch; take_dirty_nodes() hands them to the model to rebuild.
  void upsert_slice(DraSlice slice);
  void remove_slice(std::string_view name);
  void upsert_claim(DraClaim claim);
  void remove_claim(std::string_view key);
  void upsert_template(DraClaimTemplate claim_template);
  void remove_template(std::string_view key);
  void upsert_class(DraDeviceClass device_class);
  void remove_class(std::string_view name);
  // Replace everything of one kind (a relist).
  void replace_slices(std::vector<DraSlice> slices);
  void replace_claims(std::vector<DraClaim> claims);
  void replace_templates(std::vector<DraClaimTemplate> templates);
  void replace_classes(std::vector<DraDeviceClass> classes);

  // Hands the model the nodes changed since the last call, to rebuild, and brings the kept
  // problems up to date for what changed: the view (slices) of each node whose slices changed,
  // the holdings of each dirty node, and each claim changed or with a device in a pool of a
  // dirty node. Nothing else is looked at, so an event costs a function of what it changed.
  std::set<std::string> take_dirty_nodes();
  // The problems that appeared since the last call (none of them there before), for a caller
  // that logs each once; a claim allocated on a node `node_known` denies is among them when the
  // claim changed since the last call. Kept as a set: a problem gone before it is taken is not
  // handed out.
  std::vector<DraWarning> take_new_problems(
      const std::function<bool(std::string_view)>& node_known);
  // Nodes whose view was worked out again by take_dirty_nodes(), in all (for tests: the cost).
  std::uint64_t views_built() const { return views_built_; }
  // Claims whose problems were checked again by take_dirty_nodes(), in all (likewise).
  std::uint64_t claims_checked() const { return claims_checked_; }

  const std::map<std::string, DraSlice, std::less<>>& slices() const { return slices_; }
  const std::map<std::string, DraClaim, std::less<>>& claims() const { return claims_; }
  const DraClaim* find_claim(std::string_view namespace_name, std::string_view name) const;
  const DraClaimTemplate* find_template(std::string_view namespace_name,
                                        std::string_view name) const;
  const DraDeviceClass* find_class(std::string_view name) const;

  // The node's DRA GPUs in allocator order (empty when it has none).
  std::vector<DraGpu> gpus_of(std::string_view node) const;
  // `base` (from the Node object) with the node's DRA GPUs in place of the device plugin's: GPU
  // count, each GPU's own capacity (NodeSpec::gpu_capacities), memory per GPU (the largest
  // device's: the biggest single-GPU ask the node can take) and model. A node that also
  // advertises device-plugin GPUs keeps those (and gets a warning).
  NodeSpec overlay(NodeSpec base) const;
  // What allocated claims hold on the node's DRA GPUs: each claim whose result names a device
  // the node publishes, whatever node its allocation's selector names. What the holdings on one
  // GPU sum to is clamped to its capacity: a holding past it is cut (to 0 if need be).
  std::vector<DraHolding> holdings_on(std::string_view node) const;
  // Nodes that have DRA GPUs or hold allocated claims.
  std::set<std::string> nodes() const;

  // Problems in the objects as they stand (each names its object), sorted by message: the kept
  // ones (take_dirty_nodes) and, asking `node_known` once per node whose devices allocated
  // claims hold, a claim allocated on a node the model does not have. Nothing is worked out
  // again: O(problems + nodes holding claims).
  std::vector<DraWarning> problems(const std::function<bool(std::string_view)>& node_known) const;
  // Their messages.
  std::vector<std::string> warnings(const std::function<bool(std::string_view)>& node_known) const;

  // Whether the ask is for devices of the configured driver (by its DeviceClass).
  bool ours(const DraDeviceAsk& ask) const;
  // Whether any alternative of the request is.
  bool any_ours(const DraRequest& request) const;
  // The GPUs kube's allocator would give `requests` on `node` (its first fit: allocator order,
  // a shareable device while it has the memory asked for, any other device while nothing holds
  // it; the devices of one request distinct), and the memory each takes; nullopt when they do
  // not fit. A request with firstAvailable alternatives takes the first of them that fits
  // together with the requests after it, as kube's allocator backtracks: the earlier request's
  // alternative varies last. Asks for other drivers take nothing (the model does not track
  // those drivers' devices) and count as satisfied.
  std::optional<std::vector<GpuTake>> first_fit(const NodeState& node,
                                                std::span<const DraRequest> requests) const;

  Units units_of_capacity(std::int64_t bytes) const { return bytes / config_.bytes_per_unit; }
  Units units_of_claim(std::int64_t bytes) const {
    return bytes / config_.bytes_per_unit + (bytes % config_.bytes_per_unit != 0 ? 1 : 0);
  }

 private:
  struct NodeView {
    std::vector<DraGpu> gpus;
    std::vector<DraWarning> warnings;
  };
  NodeView view_of(std::string_view node) const;
  // The node's GPUs from gpus_by_node_, or nullptr when they must be worked out (view_of).
  const std::vector<DraGpu>* cached_gpus(std::string_view node) const;
  void mark_dirty(const std::string& node);
  void mark_slice(const DraSlice& slice);
  void mark_claim(const DraClaim& claim);
  // holdings_on, with a warning per GPU whose holdings summed past its capacity.
  std::vector<DraHolding> holdings_and_problems(std::string_view node,
                                                std::vector<DraWarning>* problems) const;
  std::vector<DraWarning> claim_problems(const DraClaim& claim) const;
  std::vector<DraWarning> class_problems(const DraDeviceClass& device_class) const;
  std::vector<DraWarning> unknown_node_problems(const std::string& key,
                                                const std::string& node) const;
  // Replaces `kept[key]` by `now`, recording in new_problems_ what `now` adds, forgetting there
  // what it drops.
  void keep_problems(std::map<std::string, std::vector<DraWarning>, std::less<>>& kept,
                     const std::string& key, std::vector<DraWarning> now);
  void index_claim(const DraClaim& claim, bool add);

  DraConfig config_;
  std::map<std::string, DraSlice, std::less<>> slices_;
  std::map<std::string, DraClaim, std::less<>> claims_;
  std::map<std::string, DraClaimTemplate, std::less<>> templates_;
  std::map<std::string, DraDeviceClass, std::less<>> classes_;
  // Indexes: slice names by node and by "driver/pool"; keys of allocated claims by the
  // "driver/pool" of each of their results.
  std::map<std::string, std::set<std::string>, std::less<>> slices_by_node_;
  std::map<std::string, std::set<std::string>, std::less<>> slices_by_pool_;
  std::map<std::string, std::set<std::string>, std::less<>> claims_by_pool_;
  std::set<std::string> dirty_;
  std::set<std::string> dirty_claims_;
  // Kept by take_dirty_nodes() for what changed: each node's devices ("driver/pool/device" ->
  // node, and the node's keys), the nodes holding each claim's devices (and the reverse), and
  // the problems by node (its view's; what its GPUs hold), by claim and by class.
  std::map<std::string, std::string, std::less<>> device_node_;
  std::map<std::string, std::vector<std::string>, std::less<>> devices_of_node_;
  std::map<std::string, std::set<std::string>, std::less<>> nodes_of_claim_;
  std::map<std::string, std::set<std::string>, std::less<>> claims_on_node_;
  std::map<std::string, std::vector<DraWarning>, std::less<>> view_problems_;
  std::map<std::string, std::vector<DraWarning>, std::less<>> holding_problems_;
  std::map<std::string, std::vector<DraWarning>, std::less<>> claim_problems_;
  std::map<std::string, std::vector<DraWarning>, std::less<>> class_problems_;
  std::set<DraWarning> new_problems_;
  std::set<std::string> touched_claims_;  // checked since take_new_problems()
  std::uint64_t views_built_ = 0;
  std::uint64_t claims_checked_ = 0;
  // Each node's GPUs as view_of gave them when take_dirty_nodes() last saw the node; a node
  // marked dirty since is not here. Prioritize predicts kube's allocator on every offered node,
  // and rebuilding the list there cost most of a DRA pod's prioritize. Written only by the
  // non-const members, so const readers (under the model's read lock) share it.
  std::map<std::string, std::vector<DraGpu>, std::less<>> gpus_by_node_;
};

}  // namespace gpushare::core
