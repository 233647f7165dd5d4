#include "gpushare/core/preemption.h"

#include <algorithm>
#include <set>
#include <string_view>

#include "gpushare/core/fit.h"

namespace gpushare::core {
namespace {

// A victim's hold on the node's GPU memory.
struct VictimHold {
  std::string uid;
  int gpu = -1;  // -1: held on the node without an index
  Units amount = 0;
};

}  // namespace

std::optional<std::vector<std::string>> choose_victims(
    const NodeState& node, const PodDemand& demand, const std::vector<PreemptionVictim>& victims) {
  // A victim listed twice (same UID) is one pod: counted twice, its memory would be freed
  // twice in the trials below and a node that cannot fit would be offered. First wins.
  std::vector<std::string> chosen;
  std::vector<VictimHold> holds;
  std::set<std::string_view> seen;
  for (const PreemptionVictim& victim : victims) {
    if (!seen.insert(victim.uid).second) continue;
    // Victims holding no GPU memory here stay victims: kube-scheduler chose them for other
    // resources.
    const auto& allocation = victim.allocation;
    if (!demand.wants_gpu() || !allocation || allocation->node != node.name() ||
        allocation->total() == 0) {
      chosen.push_back(victim.uid);
      continue;
    }
    holds.push_back({victim.uid, allocation->gpus.empty() ? -1 : allocation->gpus.front(),
                     allocation->per_gpu});
  }
  if (!demand.wants_gpu()) return chosen;

  // Fewest GPU victims that make one GPU fit: try each GPU, evicting its largest first.
  std::optional<std::vector<std::string>> best;
  Units best_evicted = 0;
  auto consider = [&](int gpu) {
    NodeState trial = node;
    std::vector<std::string> evicted;
    Units evicted_amount = 0;
    std::vector<const VictimHold*> on_gpu;
    std::vector<const VictimHold*> unindexed;
    for (const auto& hold : holds) {
      if (hold.gpu == gpu && gpu >= 0) on_gpu.push_back(&hold);
      if (hold.gpu < 0) unindexed.push_back(&hold);
    }
    auto by_amount = [](const VictimHold* a, const VictimHold* b) { return a->amount > b->amount; };
    std::sort(on_gpu.begin(), on_gpu.end(), by_amount);
    std::sort(unindexed.begin(), unindexed.end(), by_amount);
    auto fits = [&] {
      if (gpu < 0) return core::fits(trial, demand);
      const auto& state = trial.gpus()[static_cast<std::size_t>(gpu)];
      return state.healthy && state.free() >= demand.per_gpu &&
             trial.total_free() >= demand.per_gpu;
    };
    auto evict = [&](const VictimHold* hold) {
      trial.remove_usage(hold->gpu, hold->amount);
      evicted.push_back(hold->uid);
      evicted_amount += hold->amount;
    };
    for (const VictimHold* hold : on_gpu) {
      if (fits()) break;
      evict(hold);
    }
    for (const VictimHold* hold : unindexed) {
      if (fits()) break;
      evict(hold);
    }
    if (!fits()) return;
    if (!best || evicted.size() < best->size() ||
        (evicted.size() == best->size() && evicted_amount < best_evicted)) {
      best = std::move(evicted);
      best_evicted = evicted_amount;
    }
  };
  consider(-1);  // maybe no GPU victim is needed at all
  for (int gpu = 0; gpu < node.gpu_count(); ++gpu) consider(gpu);
  if (!best) return std::nullopt;  // evicting every victim still leaves no single GPU that fits
  chosen.insert(chosen.end(), best->begin(), best->end());
  return chosen;
}

}  // namespace gpushare::core
