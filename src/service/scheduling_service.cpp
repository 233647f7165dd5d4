#include "gpushare/service/scheduling_service.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <array>
#include <optional>
#include <string_view>
#include <tuple>

#include "gpushare/core/fit.h"
#include "gpushare/core/preemption.h"
#include "gpushare/kube/pod_dra_demand.h"
#include "gpushare/service/read_back.h"

namespace gpushare::service {
namespace {

std::string_view status_label(core::FitStatus status) {
  switch (status) {
    case core::FitStatus::kFits:
      return "fits";
    case core::FitStatus::kNoGpus:
      return "no_gpus";
    case core::FitStatus::kMisconfigured:
      return "misconfigured";
    case core::FitStatus::kAllGpusUnhealthy:
      return "all_gpus_unhealthy";
    case core::FitStatus::kModelNotAllowed:
      return "model_not_allowed";
    case core::FitStatus::kInsufficientCpu:
      return "insufficient_cpu";
    case core::FitStatus::kInsufficientMemory:
      return "insufficient_memory";
    case core::FitStatus::kExceedsGpuCapacity:
      return "exceeds_gpu_capacity";
    case core::FitStatus::kInsufficientGpuMemory:
      return "insufficient_gpu_memory";
    case core::FitStatus::kNotEnoughWholeGpus:
      return "not_enough_whole_gpus";
  }
  return "unknown";
}

constexpr std::string_view kUnknownNodeReason =
    "node is not known to the gpushare extender (not synced yet, or not a node of this cluster)";

// The offered node names as views into the request, without copying them.
std::vector<std::string_view> offered_views(const wire::ExtenderArgs& args) {
  std::vector<std::string_view> views;
  if (args.node_names) {
    views.assign(args.node_names->begin(), args.node_names->end());
  } else if (args.node_texts) {
    views.reserve(args.node_texts->size());
    for (const wire::NodeText& node : *args.node_texts) views.push_back(node.name);
  }
  return views;
}

// What kube-scheduler leaves to us: the pod's GPU demand without CPU and memory. kube-scheduler
// has already filtered on those (it is the authority on them: it also counts pods we never see,
// non-zero defaults and overhead), so filter, bind and preempt never reject a node for them;
// scoring alone uses them.
core::PodDemand gpu_demand_only(core::PodDemand demand) {
  demand.cpu_milli = 0;
  demand.memory = 0;
  return demand;
}

// The pod's pin resolved against the GPU models the model's nodes carry now (under the model's
// lock: the node set may change between requests).
void resolve_pin(core::PodDemand& demand, const kube::PodInfo& pod,
                 const core::ClusterModel& model) {
  if (pod.model_pin.pinned)
    demand.allowed_models = core::resolve_models(pod.model_pin, model.gpu_models());
}

constexpr std::size_t kFitStatusCount =
    static_cast<std::size_t>(core::FitStatus::kNotEnoughWholeGpus) + 1;

// Filter's reason texts, each distinct one formatted once per request.
class ReasonTexts {
 public:
  ReasonTexts(std::vector<std::string>& texts, std::string_view resource)
      : texts_(texts), resource_(resource) {}

  std::uint32_t unknown_node() {
    if (unknown_ < 0) unknown_ = add(std::string(kUnknownNodeReason));
    return static_cast<std::uint32_t>(unknown_);
  }

  std::uint32_t of(const core::FitResult& fit) {
    if (fit.status == core::FitStatus::kMisconfigured)
      return add(fit.reason(resource_));  // per node
    // reason() reads only these fields (and the status).
    const Key key{static_cast<int>(fit.status), fit.requested, fit.largest_free, fit.gpu_capacity,
                  fit.whole_gpus_free};
    for (const auto& [known, index] : seen_) {
      if (known == key) return index;
    }
    const std::uint32_t index = add(fit.reason(resource_));
    seen_.emplace_back(key, index);
    return index;
  }

