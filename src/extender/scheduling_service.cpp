#include "gpushare/extender/scheduling_service.h"

#include <algorithm>
#include <optional>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "gpushare/core/fit.h"

namespace gpushare::extender {
namespace {

std::string_view status_label(core::FitStatus status) {
  switch (status) {
    case core::FitStatus::kFits: return "fits";
    case core::FitStatus::kNoGpus: return "no_gpus";
    case core::FitStatus::kMisconfigured: return "misconfigured";
    case core::FitStatus::kAllGpusUnhealthy: return "all_gpus_unhealthy";
    case core::FitStatus::kModelNotAllowed: return "model_not_allowed";
    case core::FitStatus::kInsufficientCpu: return "insufficient_cpu";
    case core::FitStatus::kInsufficientMemory: return "insufficient_memory";
    case core::FitStatus::kExceedsGpuCapacity: return "exceeds_gpu_capacity";
    case core::FitStatus::kInsufficientGpuMemory: return "insufficient_gpu_memory";
    case core::FitStatus::kNotEnoughWholeGpus: return "not_enough_whole_gpus";
  }
  return "unknown";
}

constexpr std::string_view kUnknownNodeReason =
    "node is not known to the gpushare extender (not synced yet, or not a node of this cluster)";

// A victim's hold on the node's GPU memory, as far as the model or the victim object tells.
struct VictimHold {
  std::string uid;
  int gpu = -1;  // -1: held on the node without an index
  core::Units amount = 0;
};

}  // namespace

SchedulingService::SchedulingService(ModelStore& store, PodBinder& binder, Metrics& metrics,
                                     RejectionLog& rejections, ServiceConfig config)
    : store_(store),
      binder_(binder),
      metrics_(metrics),
      rejections_(rejections),
      config_(std::move(config)) {}

FilterResult SchedulingService::filter(const ExtenderArgs& args) {
  FilterResult result;
  const core::PodDemand demand = args.pod.demand();
  const std::vector<std::string> offered = args.offered_names();
  std::vector<bool> passed(offered.size(), false);

  if (!demand.wants_gpu()) {
    // Not ours to judge: every offered node passes.
    std::fill(passed.begin(), passed.end(), true);
  } else {
    store_.read([&](const core::ClusterModel& model, const core::PlacementPolicy&) {
      for (std::size_t i = 0; i < offered.size(); ++i) {
        const core::NodeState* node = model.find_node(offered[i]);
        if (node == nullptr) {
          result.failed_unresolvable[offered[i]] = std::string(kUnknownNodeReason);
          metrics_.count_filter_rejection("unknown_node");
          continue;
        }
        const core::FitResult fit = core::check_fit(*node, demand);
        if (fit.fits()) {
          passed[i] = true;
          continue;
        }
        auto& target = fit.unresolvable() ? result.failed_unresolvable : result.failed;
        target[offered[i]] = fit.reason(config_.names.memory);
        metrics_.count_filter_rejection(status_label(fit.status));
      }
    });
  }

  if (args.nodes) result.nodes.emplace();
  for (std::size_t i = 0; i < offered.size(); ++i) {
    if (!passed[i]) continue;
    result.node_names.push_back(offered[i]);
    if (args.nodes) result.nodes->push_back((*args.nodes)[i]);
  }
  if (!result.failed.empty() || !result.failed_unresolvable.empty()) {
    const std::int64_t now = config_.now_ns();
    for (const auto* failures : {&result.failed, &result.failed_unresolvable}) {
      for (const auto& [node, reason] : *failures) {
        SPDLOG_DEBUG("filter {}: node {} rejected: {}", args.pod.key(), node, reason);
        rejections_.add({now, args.pod.key(), node, reason});
      }
    }
  }
  binder_.note_pod_seen(args.pod);
  return result;
}

std::vector<HostPriority> SchedulingService::prioritize(const ExtenderArgs& args) const {
  const core::PodDemand demand = args.pod.demand();
  const std::vector<std::string> offered = args.offered_names();
  std::vector<std::optional<double>> raw(offered.size());
  if (demand.wants_gpu()) {
    store_.read([&](const core::ClusterModel& model, const core::PlacementPolicy& policy) {
      for (std::size_t i = 0; i < offered.size(); ++i) {
        if (const core::NodeState* node = model.find_node(offered[i])) {
          if (auto placement = policy.place(*node, demand)) raw[i] = placement->score;
        }
      }
    });
  }
  const std::vector<int> scores = core::normalize_scores(raw);
  std::vector<HostPriority> result;
  result.reserve(offered.size());
  for (std::size_t i = 0; i < offered.size(); ++i) result.push_back({offered[i], scores[i]});
  return result;
}

BindReply SchedulingService::bind(const BindingArgs& args) {
  const std::string key = args.pod_namespace + "/" + args.pod_name;
  auto fail = [&](std::string outcome, std::string error) {
    spdlog::warn("bind {} to {} failed: {}", key, args.node, error);
    metrics_.count_bind(outcome);
    return BindReply{std::move(error), -1, std::move(outcome)};
  };

  const std::optional<kube::PodInfo> found = binder_.find_pod(args.pod_namespace, args.pod_name);
  if (!found) return fail("pod_not_found", fmt::format("pod {} not found", key));
  const kube::PodInfo& pod = *found;
  if (!args.pod_uid.empty() && !pod.uid.empty() && pod.uid != args.pod_uid) {
    return fail("uid_mismatch",
                fmt::format("pod {} has UID {}, bind was for UID {} (pod re-created?)", key, pod.uid,
                            args.pod_uid));
  }
  if (!pod.node_name.empty()) {
    return fail("already_bound", fmt::format("pod {} is already bound to node {}", key, pod.node_name));
  }

  const core::PodDemand demand = pod.demand();
  const std::int64_t assume_time = config_.now_ns();
  int gpu = -1;
  core::Units device_memory = 0;
  if (demand.wants_gpu()) {
    // Choose and reserve in one critical section: the next filter or bind sees the reservation.
    std::string error;
    std::string outcome;
    store_.write([&](core::ClusterModel& model, core::PlacementPolicy& policy) {
      const core::NodeState* node = model.find_node(args.node);
      if (node == nullptr) {
        outcome = "unknown_node";
        error = fmt::format("node {}: {}", args.node, kUnknownNodeReason);
        return;
      }
      if (const core::PodAllocation* existing = model.find_pod(pod.uid)) {
        outcome = "already_allocated";
        error = fmt::format("pod {} already holds {} on node {}{}", key, existing->total(),
                            existing->node, existing->assumed ? " (bind in progress)" : "");
        return;
      }
      const auto placement = policy.place(*node, demand);
      if (!placement || placement->gpus.size() != 1) {
        outcome = "no_fit";
        error = fmt::format("node {}: {}", args.node,
                            core::check_fit(*node, demand).reason(config_.names.memory));
        return;
      }
      gpu = placement->gpus.front();
      device_memory = node->spec().memory_per_gpu;
      core::PodAllocation allocation;
      allocation.uid = pod.uid;
      allocation.namespace_name = pod.namespace_name;
      allocation.name = pod.name;
      allocation.node = args.node;
      allocation.gpus = {gpu};
      allocation.per_gpu = demand.per_gpu;
      allocation.assumed = true;
      allocation.assume_time_ns = assume_time;
      model.add_pod(std::move(allocation));
      policy.observe(demand);
    });
    if (!error.empty()) return fail(outcome, error);
  }

  const auto annotations =
      demand.wants_gpu()
          ? kube::bind_annotations(gpu, demand.per_gpu, device_memory, assume_time)
          : std::map<std::string, std::string>{};
  const BindOutcome outcome = binder_.bind(pod, args.node, annotations);
  const double millis = static_cast<double>(config_.now_ns() - assume_time) / 1e6;

  if (!outcome.ok) {
    if (demand.wants_gpu() && !outcome.outcome_unknown) {
      // Release our reservation, but only if it is still ours (a watch may have replaced it).
      store_.write([&](core::ClusterModel& model, core::PlacementPolicy&) {
        const core::PodAllocation* held = model.find_pod(pod.uid);
        if (held && held->assumed && held->assume_time_ns == assume_time) model.remove_pod(pod.uid);
      });
    }
    return fail(outcome.outcome_unknown ? "api_unknown" : "api_error",
                fmt::format("binding pod {} to node {}: {}", key, args.node, outcome.error));
  }
  if (demand.wants_gpu() && !binder_.confirms_asynchronously()) {
    store_.write([&](core::ClusterModel& model, core::PlacementPolicy&) { model.confirm(pod.uid); });
  }
  spdlog::info("bound pod {} to node {} gpu {} request {} {} in {:.2f} ms", key, args.node, gpu,
               demand.per_gpu, config_.names.memory, millis);
  metrics_.count_bind("success");
  return BindReply{"", gpu, "success"};
}

std::map<std::string, MetaVictims> SchedulingService::preempt(const PreemptionArgs& args) const {
  std::map<std::string, MetaVictims> result;
  const core::PodDemand demand = args.pod.demand();
  store_.read([&](const core::ClusterModel& model, const core::PlacementPolicy&) {
    for (const auto& [node_name, victims] : args.victims) {
      const core::NodeState* node = model.find_node(node_name);
      if (node == nullptr) continue;
      if (!demand.wants_gpu()) {
        result[node_name] = victims;
        continue;
      }
      // Split the victims into those holding GPU memory on this node and the rest, which
      // kube-scheduler chose for other resources and which therefore stay victims.
      MetaVictims chosen;
      chosen.num_pdb_violations = victims.num_pdb_violations;
      std::vector<VictimHold> holds;
      for (const auto& uid : victims.pod_uids) {
        std::optional<core::PodAllocation> allocation;
        if (const core::PodAllocation* known = model.find_pod(uid)) {
          allocation = *known;
        } else if (auto it = args.victim_pods.find(uid); it != args.victim_pods.end()) {
          allocation = kube::allocation_of(it->second);
        }
        if (!allocation || allocation->node != node_name || allocation->total() == 0) {
          chosen.pod_uids.push_back(uid);
          continue;
        }
        holds.push_back({uid, allocation->gpus.empty() ? -1 : allocation->gpus.front(),
                         allocation->per_gpu});
      }
      // Fewest GPU victims that make one GPU fit: try each GPU, evicting its largest first.
      std::optional<std::vector<std::string>> best;
      core::Units best_evicted = 0;
      auto consider = [&](int gpu) {
        core::NodeState trial = *node;
        std::vector<std::string> evicted;
        core::Units evicted_amount = 0;
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
          if (gpu < 0) return core::check_fit(trial, demand).fits();
          const auto& state = trial.gpus()[static_cast<std::size_t>(gpu)];
          return state.healthy && state.free() >= demand.per_gpu && trial.total_free() >= demand.per_gpu;
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
      for (int gpu = 0; gpu < node->gpu_count(); ++gpu) consider(gpu);
      if (!best) continue;  // evicting every victim still leaves no single GPU that fits
      chosen.pod_uids.insert(chosen.pod_uids.end(), best->begin(), best->end());
      result[node_name] = std::move(chosen);
    }
  });
  return result;
}

}  // namespace gpushare::extender
