#include "gpushare/core/consolidation_planner.h"

#include <algorithm>
#include <limits>
#include <map>
#include <set>
#include <utility>

#include "gpushare/core/fit.h"

namespace gpushare::core {
namespace {

struct GpuRef {
  std::size_t node = 0;
  int gpu = 0;
  friend auto operator<=>(const GpuRef&, const GpuRef&) = default;
};

// A copy of the model's nodes that moves are tried on and undone from, with the single-GPU
// pods on each GPU and an index of the GPUs a moved pod may go to, by free memory.
class Workspace {
 public:
  Workspace(const ClusterModel& model, const MobilityLookup& mobility, bool idle_targets)
      : nodes_(model.nodes()), mobility_(mobility), idle_targets_(idle_targets) {
    residents_.resize(nodes_.size());
    pinned_.resize(nodes_.size());
    entries_.resize(nodes_.size());
    for (std::size_t n = 0; n < nodes_.size(); ++n) {
      const auto gpus = static_cast<std::size_t>(nodes_[n].gpu_count());
      residents_[n].resize(gpus);
      pinned_[n].assign(gpus, false);
      entries_[n].assign(gpus, targets_.end());
    }
    // Pods in UID order, so plans do not depend on the hash map's order.
    std::vector<const PodAllocation*> pods;
    pods.reserve(model.pods().size());
    for (const auto& [uid, pod] : model.pods()) {
      if (pod.holds_gpu()) pods.push_back(&pod);
    }
    std::sort(pods.begin(), pods.end(),
              [](const PodAllocation* a, const PodAllocation* b) { return a->uid < b->uid; });
    for (const PodAllocation* pod : pods) {
      const NodeState* node = model.find_node(pod->node);
      if (node == nullptr) continue;
      const std::size_t n = model.position_of(*node);
      const bool movable = pod->gpus.size() == 1 && !pod->assumed;
      for (int gpu : pod->gpus) {
        if (gpu < 0 || gpu >= node->gpu_count()) continue;
        const auto g = static_cast<std::size_t>(gpu);
        if (movable) {
          residents_[n][g].push_back(pod);
        } else {
          pinned_[n][g] = true;
        }
      }
    }
    for (std::size_t n = 0; n < nodes_.size(); ++n) {
      for (int g = 0; g < nodes_[n].gpu_count(); ++g) index({n, g});
    }
  }

  const std::vector<NodeState>& nodes() const { return nodes_; }
  const std::vector<const PodAllocation*>& residents(GpuRef gpu) const {
    return residents_[gpu.node][static_cast<std::size_t>(gpu.gpu)];
  }
  bool pinned(GpuRef gpu) const { return pinned_[gpu.node][static_cast<std::size_t>(gpu.gpu)]; }
  const GpuState& state(GpuRef gpu) const {
    return nodes_[gpu.node].gpus()[static_cast<std::size_t>(gpu.gpu)];
  }

  // The pod's mobility, if it may move now (opted in, owned, its budget not used up by this
  // plan).
  const PodMobility* movable(const PodAllocation& pod) {
    auto [it, inserted] = mobility_cache_.try_emplace(pod.uid);
    if (inserted) it->second = mobility_ ? mobility_(pod) : std::nullopt;
    const std::optional<PodMobility>& m = it->second;
    if (!m || !m->opted_in || !m->has_owner) return nullptr;
    if (!m->disruption_budget.empty()) {
      const auto used = budget_used_.find(m->disruption_budget);
      const int taken = used == budget_used_.end() ? 0 : used->second;
      if (taken >= m->disruptions_allowed) return nullptr;
    }
    return &*m;
  }

  // Moves `pod` off `from` to the fullest GPU with room outside `excluded` (best fit), counted
  // there before it leaves `from`. False, changing nothing, when no GPU can take it.
  bool move(const PodAllocation& pod, GpuRef from, const std::set<GpuRef>& excluded,
            std::vector<ConsolidationMove>& moves) {
    const PodMobility* m = movable(pod);
    if (m == nullptr) return false;
    PodDemand demand;
    demand.per_gpu = pod.per_gpu;
    demand.gpu_count = 1;
    demand.cpu_milli = pod.cpu_milli;
    demand.memory = pod.memory;
    demand.allowed_models = m->allowed_models;
    for (auto it = targets_.lower_bound(pod.per_gpu); it != targets_.end(); ++it) {
      const GpuRef to = it->second;
      if (to == from || excluded.contains(to)) continue;
      const NodeState& node = nodes_[to.node];
      if (!fits(node, demand)) continue;
      if (state(to).free() < pod.per_gpu) continue;
      apply(pod, from, to);
      if (!m->disruption_budget.empty()) ++budget_used_[m->disruption_budget];
      moves.push_back({pod.uid, pod.name, nodes_[from.node].name(), from.gpu, node.name(), to.gpu,
                       pod.per_gpu});
      undo_log_.push_back({&pod, from, to, m->disruption_budget});
      return true;
    }
    return false;
  }