 private:
  using Key = std::tuple<int, core::Units, core::Units, core::Units, int>;
  std::uint32_t add(std::string text) {
    texts_.push_back(std::move(text));
    return static_cast<std::uint32_t>(texts_.size() - 1);
  }
  std::vector<std::string>& texts_;
  std::string_view resource_;
  std::vector<std::pair<Key, std::uint32_t>> seen_;
  std::int64_t unknown_ = -1;
};

// The i-th offered name as a string: moved out of the arguments when the caller gave them up
// and they hold it as a string, else copied.
struct NameTaker {
  const std::vector<std::string_view>& offered;
  wire::ExtenderArgs* movable;

  std::string operator()(std::size_t i) const {
    if (movable != nullptr && movable->node_texts) return std::move((*movable->node_texts)[i].name);
    return std::string(offered[i]);
  }
};

// Fills a reply map from failures in offered order: sorted first, so each insertion lands at
// the end of the map rather than searching it. A name offered twice keeps one entry.
template <typename Failures>
void fill_sorted(std::map<std::string, std::string>& target, Failures& failures,
                 const std::vector<std::string>& reasons, const NameTaker& take) {
  std::stable_sort(failures.begin(), failures.end(),
                   [](const auto& a, const auto& b) { return a.node < b.node; });
  for (std::size_t i = 0; i < failures.size(); ++i) {
    if (i + 1 < failures.size() && failures[i + 1].node == failures[i].node) continue;  // last wins
    target.emplace_hint(target.end(), take(failures[i].index), reasons[failures[i].reason]);
  }
}

// Whether a pod of `owner_uid` needing `per_gpu` fits on the GPU `hold` keeps for it (the
// owner's own hold is room it may use; other holds on that GPU are not).
bool fits_held_gpu(const core::ClusterModel& model, const core::HoldBook& holds,
                   const core::ConsolidationHold& hold, std::string_view owner_uid,
                   core::Units per_gpu, std::int64_t now_ns) {
  const core::NodeState* node = model.find_node(hold.node);
  if (node == nullptr || hold.gpu < 0 || hold.gpu >= node->gpu_count()) return false;
  const core::GpuState& gpu = node->gpus()[static_cast<std::size_t>(hold.gpu)];
  const core::Units others = holds.held_against(hold.node, hold.gpu, owner_uid, now_ns);
  return gpu.healthy && gpu.free() >= others + per_gpu;
}

// A bind ended `hold`: its owner's pod `pod` is bound to `node` GPU `gpu`.
void log_hold_end(const core::ConsolidationHold& hold, const std::string& pod,
                  const std::string& node, int gpu) {
  const bool as_held = node == hold.node && gpu == hold.gpu;
  spdlog::info(
      "consolidation: hold of {} on node {} GPU {} for {}'s replacement of pod {} released: pod "
      "{} bound to node {} GPU {}{}",
      hold.memory, hold.node, hold.gpu, hold.owner, hold.evicted, pod, node, gpu,
      as_held ? " as held" : ", not the held GPU");
}

// The replacement's planned node gets the top score, every other node at most one less.
void prefer_held_node(const std::vector<std::string_view>& offered, std::string_view held_node,
                      std::vector<int>& scores) {
  bool offered_held = false;
  for (std::size_t i = 0; i < offered.size(); ++i) offered_held |= offered[i] == held_node;
  if (!offered_held) return;
  for (std::size_t i = 0; i < offered.size(); ++i)
    scores[i] = offered[i] == held_node ? core::kMaxExtenderScore
                                        : std::min(scores[i], core::kMaxExtenderScore - 1);
}

}  // namespace

SchedulingService::SchedulingService(ModelStore& store, PodBinder& binder,
                                     metrics::MetricRegistry& metrics, RejectionLog& rejections,
                                     ServiceConfig config)
    : store_(store),
      binder_(binder),
      metrics_(metrics),
      rejections_(rejections),
      config_(std::move(config)) {}

wire::FilterResult SchedulingService::filter(const wire::ExtenderArgs& args) {
  return filter_impl(args, nullptr);
}
wire::FilterResult SchedulingService::filter(wire::ExtenderArgs&& args) {
  return filter_impl(args, &args);
}

wire::FilterResult SchedulingService::filter_impl(const wire::ExtenderArgs& args,
                                                  wire::ExtenderArgs* movable) {
  wire::FilterResult result;
  core::PodDemand demand = gpu_demand_only(args.pod.demand());
  const std::vector<std::string_view> offered = offered_views(args);
  std::vector<char> passed(offered.size(), 1);

  // Rejections are gathered under the lock and turned into strings after it. Reason texts
  // repeat across nodes (they depend on a few numbers), so each distinct one is formatted once.
  struct Failure {
    std::string_view node;
    std::size_t index;     // in `offered`
    std::uint32_t reason;  // index into `reasons`
  };
  std::vector<Failure> failed;
  std::vector<Failure> unresolvable;
  std::vector<std::string> reasons;
  std::array<std::size_t, kFitStatusCount> rejected_by_status{};
  std::size_t unknown_nodes = 0;
  std::vector<std::string> models_if_unmatched;  // the cluster's models, when the pin fits none

  if (demand.wants_gpu()) {
    ReasonTexts texts(reasons, config_.names.memory);
    store_.read([&](const core::ClusterModel& model, const core::PlacementPolicy&,
                    const core::ReservationLedger&, const core::HoldBook& holds) {
      // Consolidation's holds: memory kept for another owner's replacement counts as used.
      const std::int64_t now = holds.empty() ? 0 : config_.now_ns();
      resolve_pin(demand, args.pod, model);
      if (demand.allowed_models.size() == 1 &&
          demand.allowed_models.front() == core::kNoModelMatches) {
        models_if_unmatched = model.gpu_models();
      }
      model.visit_nodes(offered, [&](std::size_t i, const core::NodeState* node) {
        if (node == nullptr) {
          passed[i] = 0;
          // Listed up to the budget; the rest are left out of the reply (see the header).
          if (unknown_nodes++ < kMaxUnknownNodesListed)
            unresolvable.push_back({offered[i], i, texts.unknown_node()});
          return;
        }
        const std::optional<core::NodeState> view =
            holds.empty() ? std::nullopt : holds.view_for(*node, args.pod.owner_uid(), now);
        const core::FitResult fit = core::check_fit(view ? *view : *node, demand);
        if (fit.fits()) return;
        passed[i] = 0;
        (fit.unresolvable() ? unresolvable : failed).push_back({offered[i], i, texts.of(fit)});
        ++rejected_by_status[static_cast<std::size_t>(fit.status)];
      });
    });
  }

  // Outside the lock: the pin's warning, metrics, the reply's maps, the rejection log.
  if (!models_if_unmatched.empty()) {
    if (auto warning =
            unmatched_pins_.check(args.pod, models_if_unmatched, config_.names.gpu_model_label)) {
      spdlog::warn("{}", *warning);
    }
  }
  // One counter update per kind, not per node (each takes the metric's lock).
  if (unknown_nodes > 0) metrics_.count_filter_rejection("unknown_node", unknown_nodes);
  if (unknown_nodes > kMaxUnknownNodesListed) note_unlisted("filter", args.pod, unknown_nodes);
  for (std::size_t status = 0; status < rejected_by_status.size(); ++status) {
    const std::string_view label = status_label(static_cast<core::FitStatus>(status));
    if (rejected_by_status[status] > 0)
      metrics_.count_filter_rejection(label, rejected_by_status[status]);
  }
  // From here on each rejected node's name is taken (moved, when movable) exactly once; its view
  // is not used after that. Survivors' names are only read through their views.
  const NameTaker take{offered, movable};
  fill_sorted(result.failed, failed, reasons, take);
  fill_sorted(result.failed_unresolvable, unresolvable, reasons, take);

  if (args.node_texts) {
    result.node_texts.emplace();
    result.node_source = args.node_source;
  }
  std::size_t survivors = 0;
  std::size_t survivor_bytes = 0;
  for (std::size_t i = 0; i < offered.size(); ++i) {
    if (!passed[i]) continue;
    ++survivors;
    survivor_bytes += offered[i].size();
  }
  result.node_names.reserve(survivors, survivor_bytes);
  if (result.node_texts) result.node_texts->reserve(survivors);
  for (std::size_t i = 0; i < offered.size(); ++i) {
    if (!passed[i]) continue;
    result.node_names.push_back(offered[i]);
    if (args.node_texts) result.node_texts->push_back((*args.node_texts)[i].json);
  }
  if (!result.failed.empty() || !result.failed_unresolvable.empty()) {
    const std::int64_t now = config_.now_ns();
    const std::string pod_key = args.pod.key();
    SPDLOG_DEBUG("filter {}: {} of {} nodes rejected", pod_key,
                 result.failed.size() + result.failed_unresolvable.size(), offered.size());
    // The log keeps only its newest entries: add just those, in the order of the reply
    // (FailedNodes by name, then FailedAndUnresolvableNodes by name).
    const std::size_t total = result.failed.size() + result.failed_unresolvable.size();
    std::size_t skip = total > rejections_.capacity() ? total - rejections_.capacity() : 0;
    const bool debug = spdlog::should_log(spdlog::level::debug);  // per-node lines: debug only
    for (const auto* failures : {&result.failed, &result.failed_unresolvable}) {
      for (const auto& [node, reason] : *failures) {
        if (debug) SPDLOG_DEBUG("filter {}: node {} rejected: {}", pod_key, node, reason);
        if (skip > 0) {
          --skip;
          continue;
        }
        rejections_.add({now, pod_key, node, reason});
      }
    }
  }
  // kube-scheduler 1.20 and older read FailedNodes only: a node listed just as unresolvable
  // would vanish from the pod's events there. Newer versions let FailedAndUnresolvableNodes
  // take precedence for a node in both maps, so listing it twice is safe.
  for (const auto& [node, reason] : result.failed_unresolvable) result.failed.emplace(node, reason);
  binder_.note_pod_seen(args.pod);
  return result;
}

wire::HostPriorityList SchedulingService::prioritize(const wire::ExtenderArgs& args) const {
  return prioritize_impl(args, nullptr);
}

wire::HostPriorityList SchedulingService::prioritize(wire::ExtenderArgs&& args) const {
  return prioritize_impl(args, &args);
}

wire::HostPriorityList SchedulingService::prioritize_impl(const wire::ExtenderArgs& args,
                                                          wire::ExtenderArgs* movable) const {
  core::PodDemand demand = args.pod.demand();
  const std::vector<std::string_view> offered = offered_views(args);
  std::vector<std::optional<double>> raw(offered.size());
  // 1: not a node of the model; kLeftOut: nor listed in the reply (past the budget).
  constexpr char kLeftOut = 2;
  std::vector<char> unknown(offered.size(), 0);
  std::string held_node;  // a consolidation hold's node for this pod's owner, where it fits
  std::optional<std::string> unresolved_claim;  // a DRA claim of the pod the model lacks
  // Every pod is scored, GPU or not: a second extender entry without managedResources sends
  // CPU-only pods here so that they can be steered off the CPU and memory GPU pods will need.
  store_.read([&](const core::ClusterModel& model, const core::PlacementPolicy& policy,
                  const core::ReservationLedger&, const core::HoldBook& holds) {
    if (!holds.empty() && demand.wants_gpu()) {
      const std::int64_t now = config_.now_ns();
      if (const core::ConsolidationHold* hold = holds.for_owner(args.pod.owner_uid(), now)) {
        if (fits_held_gpu(model, holds, *hold, args.pod.owner_uid(), demand.per_gpu, now))
          held_node = hold->node;
      }
    }
    // A pod with DRA claims: kube's allocator picks the devices, scored as it will pick them.
    if (!args.pod.resource_claims.empty()) {
      const std::vector<core::DraRequest> requests =
          kube::pending_dra_requests(model.dra(), args.pod);
      if (!requests.empty()) {
        core::Scorer::score_dra(model, policy, requests, args.pod.cpu_milli, args.pod.memory,
                                offered, raw, unknown);
        return;
      }
      unresolved_claim = kube::unresolved_dra_claim(model.dra(), args.pod);
    }
    resolve_pin(demand, args.pod, model);
    if (config_.score_mapping == core::ScoreMapping::kRank) {
      // Rank mapping tells apart only the best few distinct scores: the others may be bounds.
      scorer_.score_top(model, policy, demand, offered, raw, unknown, core::rank_levels_apart());
    } else {
      scorer_.score(model, policy, demand, offered, raw, unknown);
    }
  });
  std::vector<int> scores = core::map_scores(raw, config_.score_mapping);
  if (!held_node.empty()) prefer_held_node(offered, held_node, scores);
  // Unknown names past the budget are left out: kube-scheduler gives a host the extender does
  // not list no score from it, as it gives one it lists with 0.
  std::size_t unknown_count = 0;
  std::size_t listed = 0;  // hosts in the reply
  for (std::size_t i = 0; i < offered.size(); ++i) {
    if (unknown[i] && unknown_count++ >= kMaxUnknownNodesListed) {
      unknown[i] = kLeftOut;
    } else {
      ++listed;
    }
  }
  wire::HostPriorityList result;
  if (args.node_names && listed == offered.size()) {  // every name offered, as offered
    // (`offered` views the names: not read after they are taken.)
    std::vector<std::int64_t> listed_scores(scores.begin(), scores.end());
    result = movable != nullptr
                 ? wire::HostPriorityList(std::move(*movable->node_names), std::move(listed_scores))
                 : wire::HostPriorityList(*args.node_names, std::move(listed_scores));
  } else {
    std::size_t bytes = 0;  // the listed names' bytes
    for (std::size_t i = 0; i < offered.size(); ++i)
      bytes += unknown[i] != kLeftOut ? offered[i].size() : 0;
    result.reserve(listed, bytes);
    for (std::size_t i = 0; i < offered.size(); ++i) {
      if (unknown[i] != kLeftOut) result.push_back(offered[i], scores[i]);
    }
  }
  if (unknown_count > kMaxUnknownNodesListed) note_unlisted("prioritize", args.pod, unknown_count);
  if (unresolved_claim) {
    if (const auto admitted = unresolved_claims_log_.admit(); admitted.log) {
      spdlog::warn(
          "prioritize {}: {} is not known to the extender (not listed yet, or --dra off); the pod "
          "is scored as a pod without GPU memory{}",
          args.pod.key(), *unresolved_claim, held_back_note(admitted));
    }
  }
  return result;
}

void SchedulingService::note_unlisted(std::string_view verb, const kube::PodInfo& pod,
                                      std::size_t unknown) const {
  const logging::LogThrottle::Admission admitted = unknown_nodes_log_.admit();
  if (!admitted.log) return;
  spdlog::warn(
      "{} {}: {} offered nodes are not known to the extender; {} are listed in the reply, the "
      "rest left out{}",
      verb, pod.key(), unknown, kMaxUnknownNodesListed, held_back_note(admitted));
}

BindReply SchedulingService::bind(const wire::BindingArgs& args) {
  const std::string key = args.pod_namespace + "/" + args.pod_name;
  const std::optional<kube::PodInfo> found = binder_.find_pod(args.pod_namespace, args.pod_name);
  if (!found) return fail_bind(key, args, {"pod_not_found", fmt::format("pod {} not found", key)});
  const kube::PodInfo& pod = *found;
  if (auto refusal = check_unbound(args, pod, key)) return fail_bind(key, args, *refusal);

  core::PodDemand demand = pod.demand();
  settle_unresolved(pod);

  const std::int64_t assume_time = config_.now_ns();
  GpuReservation reserved;
  if (demand.wants_gpu()) {
    reserved = reserve_gpu(args, pod, key, demand, assume_time);
    if (reserved.refusal) return fail_bind(key, args, *reserved.refusal);
  }

  const auto annotations = demand.wants_gpu()
                               ? kube::bind_annotations(reserved.gpu, demand.per_gpu,
                                                        reserved.device_memory, assume_time)
                               : std::map<std::string, std::string>{};
  BindCall call = call_binder(pod, args, key, annotations, demand.wants_gpu(), assume_time);
  const BindOutcome& outcome = call.outcome;
  const double millis = static_cast<double>(config_.now_ns() - assume_time) / 1e6;

  if (!outcome.ok && demand.wants_gpu() && outcome.outcome_unknown) {
    if (auto reply = settle_unanswered(args, pod, key, call, assume_time)) return *reply;
  } else if (!outcome.ok && demand.wants_gpu()) {
    const core::ReservationOutcome released = store_.write(
        [&](core::ClusterModel& model, core::PlacementPolicy&, core::ReservationLedger& ledger) {
          return ledger.bind_rejected(model, pod.uid, assume_time);
        });
    metrics_.count_reservation_end(released, "bind_call");
  }
  if (!outcome.ok) {
    return fail_bind(key, args,
                     {outcome.outcome_unknown ? "api_unknown" : "api_error",
                      fmt::format("binding pod {} to node {}: {}", key, args.node, outcome.error)});
  }
  if (demand.wants_gpu()) {
    std::optional<core::ConsolidationHold> ended;
    const core::ReservationOutcome confirmed =
        store_.write([&](core::ClusterModel& model, core::PlacementPolicy&,
                         core::ReservationLedger& ledger, core::HoldBook& holds) {
          // The replacement is bound (here or elsewhere): its allocation now counts.
          if (!holds.empty() && !pod.owner_uid().empty()) ended = holds.release(pod.owner_uid());
          return binder_.confirms_asynchronously()
                     ? ledger.bind_accepted(model, pod.uid, assume_time, config_.now_ns())
                     : ledger.bind_final(model, pod.uid, assume_time);
        });
    metrics_.count_reservation_end(confirmed, "bind_call");
    if (ended) log_hold_end(*ended, key, args.node, reserved.gpu);
  }
  spdlog::info("bound pod {} to node {} gpu {} request {} {} in {:.2f} ms", key, args.node,
               reserved.gpu, demand.per_gpu, config_.names.memory, millis);
  metrics_.count_bind("success");
  return BindReply{"", reserved.gpu, "success"};
}

BindReply SchedulingService::fail_bind(const std::string& key, const wire::BindingArgs& args,
                                       BindRefusal refusal) {
  if (const auto admitted = bind_failure_log_.admit(); admitted.log) {
    spdlog::warn("bind {} to {} failed: {}{}", key, args.node, refusal.error,
                 held_back_note(admitted));
  }
  metrics_.count_bind(refusal.outcome);
  return BindReply{std::move(refusal.error), -1, std::move(refusal.outcome)};
}

std::optional<SchedulingService::BindRefusal> SchedulingService::check_unbound(
    const wire::BindingArgs& args, const kube::PodInfo& pod, const std::string& key) const {
  if (!args.pod_uid.empty() && !pod.uid.empty() && pod.uid != args.pod_uid) {
    return BindRefusal{"uid_mismatch",
                       fmt::format("pod {} has UID {}, bind was for UID {} (pod re-created?)", key,
                                   pod.uid, args.pod_uid)};
  }
  if (!pod.node_name.empty()) {
    return BindRefusal{"already_bound",
                       fmt::format("pod {} is already bound to node {}", key, pod.node_name)};
  }
  return std::nullopt;
}

// A retry for a pod whose last bind had no answer is judged on the truth: read it back first.
void SchedulingService::settle_unresolved(const kube::PodInfo& pod) {
  const std::optional<std::int64_t> unresolved =
      store_.read([&](const core::ClusterModel&, const core::PlacementPolicy&,
                      const core::ReservationLedger& ledger) {
        const core::Reservation* held = ledger.find(pod.uid);
        return held != nullptr && held->state == core::ReservationState::kUnresolved
                   ? std::optional<std::int64_t>(held->reserved_ns)
                   : std::nullopt;
      });
  if (unresolved) settle_by_read_back(pod.namespace_name, pod.name, pod.uid, *unresolved);
}

// Chooses and reserves in one critical section: the next filter or bind sees the reservation.
SchedulingService::GpuReservation SchedulingService::reserve_gpu(const wire::BindingArgs& args,
                                                                 const kube::PodInfo& pod,
                                                                 const std::string& key,
                                                                 core::PodDemand& demand,
                                                                 std::int64_t assume_time) {
  GpuReservation reserved;
  store_.write([&](core::ClusterModel& model, core::PlacementPolicy& policy,
                   core::ReservationLedger& ledger, core::HoldBook& holds) {
    const core::NodeState* node = model.find_node(args.node);
    if (node == nullptr) {
      reserved.refusal = {"unknown_node",
                          fmt::format("node {}: {}", args.node, kUnknownNodeReason)};
      return;
    }
    if (const core::PodAllocation* existing = model.find_pod(pod.uid)) {
      const core::Reservation* reservation = ledger.find(pod.uid);
      reserved.refusal = {
          "already_allocated",
          fmt::format("pod {} already holds {} on node {}{}", key, existing->total(),
                      existing->node,
                      reservation == nullptr
                          ? ""
                          : fmt::format(" (reservation {})", core::to_string(reservation->state)))};
      return;
    }
    resolve_pin(demand, pod, model);
    // Consolidation's holds: other owners' held memory counts as used; the owner's replacement
    // goes on its held GPU when it fits there.
    const std::optional<core::NodeState> view =
        holds.empty() ? std::nullopt : holds.view_for(*node, pod.owner_uid(), assume_time);
    const core::NodeState& usable = view ? *view : *node;
    std::optional<core::Placement> placement;
    if (const core::ConsolidationHold* hold = holds.for_owner(pod.owner_uid(), assume_time);
        hold != nullptr && hold->node == args.node &&
        core::check_fit(usable, gpu_demand_only(demand)).fits() &&
        fits_held_gpu(model, holds, *hold, pod.owner_uid(), demand.per_gpu, assume_time)) {
      placement = core::Placement{0, {hold->gpu}};
    }
    if (!placement) placement = policy.place(usable, demand);
    if (!placement) placement = policy.place(usable, gpu_demand_only(demand));  // see filter
    if (!placement || placement->gpus.size() != 1) {
      reserved.refusal = {
          "no_fit",
          fmt::format(
              "node {}: {}", args.node,
              core::check_fit(usable, gpu_demand_only(demand)).reason(config_.names.memory))};
      return;
    }
    reserved.gpu = placement->gpus.front();
    reserved.device_memory = node->spec().memory_per_gpu;
    core::PodAllocation allocation;
    allocation.uid = pod.uid;
    allocation.namespace_name = pod.namespace_name;
    allocation.name = pod.name;
    allocation.node = args.node;
    allocation.gpus = {reserved.gpu};
    allocation.per_gpu = demand.per_gpu;
    allocation.cpu_milli = demand.cpu_milli;
    allocation.memory = demand.memory;
    allocation.model_pin = pod.model_pin;
    ledger.reserve(model, std::move(allocation), assume_time);
    policy.observe(demand);
    policy.observe_cluster(model.nodes());
  });
  return reserved;
}

SchedulingService::BindCall SchedulingService::call_binder(
    const kube::PodInfo& pod, const wire::BindingArgs& args, const std::string& key,
    const std::map<std::string, std::string>& annotations, bool wants_gpu,
    std::int64_t assume_time) {
  BindCall call{binder_.bind(pod, args.node, annotations), assume_time};
  BindOutcome& outcome = call.outcome;
  if (!outcome.ok && wants_gpu && outcome.outcome_unknown) {
    // No answer: the call may still be applied, so a read-back showing the pod unbound proves
    // nothing yet. Send the same binding again: its answer is final either way (bound now,
    // already bound by the first call, or the pod is gone), and a duplicate is refused.
    spdlog::warn("bind {} to {}: {}; sending the binding again", key, args.node, outcome.error);
    const std::int64_t resent_at = config_.now_ns();
    BindOutcome again = binder_.bind(pod, args.node, annotations);
    if (again.ok) {
      outcome = std::move(again);
    } else {
      if (again.outcome_unknown) call.unanswered_call_ns = resent_at;
      outcome.error = fmt::format("{}; sent again: {}", outcome.error, again.error);
    }
  }
  return call;
}

// Still no clear answer: read the pod back now instead of holding the memory until some later
// event says. A reply when the read-back decided the bind, nothing when it failed undecided.
std::optional<BindReply> SchedulingService::settle_unanswered(const wire::BindingArgs& args,
                                                              const kube::PodInfo& pod,
                                                              const std::string& key,
                                                              const BindCall& call,
                                                              std::int64_t assume_time) {
  store_.write(
      [&](core::ClusterModel& model, core::PlacementPolicy&, core::ReservationLedger& ledger) {
        ledger.bind_unknown(model, pod.uid, assume_time, call.unanswered_call_ns, config_.now_ns());
      });
  core::ReservationOutcome settled =
      settle_by_read_back(pod.namespace_name, pod.name, pod.uid, assume_time);
  // kNone: the sync's reservation check settled it first (bind_unknown makes it due at once).
  // The model then tells which way: held and not assumed is confirmed, absent is released.
  struct Held {
    bool present = false;
    bool assumed = false;
    std::optional<int> gpu_on_node;
  };
  const Held held_now =
      store_.read([&](const core::ClusterModel& model, const core::PlacementPolicy&) {
        Held result;
        const core::PodAllocation* held = model.find_pod(pod.uid);
        if (held == nullptr) return result;
        result.present = true;
        result.assumed = held->assumed;
        if (held->node == args.node)
          result.gpu_on_node = held->gpus.empty() ? -1 : held->gpus.front();
        return result;
      });
  if (settled == core::ReservationOutcome::kNone) {
    if (!held_now.present)
      settled = core::ReservationOutcome::kReleased;
    else if (!held_now.assumed)
      settled = core::ReservationOutcome::kConfirmed;
  }
  if (settled == core::ReservationOutcome::kConfirmed) {
    const std::optional<int> bound_gpu = held_now.gpu_on_node;
    if (bound_gpu) {
      spdlog::info(
          "bound pod {} to node {} gpu {}: the bind call had no answer ({}), the pod read back "
          "is bound",
          key, args.node, *bound_gpu, call.outcome.error);
      metrics_.count_bind("success");
      return BindReply{"", *bound_gpu, "success"};
    }
  }
  if (settled == core::ReservationOutcome::kReleased) {
    return fail_bind(
        key, args,
        {"api_error", fmt::format("binding pod {} to node {}: {}; the pod read back is not "
                                  "bound, so its reservation is released",
                                  key, args.node, call.outcome.error)});
  }
  return std::nullopt;
}

core::ReservationOutcome SchedulingService::settle_by_read_back(std::string_view namespace_name,
                                                                std::string_view name,
                                                                std::string_view uid,
                                                                std::int64_t token) {
  const std::int64_t read_sent = config_.now_ns();
  const PodBinder::ReadBack read = binder_.read_back(namespace_name, name);
  const Settlement settled = store_.write(
      [&](core::ClusterModel& model, core::PlacementPolicy&, core::ReservationLedger& ledger) {
        return apply_read_back(model, ledger, read, uid, token, read_sent, config_.now_ns());
      });
  log_settlement(settled);
  metrics_.count_reservation_end(settled.outcome, "read_back");
  return settled.outcome;
}

std::map<std::string, wire::MetaVictims> SchedulingService::preempt(
    const wire::PreemptionArgs& args) const {
  std::map<std::string, wire::MetaVictims> result;
  core::PodDemand demand = gpu_demand_only(args.pod.demand());
  store_.read([&](const core::ClusterModel& model, const core::PlacementPolicy&) {
    resolve_pin(demand, args.pod, model);
    for (const auto& [node_name, offered] : args.victims) {
      const core::NodeState* node = model.find_node(node_name);
      if (node == nullptr) continue;
      // What each victim holds: the model knows best; else what its object says.
      std::vector<core::PreemptionVictim> victims;
      victims.reserve(offered.pod_uids.size());
      for (const auto& uid : offered.pod_uids) {
        core::PreemptionVictim& victim =
            victims.emplace_back(core::PreemptionVictim{uid, std::nullopt});
        if (const core::PodAllocation* known = model.find_pod(uid)) {
          victim.allocation = *known;
        } else if (auto it = args.victim_pods.find(uid); it != args.victim_pods.end()) {
          victim.allocation = kube::allocation_of(it->second);
        }
      }
      auto chosen = core::choose_victims(*node, demand, victims);
      if (!chosen) continue;
      result[node_name] = wire::MetaVictims{std::move(*chosen), offered.num_pdb_violations};
    }
  });
  return result;
}

}  // namespace gpushare::service
