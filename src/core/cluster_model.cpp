#include "gpushare/core/cluster_model.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <utility>

namespace gpushare::core {

namespace {
const std::vector<int> kNoIndices;
}

std::uint64_t ClusterModel::hash_name(std::string_view name) {
  // 8 bytes at a time, then the splitmix64 finaliser.
  std::uint64_t h = 0x9e3779b97f4a7c15ULL ^ name.size();
  const char* p = name.data();
  std::size_t n = name.size();
  for (; n >= 8; p += 8, n -= 8) {
    std::uint64_t word;
    std::memcpy(&word, p, 8);
    h = (h ^ word) * 0xbf58476d1ce4e5b9ULL;
    h ^= h >> 31;
  }
  if (n > 0) {
    // The last 8 bytes of the name, overlapping bytes already mixed in (names shorter than 8
    // bytes are read byte by byte).
    std::uint64_t tail = 0;
    if (name.size() >= 8) {
      std::memcpy(&tail, name.data() + name.size() - 8, 8);
    } else {
      for (std::size_t i = 0; i < n; ++i)
        tail |= static_cast<std::uint64_t>(static_cast<unsigned char>(p[i])) << (8 * i);
    }
    h = (h ^ tail) * 0xbf58476d1ce4e5b9ULL;
  }
  h = (h ^ (h >> 30)) * 0xbf58476d1ce4e5b9ULL;
  h = (h ^ (h >> 27)) * 0x94d049bb133111ebULL;
  return h ^ (h >> 31);
}

std::size_t ClusterModel::index_find(std::string_view name, std::uint64_t hash) const {
  if (index_.empty()) return std::string_view::npos;
  const std::size_t mask = index_.size() - 1;
  for (std::size_t slot = hash & mask;; slot = (slot + 1) & mask) {
    const IndexSlot& entry = index_[slot];
    if (entry.node == kNoNode) return std::string_view::npos;
    if (entry.hash == hash && nodes_[entry.node].name() == name) return slot;
  }
}

void ClusterModel::index_insert(std::uint64_t hash, std::uint32_t node) {
  if ((nodes_.size() + 1) * 2 > index_.size()) {
    // Grow to keep the table at most half full; re-place every node but the one being added.
    std::vector<IndexSlot> old(std::max<std::size_t>(16, index_.size() * 2));
    index_.swap(old);
    const std::size_t mask = index_.size() - 1;
    for (const IndexSlot& entry : old) {
      if (entry.node == kNoNode) continue;
      std::size_t slot = entry.hash & mask;
      while (index_[slot].node != kNoNode) slot = (slot + 1) & mask;
      index_[slot] = entry;
    }
  }
  const std::size_t mask = index_.size() - 1;
  std::size_t slot = hash & mask;
  while (index_[slot].node != kNoNode) slot = (slot + 1) & mask;
  index_[slot] = {hash, node};
}

void ClusterModel::index_erase(std::size_t hole) {
  // Backward-shift deletion: pull later entries of the probe run into the hole when their home
  // slot does not lie cyclically in (hole, their slot], so every run stays unbroken.
  const std::size_t mask = index_.size() - 1;
  for (std::size_t slot = (hole + 1) & mask; index_[slot].node != kNoNode;
       slot = (slot + 1) & mask) {
    const std::size_t home = index_[slot].hash & mask;
    const bool stays = hole <= slot ? (hole < home && home <= slot) : (hole < home || home <= slot);
    if (stays) continue;
    index_[hole] = index_[slot];
    hole = slot;
  }
  index_[hole] = IndexSlot{};
}

NodeState* ClusterModel::mutable_node(std::string_view name) {
  const std::size_t slot = index_find(name, hash_name(name));
  if (slot == std::string_view::npos) return nullptr;
  // Whoever asks for a node may change it: restamp it now (a spare stamp costs nothing).
  restamp(index_[slot].node);
  return &nodes_[index_[slot].node];
}

const NodeState* ClusterModel::find_node(std::string_view name) const {
  const std::size_t slot = index_find(name, hash_name(name));
  return slot == std::string_view::npos ? nullptr : &nodes_[index_[slot].node];
}

void ClusterModel::upsert_node(NodeSpec spec) {
  // Rebuild the node from its spec and the pods recorded against it: a capacity change
  // (GPU count, memory) then re-derives every GPU's usage exactly, with nothing carried over.
  const std::string name = spec.name;
  NodeSpec effective = dra_.overlay(spec);
  if (effective == spec) {
    if (auto it = dra_base_.find(name); it != dra_base_.end()) dra_base_.erase(it);
  } else {
    dra_base_.insert_or_assign(name, std::move(spec));
  }
  NodeState fresh(std::move(effective));
  if (auto it = unhealthy_.find(name); it != unhealthy_.end()) fresh.set_unhealthy(it->second);
  const std::uint64_t hash = hash_name(name);
  count_model(fresh.spec(), +1);
  if (const std::size_t slot = index_find(name, hash); slot != std::string_view::npos) {
    NodeState& current = nodes_[index_[slot].node];
    count_model(current.spec(), -1);
    fresh.continue_generation_from(current);
    current = std::move(fresh);
    restamp(index_[slot].node);
  } else {
    index_insert(hash, static_cast<std::uint32_t>(nodes_.size()));
    nodes_.push_back(std::move(fresh));
    stamps_.push_back(0);
    restamp(nodes_.size() - 1);
  }
  if (auto it = pods_by_node_.find(name); it != pods_by_node_.end()) {
    for (const auto& uid : it->second) attach(pods_.at(uid));
  }
  const std::vector<DraHolding> held = dra_.holdings_on(name);
  if (!held.empty()) {
    NodeState* node = mutable_node(name);
    for (const auto& holding : held) node->add_usage(holding.gpu, holding.amount);
  }
}

void ClusterModel::refresh_dra() {
  for (const auto& name : dra_.take_dirty_nodes()) {
    const NodeState* node = find_node(name);
    if (node == nullptr) continue;  // its GPUs attach when its Node object arrives
    auto base = dra_base_.find(name);
    upsert_node(base != dra_base_.end() ? base->second : node->spec());
  }
}

bool ClusterModel::remove_node(std::string_view name) {
  const std::size_t slot = index_find(name, hash_name(name));
  if (slot == std::string_view::npos) return false;
  if (auto base = dra_base_.find(name); base != dra_base_.end()) dra_base_.erase(base);
  const std::uint32_t index = index_[slot].node;
  count_model(nodes_[index].spec(), -1);
  index_erase(slot);
  const auto last = static_cast<std::uint32_t>(nodes_.size() - 1);
  if (index != last) {
    // The last node fills the gap: re-point its slot, then move it.
    const std::size_t mask = index_.size() - 1;
    std::size_t moved = hash_name(nodes_[last].name()) & mask;
    while (index_[moved].node != last) moved = (moved + 1) & mask;
    index_[moved].node = index;
    nodes_[index] = std::move(nodes_[last]);
    restamp(index);
  }
  nodes_.pop_back();
  stamps_.pop_back();
  return true;
}

void ClusterModel::count_model(const NodeSpec& spec, int delta) {
  if (spec.gpu_count <= 0) return;
  if (delta > 0) {
    if (++gpu_nodes_by_model_[spec.gpu_model] > 1) return;
  } else {
    const auto it = gpu_nodes_by_model_.find(spec.gpu_model);
    if (it == gpu_nodes_by_model_.end() || --it->second > 0) return;
    gpu_nodes_by_model_.erase(it);
  }
  gpu_models_.clear();  // a model came or went: rare, so rebuilt whole
  for (const auto& [model, count] : gpu_nodes_by_model_) gpu_models_.push_back(model);
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
  // A pod without GPU memory touches neither a GPU nor the node's unindexed budget.
  if (pod.holds_gpu() && pod.gpus.empty()) {
    node->add_usage(-1, pod.per_gpu);
  } else if (pod.holds_gpu()) {
    for (int gpu : pod.gpus) node->add_usage(gpu, pod.per_gpu);
  }
  if (pod.cpu_milli != 0 || pod.memory != 0) node->add_cpu_mem(pod.cpu_milli, pod.memory);
}

void ClusterModel::detach(const PodAllocation& pod) {
  NodeState* node = mutable_node(pod.node);
  if (node == nullptr) return;
  // A pod without GPU memory touches neither a GPU nor the node's unindexed budget.
  if (pod.holds_gpu() && pod.gpus.empty()) {
    node->remove_usage(-1, pod.per_gpu);
  } else if (pod.holds_gpu()) {
    for (int gpu : pod.gpus) node->remove_usage(gpu, pod.per_gpu);
  }
  if (pod.cpu_milli != 0 || pod.memory != 0) node->remove_cpu_mem(pod.cpu_milli, pod.memory);
}

void ClusterModel::add_pod(PodAllocation pod) {
  // A relist repeats every pod the model already holds: leave those nodes (and the generations
  // that keep their cached scores valid) untouched rather than detach and re-attach.
  if (const auto it = pods_.find(pod.uid); it != pods_.end() && it->second == pod) return;
  remove_pod(pod.uid);
  attach(pod);
  pods_by_node_[pod.node].insert(pod.uid);
  if (pod.holds_gpu()) ++gpu_pod_count_;
  std::string uid = pod.uid;
  pods_.emplace(std::move(uid), std::move(pod));
}

bool ClusterModel::remove_pod(std::string_view uid) {
  auto it = pods_.find(uid);
  if (it == pods_.end()) return false;
  detach(it->second);
  if (it->second.holds_gpu()) --gpu_pod_count_;
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

std::size_t ClusterModel::assumed_count() const {
  return static_cast<std::size_t>(std::count_if(
      pods_.begin(), pods_.end(), [](const auto& entry) { return entry.second.assumed; }));
}

Units ClusterModel::uncounted_claim(const PodAllocation& pod) const {
  const NodeState* node = find_node(pod.node);
  if (node == nullptr) return 0;
  Units uncounted = 0;
  auto add = [&](int gpu) {
    const Units claim = std::max<Units>(0, pod.per_gpu);
    uncounted = std::max(uncounted, claim - node->charge_for(gpu, claim));
  };
  if (pod.gpus.empty()) add(-1);
  for (int gpu : pod.gpus) add(gpu);
  return uncounted;
}

namespace {
Units add_saturating(Units a, Units b) {
  Units sum = 0;
  return __builtin_add_overflow(a, b, &sum) ? std::numeric_limits<Units>::max() : sum;
}
}  // namespace

Units ClusterModel::total_used() const {
  Units sum = 0;
  for (const auto& node : nodes_) sum = add_saturating(sum, node.total_used());
  return sum;
}

Units ClusterModel::total_capacity() const {
  Units sum = 0;
  for (const auto& node : nodes_) sum = add_saturating(sum, node.total_capacity());
  return sum;
}

bool ClusterModel::same_allocation_as(const ClusterModel& other) const {
  if (nodes_.size() != other.nodes_.size() || pods_ != other.pods_) return false;
  for (const auto& node : nodes_) {
    const NodeState* theirs = other.find_node(node.name());
    if (theirs == nullptr || theirs->gpu_count() != node.gpu_count() ||
        theirs->unindexed_used() != node.unindexed_used() ||
        theirs->cpu_used() != node.cpu_used() || theirs->memory_used() != node.memory_used()) {
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
