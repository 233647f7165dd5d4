#include "gpushare/core/consolidation_hold.h"

#include <fmt/format.h>

namespace gpushare::core {

std::string HoldBook::place(const ClusterModel& model, ConsolidationHold hold,
                            std::int64_t now_ns) {
  if (hold.owner_uid.empty()) return "a hold needs an owner";
  if (hold.memory <= 0) return "a hold needs memory to hold";
  if (!hold.in_force(now_ns)) return "the hold would already have expired";
  const NodeState* node = model.find_node(hold.node);
  if (node == nullptr) return fmt::format("node {} is not known", hold.node);
  if (hold.gpu < 0 || hold.gpu >= node->gpu_count())
    return fmt::format("node {} has no GPU {}", hold.node, hold.gpu);
  const GpuState& gpu = node->gpus()[static_cast<std::size_t>(hold.gpu)];
  if (!gpu.healthy) return fmt::format("node {} GPU {} is unhealthy", hold.node, hold.gpu);
  // The owner's own earlier hold is replaced, so it does not count against the new one.
  const Units others = held_against(hold.node, hold.gpu, hold.owner_uid, now_ns);
  const Units room = gpu.free() > others ? gpu.free() - others : 0;
  if (room < hold.memory) {
    return fmt::format("node {} GPU {} has {} free (less {} held), not {}", hold.node, hold.gpu,
                       gpu.free(), others, hold.memory);
  }
  std::string owner = hold.owner_uid;
  holds_.insert_or_assign(std::move(owner), std::move(hold));
  return {};
}

std::optional<ConsolidationHold> HoldBook::release(std::string_view owner_uid) {
  const auto it = holds_.find(owner_uid);
  if (it == holds_.end()) return std::nullopt;
  ConsolidationHold hold = std::move(it->second);
  holds_.erase(it);
  return hold;
}

std::vector<ConsolidationHold> HoldBook::release_expired(std::int64_t now_ns) {
  std::vector<ConsolidationHold> expired;
  for (auto it = holds_.begin(); it != holds_.end();) {
    if (it->second.in_force(now_ns)) {
      ++it;
      continue;
    }
    expired.push_back(std::move(it->second));
    it = holds_.erase(it);
  }
  return expired;
}

const ConsolidationHold* HoldBook::for_owner(std::string_view owner_uid,
                                             std::int64_t now_ns) const {
  if (owner_uid.empty()) return nullptr;
  const auto it = holds_.find(owner_uid);
  if (it == holds_.end() || !it->second.in_force(now_ns)) return nullptr;
  return &it->second;
}

Units HoldBook::held_against(std::string_view node, int gpu, std::string_view owner_uid,
                             std::int64_t now_ns) const {
  Units held = 0;
  for (const auto& [owner, hold] : holds_) {
    if (hold.node == node && hold.gpu == gpu && hold.in_force(now_ns) &&
        (owner_uid.empty() || owner != owner_uid))
      held += hold.memory;
  }
  return held;
}

std::optional<NodeState> HoldBook::view_for(const NodeState& node, std::string_view owner_uid,
                                            std::int64_t now_ns) const {
  std::optional<NodeState> view;
  for (const auto& [owner, hold] : holds_) {
    if (hold.node != node.name() || !hold.in_force(now_ns) || owner == owner_uid) continue;
    if (!view) view = node;
    view->add_usage(hold.gpu, hold.memory);
  }
  return view;
}

}  // namespace gpushare::core
