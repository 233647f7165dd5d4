#pragma once
// The cluster-wide model: nodes, their GPUs, and every pod's allocation. Not thread-safe:
// the owner serialises access (see extender/model_store.h).

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

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
  std::size_t node_count() const { return nodes_.size(); }
  // Stable, insertion-ordered storage for fast scans (removal swaps the last node in).
  const std::vector<NodeState>& nodes() const { return nodes_; }

  // Pods, keyed by UID. Adding an existing UID replaces the old allocation.
  void add_pod(PodAllocation pod);
  bool remove_pod(std::string_view uid);
  const PodAllocation* find_pod(std::string_view uid) const;
  std::size_t pod_count() const { return pods_.size(); }
  const std::unordered_map<std::string, PodAllocation, StringHash, std::equal_to<>>& pods() const {
    return pods_;
  }
  // Pods recorded against a node (including a node not, or no longer, in the model), by UID order.
  std::vector<const PodAllocation*> pods_on(std::string_view node) const;

  // Marks an assumed pod as seen bound. Returns false if unknown.
  bool confirm(std::string_view uid);
  // Removes assumed pods assumed before `deadline_ns`; returns their UIDs.
  std::vector<std::string> expire_assumed(std::int64_t deadline_ns);
  std::size_t assumed_count() const;

  // Sum of memory held on GPUs of known nodes (indexed and unindexed).
  Units total_used() const;
  Units total_capacity() const;

  // Structural equality of what matters: nodes (spec and usage) and pods.
  bool same_allocation_as(const ClusterModel& other) const;

 private:
  NodeState* mutable_node(std::string_view name);
  void attach(const PodAllocation& pod);
  void detach(const PodAllocation& pod);

  std::vector<NodeState> nodes_;
  std::unordered_map<std::string, std::size_t, StringHash, std::equal_to<>> node_index_;
  std::unordered_map<std::string, std::vector<int>, StringHash, std::equal_to<>> unhealthy_;
  std::unordered_map<std::string, PodAllocation, StringHash, std::equal_to<>> pods_;
  std::unordered_map<std::string, std::set<std::string>, StringHash, std::equal_to<>> pods_by_node_;
};

}  // namespace gpushare::core