  std::size_t mark() const { return undo_log_.size(); }
  // Undoes the moves after `mark`, newest first.
  void undo_to(std::size_t mark, std::vector<ConsolidationMove>& moves) {
    while (undo_log_.size() > mark) {
      const Undo u = undo_log_.back();
      undo_log_.pop_back();
      moves.pop_back();
      apply(*u.pod, u.to, u.from);
      if (!u.budget.empty()) --budget_used_[u.budget];
    }
  }

  int wholly_free() const {
    int count = 0;
    for (const auto& node : nodes_) count += node.wholly_free_gpu_count();
    return count;
  }

 private:
  struct Undo {
    const PodAllocation* pod;
    GpuRef from;
    GpuRef to;
    std::string budget;
  };

  void apply(const PodAllocation& pod, GpuRef from, GpuRef to) {
    nodes_[to.node].add_usage(to.gpu, pod.per_gpu);
    nodes_[to.node].add_cpu_mem(pod.cpu_milli, pod.memory);
    nodes_[from.node].remove_usage(from.gpu, pod.per_gpu);
    nodes_[from.node].remove_cpu_mem(pod.cpu_milli, pod.memory);
    auto& source = residents_[from.node][static_cast<std::size_t>(from.gpu)];
    source.erase(std::find(source.begin(), source.end(), &pod));
    residents_[to.node][static_cast<std::size_t>(to.gpu)].push_back(&pod);
    index(from);
    index(to);
  }

  // Keeps the GPU's entry in targets_ in step with its state.
  void index(GpuRef gpu) {
    auto& entry = entries_[gpu.node][static_cast<std::size_t>(gpu.gpu)];
    if (entry != targets_.end()) {
      targets_.erase(entry);
      entry = targets_.end();
    }
    const GpuState& s = state(gpu);
    if (!s.healthy || s.free() == 0) return;
    if (s.used == 0 && !idle_targets_) return;
    entry = targets_.emplace(s.free(), gpu);
  }

