#include "gpushare/consolidation/consolidator.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <ctime>
#include <set>

#include "gpushare/apiclient/query.h"
#include "gpushare/core/model_pin.h"

namespace gpushare::consolidation {
namespace {

constexpr std::string_view kEventReason = "GPUConsolidation";

// RFC 3339 "2026-11-28T06:30:00Z" (fraction and offset ignored) as Unix seconds; nullopt if not.
std::optional<double> unix_seconds(const std::string& text) {
  std::tm tm{};
  int year = 0;
  if (std::sscanf(text.c_str(), "%4d-%2d-%2dT%2d:%2d:%2d", &year, &tm.tm_mon, &tm.tm_mday,
                  &tm.tm_hour, &tm.tm_min, &tm.tm_sec) != 6) {
    return std::nullopt;
  }
  tm.tm_year = year - 1900;
  tm.tm_mon -= 1;
  return static_cast<double>(timegm(&tm));
}

std::string rfc3339(double unix) {
  const auto seconds = static_cast<std::time_t>(unix);
  std::tm tm{};
  gmtime_r(&seconds, &tm);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return text;
}

Json place(const std::string& node, int gpu) {
  return {{"node", node}, {"gpu", gpu}};
}

}  // namespace

std::string_view to_string(Mode mode) {
  switch (mode) {
    case Mode::kOff:
      return "off";
    case Mode::kPlan:
      return "plan";
    case Mode::kEvict:
      return "evict";
  }
  return "off";
}

std::optional<Mode> mode_named(std::string_view name) {
  for (Mode mode : {Mode::kOff, Mode::kPlan, Mode::kEvict}) {
    if (to_string(mode) == name) return mode;
  }
  return std::nullopt;
}

struct Consolidator::Snapshot {
  MobilityTable table;
  std::string waiting;  // why no move starts now ("" = none)
  std::optional<core::ConsolidationPlan> plan;
};

Consolidator::Consolidator(apiclient::ApiClient& client, service::ModelStore& store,
                           metrics::MetricRegistry& metrics, ConsolidatorOptions options)
    : client_(client),
      store_(store),
      metrics_(metrics),
      options_(std::move(options)),
      budget_(options_.max_moves_per_hour) {
  report_ = {{"mode", to_string(options_.mode)}, {"plan", nullptr}, {"error", "not planned yet"}};
}

Consolidator::~Consolidator() {
  stop();
}

void Consolidator::start() {
  thread_ = std::jthread([this](std::stop_token stop) { run(stop); });
}

void Consolidator::stop() {
  if (thread_.joinable()) {
    thread_.request_stop();
    {
      std::lock_guard lock(mutex_);
      wake_.notify_all();
    }
    thread_.join();
  }
  // This instance stops acting: its hold, which only its verbs honour, goes too.
  std::lock_guard round(round_mutex_);
  if (active_) end_hold(*active_, "released", "consolidation stopped");
  active_.reset();
}

void Consolidator::run(std::stop_token stop) {
  while (!stop.stop_requested()) {
    run_once();
    bool in_flight = false;
    {
      std::lock_guard round(round_mutex_);
      in_flight = active_.has_value();
    }
    std::unique_lock lock(mutex_);
    wake_.wait_for(lock, stop, in_flight ? options_.poll : options_.interval, [] { return false; });
  }
}

std::string Consolidator::report() const {
  Json report;
  {
    std::lock_guard lock(mutex_);
    report = report_;
  }
  // The holds as they are now: a bind may have ended one since the round.
  report["holds"] = holds_json(options_.now());
  return report.dump(-1, ' ', false, Json::error_handler_t::replace);
}

Json Consolidator::holds_json(double now) const {
  const auto now_ns = static_cast<std::int64_t>(now * 1e9);
  return store_.read([&](const core::ClusterModel&, const core::PlacementPolicy&,
                         const core::ReservationLedger&, const core::HoldBook& holds) {
    Json list = Json::array();
    for (const auto& [owner_uid, hold] : holds.all()) {
      if (!hold.in_force(now_ns)) continue;
      list.push_back({{"node", hold.node},
                      {"gpu", hold.gpu},
                      {"memory", hold.memory},
                      {"owner", hold.owner},
                      {"ownerUid", owner_uid},
                      {"replacing", hold.evicted},
                      {"expiresAt", rfc3339(static_cast<double>(hold.expires_ns) / 1e9)}});
    }
    return list;
  });
}

std::string Consolidator::place_hold(ActiveMove& active, double now) {
  const core::ConsolidationMove& move = active.move;
  core::ConsolidationHold hold;
  hold.node = move.to_node;
  hold.gpu = move.to_gpu;
  hold.memory = move.amount;
  hold.owner_uid = active.owner_uid;
  hold.owner = active.owner;
  hold.evicted = active.namespace_name + "/" + move.pod_name;
  hold.evicted_uid = move.pod_uid;
  hold.created_ns = static_cast<std::int64_t>(now * 1e9);
  hold.expires_ns =
      hold.created_ns +
      std::chrono::duration_cast<std::chrono::nanoseconds>(options_.replacement_timeout).count();
  const std::int64_t now_ns = hold.created_ns;
  std::string refused;
  std::size_t in_force = 0;
  store_.write([&](core::ClusterModel& model, core::PlacementPolicy&, core::ReservationLedger&,
                   core::HoldBook& holds) {
    refused = holds.place(model, hold, now_ns);
    in_force = holds.size();
  });
  if (!refused.empty()) return refused;
  active.held = true;
  metrics_.count_hold("created");
  metrics_.set_holds(static_cast<int>(in_force));
  spdlog::info(
      "consolidation: holding {} on node {} GPU {} for {}'s replacement of pod {} until {}",
      hold.memory, hold.node, hold.gpu, hold.owner, hold.evicted,
      rfc3339(static_cast<double>(hold.expires_ns) / 1e9));
  return {};
}

void Consolidator::end_hold(ActiveMove& active, std::string_view event, std::string_view why) {
  if (!active.held) return;
  active.held = false;
  std::size_t in_force = 0;
  store_.write([&](core::ClusterModel&, core::PlacementPolicy&, core::ReservationLedger&,
                   core::HoldBook& holds) {
    holds.release(active.owner_uid);  // gone already when the replacement's bind ended it
    in_force = holds.size();
  });
  metrics_.count_hold(event);
  metrics_.set_holds(static_cast<int>(in_force));
  spdlog::info("consolidation: hold on node {} GPU {} for {}'s replacement of pod {}/{} {}: {}",
               active.move.to_node, active.move.to_gpu, active.owner, active.namespace_name,
               active.move.pod_name, event, why);
}

std::optional<Consolidator::Snapshot> Consolidator::read_cluster(std::string& error) {
  // The opted-in pods: by label everywhere, and every pod of the listed namespaces.
  std::map<std::string, Json> pods;
  auto add_pods = [&](const std::string& path, apiclient::Query query) {
    apiclient::RequestOptions request;
    request.query = std::move(query);
    auto listed = client_.get(path, request);
    if (!listed) {
      error = fmt::format("cannot list pods ({}): {}", path, listed.error().describe());
      return false;
    }
    if (listed->contains("items") && listed.value()["items"].is_array()) {
      for (Json& pod : listed.value()["items"]) {
        const std::string uid = pod.contains("metadata") && pod["metadata"].is_object()
                                    ? pod["metadata"].value("uid", "")
                                    : "";
        if (!uid.empty()) pods[uid] = std::move(pod);
      }
    }
    return true;
  };
  if (!add_pods("/api/v1/pods", {{"labelSelector", std::string(kOptInLabel) + "=true"}}))
    return std::nullopt;
  for (const std::string& ns : options_.opt_in.namespaces) {
    if (!add_pods(apiclient::namespaced_path("/api/v1", ns, "pods"), {})) return std::nullopt;
  }
  auto listed_budgets = client_.get("/apis/policy/v1/poddisruptionbudgets");
  if (!listed_budgets) {
    error = fmt::format(
        "cannot list PodDisruptionBudgets (the extender's ClusterRole needs "
        "list on poddisruptionbudgets.policy): {}",
        listed_budgets.error().describe());
    return std::nullopt;
  }
  std::vector<DisruptionBudget> budgets;
  if (listed_budgets->contains("items") && listed_budgets.value()["items"].is_array()) {
    for (const Json& item : listed_budgets.value()["items"]) {
      if (auto budget = disruption_budget(item)) budgets.push_back(std::move(*budget));
    }
  }
  std::vector<PodFacts> facts;
  for (const auto& [uid, pod] : pods) {
    if (auto read = pod_facts(pod, options_.opt_in)) facts.push_back(std::move(*read));
  }
  Snapshot snapshot;
  snapshot.table = mobility_table(facts, budgets);
  const double now = options_.now();
  for (const PodFacts& pod : facts) {
    if (!pod.opted_in || pod.owner_uid.empty()) continue;
    if (pod.terminating) {
      snapshot.waiting = fmt::format("pod {} is being deleted", pod.key());
      break;
    }
    const auto created = unix_seconds(pod.created);
    const bool young =
        created &&
        now - *created < std::chrono::duration<double>(options_.replacement_timeout).count();
    if (!pod.bound && young && pod.phase != "Succeeded" && pod.phase != "Failed") {
      snapshot.waiting = fmt::format("pod {} waits to be scheduled", pod.key());
      break;
    }
  }
  return snapshot;
}

void Consolidator::run_once() {
  std::lock_guard round(round_mutex_);
  const double now = options_.now();
  std::string error;
  if (options_.not_ready) error = options_.not_ready();
  if (!error.empty()) {
    std::lock_guard lock(mutex_);
    report_["error"] = fmt::format("not planning: {}", error);
    return;
  }
  std::optional<Snapshot> snapshot = read_cluster(error);
  if (!snapshot) {
    spdlog::warn("consolidation: {}", error);
    std::lock_guard lock(mutex_);
    report_["error"] = error;
    report_["plan"] = nullptr;
    metrics_.set_plan(0, 0);
    return;
  }
  core::ConsolidationLimits limits;
  // The whole plan is reported; the hourly budget gates each eviction (step).
  limits.max_moves = options_.max_moves_per_plan;
  limits.max_moves_per_gpu_freed = options_.max_moves_per_gpu_freed;
  const MobilityTable& table = snapshot->table;
  snapshot->plan = store_.read([&](const core::ClusterModel& model, const auto&) {
    const core::MobilityLookup lookup =
        [&](const core::PodAllocation& pod) -> std::optional<core::PodMobility> {
      const auto it = table.movable.find(pod.uid);
      if (it == table.movable.end()) return std::nullopt;
      core::PodMobility mobility = it->second;
      if (pod.model_pin.pinned)
        mobility.allowed_models = core::resolve_models(pod.model_pin, model.gpu_models());
      return mobility;
    };
    return core::plan_free_gpus(model, lookup, limits);
  });
  step(*snapshot, now);

  // The report.
  Json plan = nullptr;
  if (snapshot->plan) {
    Json moves = Json::array();
    for (const core::ConsolidationMove& move : snapshot->plan->moves) {
      const auto facts = table.pods.find(move.pod_uid);
      const std::string ns = facts == table.pods.end() ? "" : facts->second.namespace_name;
      moves.push_back({{"pod", ns + "/" + move.pod_name},
                       {"uid", move.pod_uid},
                       {"from", place(move.from_node, move.from_gpu)},
                       {"to", place(move.to_node, move.to_gpu)},
                       {"memory", move.amount}});
    }
    plan = {{"moves", std::move(moves)},
            {"podsMoved", snapshot->plan->moves.size()},
            {"gpusFreed", snapshot->plan->gpus_freed}};
  }
  metrics_.set_plan(snapshot->plan ? static_cast<int>(snapshot->plan->moves.size()) : 0,
                    snapshot->plan ? snapshot->plan->gpus_freed : 0);
  Json skipped = Json::object();
  for (const auto& [uid, reason] : table.immobile) {
    const std::string key(to_string(reason));
    skipped[key] = skipped.value(key, 0) + 1;
  }
  Json in_flight = nullptr;
  if (active_) {
    in_flight = {{"pod", active_->namespace_name + "/" + active_->move.pod_name},
                 {"uid", active_->move.pod_uid},
                 {"from", place(active_->move.from_node, active_->move.from_gpu)},
                 {"to", place(active_->move.to_node, active_->move.to_gpu)},
                 {"phase", active_->phase == ActiveMove::Phase::kEvicting ? "evicting"
                                                                          : "awaiting_replacement"},
                 {"refusals", active_->refusals}};
  }
  const bool may_act =
      options_.mode == Mode::kEvict && (!options_.act_budget || options_.act_budget());
  std::lock_guard lock(mutex_);
  report_["mode"] = to_string(options_.mode);
  report_["acting"] = may_act;
  report_["plan"] = std::move(plan);
  report_["inFlight"] = std::move(in_flight);
  report_["waiting"] = snapshot->waiting;
  report_["optedInPods"] = table.pods.size();
  report_["movablePods"] = table.movable.size();
  report_["skipped"] = std::move(skipped);
  report_["maxMovesPerHour"] = options_.max_moves_per_hour;
  report_["movedInLastHour"] = budget_.moved_in_last_hour(now);
  report_["intervalSeconds"] = std::chrono::duration<double>(options_.interval).count();
  report_["updatedAt"] = rfc3339(now);
  report_["error"] = "";
  if (!report_.contains("lastStop")) report_["lastStop"] = nullptr;
}

void Consolidator::step(const Snapshot& snapshot, double now) {
  if (options_.mode != Mode::kEvict) return;
  if (options_.act_budget && !options_.act_budget()) {
    // Not (or no longer) the leader: whoever leads plans afresh, and waits for what we began.
    if (active_) end_hold(*active_, "released", "this instance no longer acts");
    active_.reset();
    return;
  }
  if (active_) {
    if (active_->phase == ActiveMove::Phase::kAwaitingReplacement) {
      follow_replacement(snapshot, now);
    } else if (now >= active_->next_try) {
      try_evict(*active_, snapshot, now);
    }
    return;
  }
  if (!snapshot.plan || snapshot.plan->moves.empty() || !snapshot.waiting.empty()) return;
  if (now < quiet_until_ || budget_.left(now) <= 0) return;
  const core::ConsolidationMove& move = snapshot.plan->moves.front();
  const auto facts = snapshot.table.pods.find(move.pod_uid);
  if (facts == snapshot.table.pods.end()) return;
  ActiveMove active;
  active.move = move;
  active.namespace_name = facts->second.namespace_name;
  active.owner_uid = facts->second.owner_uid;
  active.owner = facts->second.owner_kind + "/" + facts->second.owner_name;
  active.owner_controller = facts->second.owner_controller;
  for (const auto& [uid, pod] : snapshot.table.pods) {
    if (pod.owner_uid == active.owner_uid) active.owner_pods_before.insert(uid);
  }
  active_ = active;
  try_evict(*active_, snapshot, now);
}

void Consolidator::try_evict(ActiveMove& active, const Snapshot& snapshot, double now) {
  const core::ConsolidationMove& move = active.move;
  const std::string key = active.namespace_name + "/" + move.pod_name;
  // Still where the plan found it, still movable, and the target still has room?
  std::string changed = store_.read([&](const core::ClusterModel& model, const auto&) {
    const core::PodAllocation* pod = model.find_pod(move.pod_uid);
    if (pod == nullptr || pod->node != move.from_node ||
        pod->gpus != std::vector<int>{move.from_gpu})
      return fmt::format("pod {} is no longer on node {} GPU {}", key, move.from_node,
                         move.from_gpu);
    const core::NodeState* target = model.find_node(move.to_node);
    if (target == nullptr) return fmt::format("target node {} is gone", move.to_node);
    if (move.to_gpu >= target->gpu_count())
      return fmt::format("target node {} has no GPU {}", move.to_node, move.to_gpu);
    const core::GpuState& gpu = target->gpus()[static_cast<std::size_t>(move.to_gpu)];
    if (!gpu.healthy || gpu.free() < move.amount)
      return fmt::format("target node {} GPU {} no longer has room for pod {}", move.to_node,
                         move.to_gpu, key);
    return std::string();
  });
  // A budget that allows no disruption now is the Eviction API's to answer (429, retried); any
  // other reason ends the move.
  const auto immobile = snapshot.table.immobile.find(move.pod_uid);
  if (changed.empty() && !snapshot.table.pods.contains(move.pod_uid)) {
    changed = fmt::format("pod {} is gone or no longer opted in", key);
  } else if (changed.empty() && immobile != snapshot.table.immobile.end() &&
             immobile->second != Immobile::kNoDisruptionAllowed) {
    changed = fmt::format("pod {} may no longer be moved ({})", key, to_string(immobile->second));
  }
  if (!changed.empty()) return stop_plan(changed, now);

  apiclient::RequestOptions request;
  request.retry = false;
  if (options_.act_budget) {
    const auto budget = options_.act_budget();
    if (!budget) {
      active_.reset();
      return;
    }
    request.timeout = *budget;
  }
  // The target's memory is kept for the replacement before the pod goes: a controller's
  // replacement (kube::PodInfo::controller) is recognised by filter, prioritize and bind.
  if (active.owner_controller) {
    const std::string refused = place_hold(active, now);
    if (!refused.empty())
      return stop_plan(fmt::format("cannot hold the target for pod {}: {}", key, refused), now);
  }
  const Json eviction = {
      {"apiVersion", "policy/v1"},
      {"kind", "Eviction"},
      {"metadata", {{"name", move.pod_name}, {"namespace", active.namespace_name}}},
      {"deleteOptions", {{"preconditions", {{"uid", move.pod_uid}}}}}};
  const auto answer = client_.post(apiclient::namespaced_path("/api/v1", active.namespace_name,
                                                              "pods", move.pod_name, "eviction"),
                                   eviction, request);
  if (answer) {
    metrics_.count_eviction("evicted");
    metrics_.count_move("attempted");
    budget_.record(now, 1);
    active.phase = ActiveMove::Phase::kAwaitingReplacement;
    active.evicted_at = now;
    spdlog::info(
        "consolidation: evicted pod {} from node {} GPU {}; its owner's replacement is "
        "planned for node {} GPU {}",
        key, move.from_node, move.from_gpu, move.to_node, move.to_gpu);
    post_event(active, std::string(kEventReason),
               fmt::format("Evicted by gpushare consolidation to move from node {} GPU {} to node "
                           "{} GPU {}",
                           move.from_node, move.from_gpu, move.to_node, move.to_gpu),
               "Normal");
    return;
  }
  const apiclient::ApiError& error = answer.error();
  // Not evicted: the memory is free for anyone until the next try holds it again.
  end_hold(active, "released", fmt::format("eviction not done ({})", error.describe()));
  if (error.is_not_found()) {
    metrics_.count_eviction("gone");
    return stop_plan(fmt::format("pod {} is gone (eviction: {})", key, error.describe()), now);
  }
  if (error.is_conflict()) {
    metrics_.count_eviction("changed");
    return stop_plan(fmt::format("pod {} changed (eviction: {})", key, error.describe()), now);
  }
  metrics_.count_eviction(error.is_too_many_requests() ? "refused" : "error");
  ++active.refusals;
  const double initial = std::chrono::duration<double>(options_.retry_initial).count();
  const double most = std::chrono::duration<double>(options_.retry_max).count();
  double delay = std::min(most, initial * std::pow(2.0, std::min(active.refusals - 1, 30)));
  if (const auto asked = error.server_retry_delay())
    delay = std::max(delay, static_cast<double>(asked->count()));
  active.next_try = now + delay;
  spdlog::info(
      "consolidation: eviction of pod {} (node {} GPU {}) refused: {}; retrying in {:.0f} s", key,
      move.from_node, move.from_gpu, error.describe(), delay);
}

void Consolidator::follow_replacement(const Snapshot& snapshot, double now) {
  ActiveMove& active = *active_;
  const core::ConsolidationMove& move = active.move;
  const std::string key = active.namespace_name + "/" + move.pod_name;
  for (const auto& [uid, pod] : snapshot.table.pods) {
    if (pod.owner_uid != active.owner_uid || uid == move.pod_uid || pod.terminating || !pod.bound)
      continue;
    if (active.owner_pods_before.contains(uid)) continue;  // a sibling, not the replacement
    struct Where {
      std::string node;
      std::vector<int> gpus;
    };
    const std::optional<Where> where =
        store_.read([&](const core::ClusterModel& model, const auto&) -> std::optional<Where> {
          const core::PodAllocation* found = model.find_pod(uid);
          if (found == nullptr) return std::nullopt;
          return Where{found->node, found->gpus};
        });
    if (!where) continue;  // the model has not seen it bound yet
    if (where->node == move.to_node && where->gpus == std::vector<int>{move.to_gpu}) {
      metrics_.count_move("done");
      const bool freed = store_.read([&](const core::ClusterModel& model, const auto&) {
        const core::NodeState* source = model.find_node(move.from_node);
        return source != nullptr && move.from_gpu < source->gpu_count() &&
               source->gpus()[static_cast<std::size_t>(move.from_gpu)].used == 0;
      });
      if (freed) metrics_.count_gpus_freed(1);
      end_hold(active, "honoured", fmt::format("pod {} bound on the held GPU", pod.key()));
      spdlog::info("consolidation: pod {} replaced {} on node {} GPU {} as planned{}", pod.key(),
                   key, move.to_node, move.to_gpu,
                   freed ? fmt::format("; node {} GPU {} is free", move.from_node, move.from_gpu)
                         : std::string());
      active_.reset();
      return;
    }
    return stop_plan(fmt::format("replacement pod {} of {} landed on node {} GPU(s) {}, not the "
                                 "planned node {} GPU {}",
                                 pod.key(), key, where->node, fmt::join(where->gpus, ","),
                                 move.to_node, move.to_gpu),
                     now);
  }
  if (now - active.evicted_at >
      std::chrono::duration<double>(options_.replacement_timeout).count()) {
    end_hold(active, "expired", "no replacement bound in time");
    stop_plan(
        fmt::format(
            "no replacement for pod {} was bound within {} s", key,
            std::chrono::duration_cast<std::chrono::seconds>(options_.replacement_timeout).count()),
        now);
  }
}

void Consolidator::stop_plan(const std::string& why, double now) {
  spdlog::warn("consolidation: plan stopped: {}", why);
  metrics_.count_move("aborted");
  if (active_) end_hold(*active_, "released", "the plan stopped");
  if (active_) post_event(*active_, "GPUConsolidationStopped", why, "Warning");
  active_.reset();
  quiet_until_ = now + std::chrono::duration<double>(options_.interval).count();
  std::lock_guard lock(mutex_);
  report_["lastStop"] = {{"reason", why}, {"at", rfc3339(now)}};
}

void Consolidator::post_event(const ActiveMove& active, const std::string& reason,
                              const std::string& message, const std::string& type) {
  const std::string stamp = rfc3339(options_.now());
  const Json event = {
      {"apiVersion", "v1"},
      {"kind", "Event"},
      {"metadata",
       {{"generateName", active.move.pod_name + "."}, {"namespace", active.namespace_name}}},
      {"involvedObject",
       {{"apiVersion", "v1"},
        {"kind", "Pod"},
        {"namespace", active.namespace_name},
        {"name", active.move.pod_name},
        {"uid", active.move.pod_uid}}},
      {"reason", reason},
      {"message", message},
      {"type", type},
      {"source", {{"component", options_.component}}},
      {"reportingComponent", options_.component},
      {"firstTimestamp", stamp},
      {"lastTimestamp", stamp},
      {"count", 1}};
  apiclient::RequestOptions request;
  request.retry = false;
  const auto posted = client_.post(
      apiclient::namespaced_path("/api/v1", active.namespace_name, "events"), event, request);
  if (!posted) {
    spdlog::warn("consolidation: cannot record an Event on pod {}/{}: {}", active.namespace_name,
                 active.move.pod_name, posted.error().describe());
  }
}

}  // namespace gpushare::consolidation
