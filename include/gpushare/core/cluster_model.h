#pragma once
// The cluster-wide model: nodes, their GPUs, and every pod's allocation. Not thread-safe:
// the owner serialises access (see extender/service/model_store.h).

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "gpushare/core/dra.h"
#include "gpushare/core/node_state.h"
#include "gpushare/core/pod_allocation.h"

namespace gpushare::core {

struct StringHash {
  using is_transparent = void;
  std::size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};

class ClusterModel {
 public:
  // Nodes. A node may be (re)added after pods that reference it: their usage attaches then.
  void upsert_node(NodeSpec spec);
  bool remove_node(std::string_view name);
  // Unhealthy GPU indices per node, kept apart from the node so they survive respec and re-adds.
  void set_unhealthy(std::string_view node, std::vector<int> indices);
  const std::vector<int>& unhealthy(std::string_view node) const;

  const NodeState* find_node(std::string_view name) const;
  // Calls fn(i, find_node(names[i])) for every i in order: for the thousands of names of a
  // filter or prioritize request. The table slot, the node and its name are prefetched a few
  // look-ups ahead, so that their cache misses overlap instead of queueing. `with_gpus` also
  // prefetches the nodes' per-GPU state.
  template <typename Fn>
  void visit_nodes(std::span<const std::string_view> names, Fn&& fn, bool with_gpus = false) const;
  std::size_t node_count() const { return nodes_.size(); }
  // A node's position in nodes() (the node must be this model's), and its stamp: a number that
  // changes whenever that position's node changes in any way (usage, spec, health, or another
  // node moved in), never repeating within this model object. Caches of per-node results key on
  // (position, stamp).
  std::size_t position_of(const NodeState& node) const {
    return static_cast<std::size_t>(&node - nodes_.data());
  }
  std::uint64_t stamp(std::size_t position) const { return stamps_[position]; }
  // Stable, insertion-ordered storage for fast scans (removal swaps the last node in).
  const std::vector<NodeState>& nodes() const { return nodes_; }
  // The GPU models the nodes with GPUs carry, sorted and distinct; "" stands for GPU nodes
  // without the model label. What pods' pins resolve against (core/model_pin.h); kept as nodes
  // come and go, so reading it costs nothing.
  const std::vector<std::string>& gpu_models() const { return gpu_models_; }
  // GPU nodes per model (the same keys as gpu_models()).
  const std::map<std::string, std::size_t, std::less<>>& gpu_nodes_by_model() const {
    return gpu_nodes_by_model_;
  }

  // Pods, keyed by UID: every bound pod, whether it holds GPU memory or only CPU and memory.
  // Adding an existing UID replaces the old allocation.
  void add_pod(PodAllocation pod);
  bool remove_pod(std::string_view uid);
  const PodAllocation* find_pod(std::string_view uid) const;
  std::size_t pod_count() const { return pods_.size(); }
  // Pods holding GPU memory (PodAllocation::holds_gpu): what /inspect and metrics call pods.
  std::size_t gpu_pod_count() const { return gpu_pod_count_; }
  const std::unordered_map<std::string, PodAllocation, StringHash, std::equal_to<>>& pods() const {
    return pods_;
  }
  // Pods recorded against a node (including a node not, or no longer, in the model), by UID order.
  std::vector<const PodAllocation*> pods_on(std::string_view node) const;

  // Pods counted while being bound (assumed): their reservations live in the ReservationLedger.
  std::size_t assumed_count() const;

  // The part of a pod's claim the model does not count because it is more than its GPU (or,
  // without a valid index, its node) can hold (NodeState::charge_for); 0 when it is counted in
  // full or its node is not known. For warnings: such a claim is broken or hostile.
  Units uncounted_claim(const PodAllocation& pod) const;

  // Sum of memory held on GPUs of known nodes (indexed and unindexed).
  Units total_used() const;
  Units total_capacity() const;

  // Dynamic Resource Allocation (core/dra.h): a node's DRA GPUs replace the device plugin's
  // in its spec (DraState::overlay) and what allocated claims hold counts as their usage, beside
  // its pods'. update_dra(fn) calls fn(DraState&) and rebuilds the nodes the change touched.
  const DraState& dra() const { return dra_; }
  template <typename Fn>
  void update_dra(Fn&& fn) {
    std::forward<Fn>(fn)(dra_);
    refresh_dra();
  }
  // The spec a node from `spec` (its Node object) has in this model.
  NodeSpec effective_spec(NodeSpec spec) const { return dra_.overlay(std::move(spec)); }

  // Structural equality of what matters: nodes (GPUs, their usage, CPU and memory used) and pods.
  bool same_allocation_as(const ClusterModel& other) const;