  std::vector<NodeState> nodes_;
  const MobilityLookup& mobility_;
  bool idle_targets_;
  std::vector<std::vector<std::vector<const PodAllocation*>>> residents_;
  std::vector<std::vector<bool>> pinned_;  // a GPU holds a pod that cannot move
  std::multimap<Units, GpuRef> targets_;
  std::vector<std::vector<std::multimap<Units, GpuRef>::iterator>> entries_;
  std::map<std::string, std::optional<PodMobility>> mobility_cache_;
  std::map<std::string, int> budget_used_;
  std::vector<Undo> undo_log_;
};

// Pods on a GPU, largest first (ties by UID): the order they are moved in.
std::vector<const PodAllocation*> largest_first(std::vector<const PodAllocation*> pods) {
  std::sort(pods.begin(), pods.end(), [](const PodAllocation* a, const PodAllocation* b) {
    if (a->per_gpu != b->per_gpu) return a->per_gpu > b->per_gpu;
    return a->uid < b->uid;
  });
  return pods;
}

bool fits_anywhere(const ClusterModel& model, const PodDemand& pod) {
  return std::any_of(model.nodes().begin(), model.nodes().end(),
                     [&](const NodeState& node) { return fits(node, pod); });
}

// Could the node hold the pod with every GPU empty (GPU model, size, count, CPU, memory)?
bool could_ever_fit(const NodeState& node, const PodDemand& pod) {
  NodeState empty(node.spec());
  std::vector<int> unhealthy;
  for (int g = 0; g < node.gpu_count(); ++g) {
    if (!node.gpus()[static_cast<std::size_t>(g)].healthy) unhealthy.push_back(g);
  }
  if (!unhealthy.empty()) empty.set_unhealthy(unhealthy);
  return fits(empty, pod);
}

}  // namespace

double ConsolidationPlan::cost() const {
  if (gpus_freed <= 0) return std::numeric_limits<double>::infinity();
  return static_cast<double>(moves.size()) / gpus_freed;
}

std::optional<ConsolidationPlan> plan_free_gpus(const ClusterModel& model,
                                                const MobilityLookup& mobility,
                                                const ConsolidationLimits& limits) {
  if (limits.max_moves <= 0 || limits.max_moves_per_gpu_freed <= 0) return std::nullopt;
  Workspace space(model, mobility, /*idle_targets=*/false);
  const int free_before = space.wholly_free();

  struct Candidate {
    GpuRef gpu;
    std::size_t pods;
    Units used;
  };
  std::vector<Candidate> candidates;
  for (std::size_t n = 0; n < space.nodes().size(); ++n) {
    for (int g = 0; g < space.nodes()[n].gpu_count(); ++g) {
      const GpuRef gpu{n, g};
      const GpuState& s = space.state(gpu);
      const auto& pods = space.residents(gpu);
      if (!s.healthy || s.used == 0 || space.pinned(gpu) || pods.empty()) continue;
      if (pods.size() > static_cast<std::size_t>(limits.max_moves_per_gpu_freed)) continue;
      // Usage the model counts beyond its pods' (none in a consistent model) cannot be moved.
      Units held = 0;
      for (const PodAllocation* pod : pods) held += pod->per_gpu;
      if (held != s.used) continue;
      candidates.push_back({gpu, pods.size(), s.used});
    }
  }
  std::sort(candidates.begin(), candidates.end(), [](const Candidate& a, const Candidate& b) {
    if (a.pods != b.pods) return a.pods < b.pods;
    if (a.used != b.used) return a.used < b.used;
    return a.gpu < b.gpu;
  });

  ConsolidationPlan plan;
  std::set<GpuRef> emptied;   // sources of this plan: never targets
  std::set<GpuRef> received;  // targets of this plan: never emptied
  for (const Candidate& candidate : candidates) {
    const auto room = static_cast<std::size_t>(limits.max_moves) - plan.moves.size();
    if (room == 0) break;
    if (received.contains(candidate.gpu)) continue;
    const auto pods = largest_first(space.residents(candidate.gpu));
    if (pods.size() > room) continue;
    const std::size_t mark = space.mark();
    std::set<GpuRef> excluded = emptied;
    excluded.insert(candidate.gpu);
    bool all = true;
    for (const PodAllocation* pod : pods) {
      if (!space.move(*pod, candidate.gpu, excluded, plan.moves)) {
        all = false;
        break;
      }
    }
    if (!all || space.state(candidate.gpu).used != 0) {
      space.undo_to(mark, plan.moves);
      continue;
    }
    emptied.insert(candidate.gpu);
    for (std::size_t i = mark; i < plan.moves.size(); ++i) {
      const NodeState* to = model.find_node(plan.moves[i].to_node);
      received.insert({model.position_of(*to), plan.moves[i].to_gpu});
    }
  }
  plan.gpus_freed = space.wholly_free() - free_before;
  if (plan.moves.empty() || plan.gpus_freed <= 0) return std::nullopt;
  return plan;
}

std::optional<ConsolidationPlan> plan_for_pending(const ClusterModel& model,
                                                  const PodDemand& pending,
                                                  const MobilityLookup& mobility,
                                                  const ConsolidationLimits& limits) {
  if (limits.max_moves <= 0 || !pending.wants_gpu()) return std::nullopt;
  if (fits_anywhere(model, pending)) return std::nullopt;
  Workspace space(model, mobility, /*idle_targets=*/true);
  const int free_before = space.wholly_free();
  const auto max_moves = static_cast<std::size_t>(limits.max_moves);

  // Per node, the GPUs to clear for the pod and the pods to move off them, fewest moves first.
  struct Candidate {
    std::size_t moves;
    Units amount;  // GPU memory moved
    std::size_t node;
    std::vector<int> gpus;
    std::vector<const PodAllocation*> pods;  // with their GPU below
    std::vector<int> pod_gpus;
  };
  std::vector<Candidate> candidates;
  for (std::size_t n = 0; n < space.nodes().size(); ++n) {
    const NodeState& node = space.nodes()[n];
    if (!could_ever_fit(node, pending)) continue;
    // Per GPU: the pods to move off it (largest first) for the pod to fit there, or none.
    struct Option {
      int gpu;
      std::vector<const PodAllocation*> pods;
    };
    std::vector<Option> options;
    for (int g = 0; g < node.gpu_count(); ++g) {
      const GpuRef gpu{n, g};
      const GpuState& s = space.state(gpu);
      if (!s.healthy || s.capacity < pending.per_gpu) continue;
      const bool whole = pending.needs_whole_gpus();
      if (s.used > 0 && space.pinned(gpu)) continue;
      Option option{g, {}};
      Units free = s.free();
      bool enough = whole ? s.used == 0 : free >= pending.per_gpu;
      for (const PodAllocation* pod : largest_first(space.residents(gpu))) {
        if (enough) break;
        if (space.movable(*pod) == nullptr) continue;
        option.pods.push_back(pod);
        free += pod->per_gpu;
        enough =
            whole ? option.pods.size() == space.residents(gpu).size() : free >= pending.per_gpu;
      }
      if (!enough || option.pods.size() > max_moves) continue;
      options.push_back(std::move(option));
    }
    const auto need = static_cast<std::size_t>(std::max(1, pending.gpu_count));
    if (options.size() < need) continue;
    const auto moved = [](const std::vector<const PodAllocation*>& pods) {
      Units sum = 0;
      for (const PodAllocation* pod : pods) sum += pod->per_gpu;
      return sum;
    };
    std::stable_sort(options.begin(), options.end(), [&](const Option& a, const Option& b) {
      if (a.pods.size() != b.pods.size()) return a.pods.size() < b.pods.size();
      return moved(a.pods) < moved(b.pods);
    });
    Candidate candidate{0, 0, n, {}, {}, {}};
    for (std::size_t i = 0; i < need; ++i) {
      candidate.gpus.push_back(options[i].gpu);
      for (const PodAllocation* pod : options[i].pods) {
        candidate.pods.push_back(pod);
        candidate.pod_gpus.push_back(options[i].gpu);
      }
    }
    candidate.moves = candidate.pods.size();
    candidate.amount = moved(candidate.pods);
    if (candidate.moves == 0 || candidate.moves > max_moves) continue;
    candidates.push_back(std::move(candidate));
  }
  std::stable_sort(candidates.begin(), candidates.end(),
                   [](const Candidate& a, const Candidate& b) {
                     if (a.moves != b.moves) return a.moves < b.moves;
                     return a.amount < b.amount;
                   });

  // Tries the cheapest candidates; a bounded number, as each is a trial on the whole cluster.
  constexpr std::size_t kMaxTrials = 64;
  ConsolidationPlan plan;
  for (std::size_t c = 0; c < candidates.size() && c < kMaxTrials; ++c) {
    const Candidate& candidate = candidates[c];
    std::set<GpuRef> excluded;
    for (int g : candidate.gpus) excluded.insert({candidate.node, g});
    const std::size_t mark = space.mark();
    bool all = true;
    for (std::size_t i = 0; i < candidate.pods.size() && all; ++i) {
      all = space.move(*candidate.pods[i], {candidate.node, candidate.pod_gpus[i]}, excluded,
                       plan.moves);
    }
    const NodeState& node = space.nodes()[candidate.node];
    if (all && fits(node, pending)) {
      bool room = true;
      for (int g : candidate.gpus) {
        const GpuState& s = node.gpus()[static_cast<std::size_t>(g)];
        room = room && (pending.needs_whole_gpus() ? s.used == 0 : s.free() >= pending.per_gpu);
      }
      if (room) {
        plan.pending_node = node.name();
        plan.pending_gpus = candidate.gpus;
        plan.gpus_freed = space.wholly_free() - free_before;
        return plan;
      }
    }
    space.undo_to(mark, plan.moves);
  }
  return std::nullopt;
}

int MoveBudget::moved_in_last_hour(double now) {
  while (!recent_.empty() && recent_.front().first <= now - 3600.0) recent_.pop_front();
  int moved = 0;
  for (const auto& [time, moves] : recent_) moved += moves;
  return moved;
}

int MoveBudget::left(double now) {
  return std::max(0, per_hour_ - moved_in_last_hour(now));
}

void MoveBudget::record(double now, int moves) {
  if (moves > 0) recent_.emplace_back(now, moves);
}

}  // namespace gpushare::core
