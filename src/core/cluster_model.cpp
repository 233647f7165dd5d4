#include "gpushare/core/cluster_model.h"

#include <algorithm>
#include <utility>

namespace gpushare::core {

namespace {
const std::vector<int> kNoIndices;
}

NodeState* ClusterModel::mutable_node(std::string_view name) {
  auto it = node_index_.find(name);
  return it == node_index_.end() ? nullptr : &nodes_[it->second];
}

const NodeState* ClusterModel::find_node(std::string_view name) const {
  auto it = node_index_.find(name);
  return it == node_index_.end() ? nullptr : &nodes_[it->second];
}

void ClusterModel::upsert_node(NodeSpec spec) {
  // Rebuild the node from its spec and the pods recorded against it: a capacity change
  // (GPU count, memory) then re-derives every GPU's usage exactly, with nothing carried over.
  NodeState fresh(std::move(spec));
  const std::string name = fresh.name();
  if (auto it = unhealthy_.find(name); it != unhealthy_.end()) fresh.set_unhealthy(it->second);
  if (auto it = node_index_.find(name); it != node_index_.end()) {
    fresh.continue_generation_from(nodes_[it->second]);
    nodes_[it->second] = std::move(fresh);
  } else {
    node_index_.emplace(name, nodes_.size());
    nodes_.push_back(std::move(fresh));
  }
  if (auto it = pods_by_node_.find(name); it != pods_by_node_.end()) {
    for (const auto& uid : it->second) attach(pods_.at(uid));
  }
}

bool ClusterModel::remove_node(std::string_view name) {
  auto it = node_index_.find(name);
  if (it == node_index_.end()) return false;
  const std::size_t index = it->second;
  node_index_.erase(it);
  if (index + 1 != nodes_.size()) {
    nodes_[index] = std::move(nodes_.back());
    node_index_[nodes_[index].name()] = index;
  }
  nodes_.pop_back();
  return true;
}

void ClusterModel::set_unhealthy(std::string_view node, std::vector<int> indices) {
  std::sort(indices.begin(), indices.end());
  indices.erase(std::unique(indices.begin(), indices.end()), indices.end());
  if (indices.empty()) {
    if (auto it = unhealthy_.find(node); it != unhealthy_.end()) unhealthy_.erase(it);
  } else {
    unhealthy_[std::string(node)] = indices;
  }
  if (NodeState* state = mutable_node(node)) state->set_unhealthy(indices);
}

const std::vector<int>& ClusterModel::unhealthy(std::string_view node) const {
  auto it = unhealthy_.find(node);
  return it == unhealthy_.end() ? kNoIndices : it->second;
}

void ClusterModel::attach(const PodAllocation& pod) {
  NodeState* node = mutable_node(pod.node);
  if (node == nullptr) return;
  if (pod.gpus.empty()) {
    node->add_usage(-1, pod.per_gpu);
  } else {
    for (int gpu : pod.gpus) node->add_usage(gpu, pod.per_gpu);
  }
  if (pod.cpu_milli != 0 || pod.memory != 0) node->add_cpu_mem(pod.cpu_milli, pod.memory);
}

void ClusterModel::detach(const PodAllocation& pod) {
  NodeState* node = mutable_node(pod.node);
  if (node == nullptr) return;
  if (pod.gpus.empty()) {
    node->remove_usage(-1, pod.per_gpu);
  } else {
    for (int gpu : pod.gpus) node->remove_usage(gpu, pod.per_gpu);
  }
  if (pod.cpu_milli != 0 || pod.memory != 0) node->remove_cpu_mem(pod.cpu_milli, pod.memory);
}

void ClusterModel::add_pod(PodAllocation pod) {
  remove_pod(pod.uid);
  attach(pod);
  pods_by_node_[pod.node].insert(pod.uid);
  std::string uid = pod.uid;
  pods_.emplace(std::move(uid), std::move(pod));
}

bool ClusterModel::remove_pod(std::string_view uid) {
  auto it = pods_.find(uid);
  if (it == pods_.end()) return false;
  detach(it->second);
  if (auto by_node = pods_by_node_.find(it->second.node); by_node != pods_by_node_.end()) {
    by_node->second.erase(it->second.uid);
    if (by_node->second.empty()) pods_by_node_.erase(by_node);
  }
  pods_.erase(it);
  return true;
}

const PodAllocation* ClusterModel::find_pod(std::string_view uid) const {
  auto it = pods_.find(uid);
  return it == pods_.end() ? nullptr : &it->second;
}

std::vector<const PodAllocation*> ClusterModel::pods_on(std::string_view node) const {
  std::vector<const PodAllocation*> result;
  if (auto it = pods_by_node_.find(node); it != pods_by_node_.end()) {
    result.reserve(it->second.size());
    for (const auto& uid : it->second) result.push_back(&pods_.at(uid));
  }
  return result;
}

bool ClusterModel::confirm(std::string_view uid) {
  auto it = pods_.find(uid);
  if (it == pods_.end()) return false;
  it->second.assumed = false;
  return true;
}

std::vector<std::string> ClusterModel::expire_assumed(std::int64_t deadline_ns) {
  std::vector<std::string> expired;
  for (const auto& [uid, pod] : pods_) {
    if (pod.assumed && pod.assume_time_ns < deadline_ns) expired.push_back(uid);
  }
  for (const auto& uid : expired) remove_pod(uid);
  return expired;
}

std::size_t ClusterModel::assumed_count() const {
  return static_cast<std::size_t>(
      std::count_if(pods_.begin(), pods_.end(), [](const auto& entry) { return entry.second.assumed; }));
}

Units ClusterModel::total_used() const {
  Units sum = 0;
  for (const auto& node : nodes_) sum += node.total_used();
  return sum;
}

Units ClusterModel::total_capacity() const {
  Units sum = 0;
  for (const auto& node : nodes_) sum += node.total_capacity();
  return sum;
}

bool ClusterModel::same_allocation_as(const ClusterModel& other) const {
  if (nodes_.size() != other.nodes_.size() || pods_ != other.pods_) return false;
  for (const auto& node : nodes_) {
    const NodeState* theirs = other.find_node(node.name());
    if (theirs == nullptr || theirs->gpu_count() != node.gpu_count() ||
        theirs->unindexed_used() != node.unindexed_used()) {
      return false;
    }
    for (int i = 0; i < node.gpu_count(); ++i) {
      const auto& a = node.gpus()[static_cast<std::size_t>(i)];
      const auto& b = theirs->gpus()[static_cast<std::size_t>(i)];
      if (a.capacity != b.capacity || a.used != b.used || a.healthy != b.healthy) return false;
    }
  }
  return true;
}

}  // namespace gpushare::core