 private:
  NodeState* mutable_node(std::string_view name);
  // Counts a node with GPUs under its model (delta +1 or -1) and keeps gpu_models_ in step.
  void count_model(const NodeSpec& spec, int delta);
  void refresh_dra();
  void attach(const PodAllocation& pod);
  void detach(const PodAllocation& pod);

  // nodes_ by name, for filter's and prioritize's thousands of look-ups per request: open
  // addressing with linear probing over a power-of-two table kept at most half full. A slot
  // holds the name's hash and the node's position in nodes_, so a look-up reads one slot of a
  // flat table and then the node itself (std::unordered_map chased three or four pointers).
  struct IndexSlot {
    std::uint64_t hash = 0;
    std::uint32_t node = kNoNode;
  };
  static constexpr std::uint32_t kNoNode = 0xFFFFFFFFu;
  static std::uint64_t hash_name(std::string_view name);
  std::size_t index_find(std::string_view name, std::uint64_t hash) const;  // slot, or npos
  void index_insert(std::uint64_t hash, std::uint32_t node);
  void index_erase(std::size_t slot);

  // Gives position `node` a fresh stamp: every path that changes or moves a node calls it.
  void restamp(std::size_t node) { stamps_[node] = ++last_stamp_; }

  std::vector<NodeState> nodes_;
  std::vector<std::uint64_t> stamps_;  // parallel to nodes_
  std::uint64_t last_stamp_ = 0;
  std::vector<IndexSlot> index_;
  std::unordered_map<std::string, std::vector<int>, StringHash, std::equal_to<>> unhealthy_;
  std::unordered_map<std::string, PodAllocation, StringHash, std::equal_to<>> pods_;
  std::unordered_map<std::string, std::set<std::string>, StringHash, std::equal_to<>> pods_by_node_;
  std::size_t gpu_pod_count_ = 0;
  std::map<std::string, std::size_t, std::less<>> gpu_nodes_by_model_;
  std::vector<std::string> gpu_models_;  // the keys of gpu_nodes_by_model_
  DraState dra_;
  // Node objects' specs of the nodes whose spec DRA changed, to rebuild them from.
  std::unordered_map<std::string, NodeSpec, StringHash, std::equal_to<>> dra_base_;
};

template <typename Fn>
void ClusterModel::visit_nodes(std::span<const std::string_view> names, Fn&& fn,
                               bool with_gpus) const {
  const std::size_t n = names.size();
  if (index_.empty()) {
    for (std::size_t i = 0; i < n; ++i) fn(i, static_cast<const NodeState*>(nullptr));
    return;
  }
  // A software pipeline, kAhead look-ups per stage: (1) hash, prefetch the home slot;
  // (2) find the slot with that hash, prefetch the node; (3) prefetch the node's name (and
  // GPUs); (4) compare the name exactly and call fn.
  constexpr std::size_t kAhead = 8;
  const std::size_t mask = index_.size() - 1;
  std::vector<std::uint64_t> hashes(n);
  std::vector<std::uint32_t> candidate(n, kNoNode);
  for (std::size_t i = 0; i < n + 3 * kAhead; ++i) {
    if (i < n) {
      hashes[i] = hash_name(names[i]);
      __builtin_prefetch(&index_[hashes[i] & mask]);
    }
    if (i >= kAhead && i - kAhead < n) {
      const std::size_t j = i - kAhead;
      for (std::size_t slot = hashes[j] & mask; index_[slot].node != kNoNode;
           slot = (slot + 1) & mask) {
        if (index_[slot].hash != hashes[j]) continue;
        candidate[j] = index_[slot].node;
        const char* node = reinterpret_cast<const char*>(&nodes_[candidate[j]]);
        for (std::size_t offset = 0; offset < sizeof(NodeState); offset += 64)
          __builtin_prefetch(node + offset);
        break;
      }
    }
    if (i >= 2 * kAhead && i - 2 * kAhead < n) {
      const std::size_t j = i - 2 * kAhead;
      if (candidate[j] != kNoNode) {
        const NodeState& node = nodes_[candidate[j]];
        __builtin_prefetch(node.name().data());
        if (with_gpus) __builtin_prefetch(node.gpus().data());
      }
    }
    if (i >= 3 * kAhead && i - 3 * kAhead < n) {
      const std::size_t j = i - 3 * kAhead;
      const std::size_t slot = index_find(names[j], hashes[j]);
      fn(j, slot == std::string_view::npos ? static_cast<const NodeState*>(nullptr)
                                           : &nodes_[index_[slot].node]);
    }
  }
}

}  // namespace gpushare::core
