#include "gpushare/sync/cluster_sync.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <ctime>
#include <string_view>
#include <unordered_set>
#include <utility>

#include "gpushare/kube/claim_check.h"
#include "gpushare/kube/node_info.h"
#include "gpushare/kube/pod_dra_demand.h"
#include "gpushare/service/read_back.h"

namespace gpushare::sync {

using apiclient::WatchEventType;

namespace {

// Applies what the API server says about one pod to the model, through the reservation
// ledger: a bound pod confirms our own reservation (or replaces it with what really happened),
// a pod the watch still shows pending keeps a reservation made by a bind in flight, a finished
// one leaves. A claim out of range adds a warning naming the pod to `warnings` (logged by the
// caller once the model's lock is released).
core::ReservationOutcome apply_pod(core::ClusterModel& model, core::ReservationLedger& ledger,
                                   const kube::PodInfo& pod, core::EvidenceSource source,
                                   std::vector<std::string>& warnings) {
  core::PodEvidence evidence = kube::evidence_of(pod);
  if (evidence.bound) {
    if (std::string warning = kube::claim_warning(model, pod, *evidence.bound); !warning.empty()) {
      warnings.push_back(std::move(warning));
    }
  } else if (model.find_pod(pod.uid) == nullptr) {
    return core::ReservationOutcome::kNone;  // nothing held, nothing to change
  }
  return ledger.observe(model, evidence, source);
}

// How long a list's model update took, for its log line: wall time from asking for the model's
// write lock to releasing it (what filter and prioritize wait at most), and this thread's CPU
// time meanwhile (the stable figure on a busy machine).
class UpdateTimer {
 public:
  UpdateTimer() : wall_(std::chrono::steady_clock::now()), cpu_(thread_cpu()) {}
  std::string done() const {
    const auto wall = std::chrono::duration_cast<std::chrono::milliseconds>(
        std::chrono::steady_clock::now() - wall_);
    const auto cpu = std::chrono::duration_cast<std::chrono::milliseconds>(thread_cpu() - cpu_);
    return fmt::format("model updated in {} ms, {} ms CPU", wall.count(), cpu.count());
  }

 private:
  static std::chrono::nanoseconds thread_cpu() {
    timespec now{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
    return std::chrono::seconds(now.tv_sec) + std::chrono::nanoseconds(now.tv_nsec);
  }
  std::chrono::steady_clock::time_point wall_;
  std::chrono::nanoseconds cpu_;
};

std::string_view evidence_label(core::EvidenceSource source) {
  switch (source) {
    case core::EvidenceSource::kWatch:
      return "watch";
    case core::EvidenceSource::kList:
      return "list";
    case core::EvidenceSource::kReadBack:
      return "read_back";
  }
  return "unknown";
}

}  // namespace

class ClusterSync::NodeHandler final : public apiclient::ReflectorHandler {
 public:
  explicit NodeHandler(ClusterSync& owner) : owner_(owner) {}

  void on_list_begin() override { staged_.clear(); }
  void on_list_item(const json::Value& item) override {
    if (auto spec = parse(item)) staged_.push_back(std::move(*spec));
  }

  void on_replace(const std::string& rv) override {
    std::vector<core::NodeSpec> specs = std::move(staged_);
    staged_.clear();
    const UpdateTimer timer;
    owner_.store_.write([&](core::ClusterModel& model, core::PlacementPolicy&) {
      std::set<std::string, std::less<>> listed;
      for (const auto& spec : specs) listed.insert(spec.name);
      std::vector<std::string> vanished;
      for (const auto& node : model.nodes()) {
        if (!listed.contains(node.name())) vanished.push_back(node.name());
      }
      for (const auto& name : vanished) model.remove_node(name);
      for (auto& spec : specs) upsert(model, std::move(spec));
    });
    spdlog::info("nodes listed: {} at resourceVersion {} ({})", specs.size(), rv, timer.done());
  }

  void on_event(WatchEventType type, const json::Value& object) override {
    auto spec = parse(object);
    if (!spec) return;
    owner_.store_.write([&](core::ClusterModel& model, core::PlacementPolicy&) {
      if (type == WatchEventType::kDeleted) {
        if (model.remove_node(spec->name)) spdlog::info("node {} removed", spec->name);
      } else {
        upsert(model, std::move(*spec));
      }
    });
  }

 private:
  std::optional<core::NodeSpec> parse(const json::Value& object) {
    try {
      return kube::decode_node(object, owner_.options_.names);
    } catch (const std::exception& e) {
      ++owner_.parse_errors_;
      spdlog::warn("ignoring node object: {}", e.what());
      return std::nullopt;
    }
  }

  static void upsert(core::ClusterModel& model, core::NodeSpec spec) {
    // Node status heartbeats arrive all the time; only a change of what we use rebuilds.
    if (const core::NodeState* current = model.find_node(spec.name);
        current && current->spec() == model.effective_spec(spec)) {
      return;
    }
    if (!spec.misconfiguration.empty())
      spdlog::warn("node {}: {}", spec.name, spec.misconfiguration);
    model.upsert_node(std::move(spec));
  }

  ClusterSync& owner_;
  std::vector<core::NodeSpec> staged_;  // the list in progress; reflector thread only
};

class ClusterSync::PodHandler final : public apiclient::ReflectorHandler {
 public:
  explicit PodHandler(ClusterSync& owner) : owner_(owner) {}

  void on_list_begin() override {
    staged_.clear();
    shadowed_.clear();
  }
  // Items go straight into the next pods' directory: a list staged in a vector first held ~17 MB
  // more at 50 000 pods (and twice that while the vector grew), on top of the model and the
  // directory still in use during a relist.
  void on_list_item(const json::Value& item) override {
    auto pod = parse(item);
    if (!pod) return;
    std::string key = pod->key();
    // The API server never lists a name twice; if it did, the model would still get both.
    if (auto it = staged_.lower_bound(key); it != staged_.end() && it->first == key) {
      shadowed_.push_back(std::exchange(it->second, std::move(*pod)));
    } else {
      staged_.emplace_hint(it, std::move(key), std::move(*pod));
    }
  }

  void on_replace(const std::string& rv) override {
    std::map<std::string, kube::PodInfo, std::less<>> directory = std::move(staged_);
    std::vector<kube::PodInfo> shadowed = std::move(shadowed_);
    staged_.clear();
    shadowed_.clear();
    // Views into `directory` and `shadowed`, which outlive the set: hashed, since the model's
    // every pod is looked up in it under the model's write lock.
    std::unordered_set<std::string_view> listed;
    listed.reserve(directory.size() + shadowed.size());
    for (const auto& pod : shadowed) listed.insert(pod.uid);
    for (const auto& [key, pod] : directory) listed.insert(pod.uid);
    std::vector<std::string> warnings;
    std::vector<std::string> unmatched_pins;
    std::size_t confirmed = 0;
    const std::int64_t now = owner_.options_.now_ns();
    const UpdateTimer timer;
    owner_.store_.write(
        [&](core::ClusterModel& model, core::PlacementPolicy&, core::ReservationLedger& ledger) {
          auto apply = [&](const kube::PodInfo& pod) {
            if (apply_pod(model, ledger, pod, core::EvidenceSource::kList, warnings) ==
                core::ReservationOutcome::kConfirmed) {
              ++confirmed;
            }
          };
          for (const auto& pod : shadowed) apply(pod);  // earlier in the list than their namesakes
          for (const auto& [key, pod] : directory) apply(pod);
          // Pods the model holds that the API server no longer has. A reservation is not dropped
          // for that: the list may be older than our bind. Its pod is read back instead.
          std::vector<std::string> vanished;
          for (const auto& [uid, allocation] : model.pods()) {
            if (listed.contains(uid)) continue;
            if (ledger.find(uid) != nullptr) {
              ledger.absent_from_list(uid, now);
            } else {
              vanished.push_back(uid);
            }
          }
          for (const auto& uid : vanished) model.remove_pod(uid);
          for (const auto& [key, pod] : directory) owner_.check_pin(pod, model, unmatched_pins);
        });
    const std::string updated = timer.done();
    for (std::size_t i = 0; i < confirmed; ++i) {
      owner_.reservation_metrics_.count_reservation_end(core::ReservationOutcome::kConfirmed,
                                                        "list");
    }
    for (const auto& warning : warnings) spdlog::warn("{}", warning);
    for (const auto& warning : unmatched_pins) spdlog::warn("{}", warning);
    const std::size_t count = directory.size();
    {
      std::lock_guard lock(owner_.pods_mutex_);
      owner_.pods_.swap(directory);
    }
    spdlog::info("pods listed: {} at resourceVersion {} ({})", count, rv, updated);
  }

  void on_event(WatchEventType type, const json::Value& object) override {
    auto pod = parse(object);
    if (!pod) return;
    std::vector<std::string> warnings;
    const core::ReservationOutcome outcome =
        owner_.store_.write([&](core::ClusterModel& model, core::PlacementPolicy& policy,
                                core::ReservationLedger& ledger) {
          if (type != WatchEventType::kDeleted) owner_.check_pin(*pod, model, warnings);
          if (type == WatchEventType::kDeleted) {
            return ledger.observe(model, {core::PodEvidence::Kind::kGone, pod->uid, std::nullopt},
                                  core::EvidenceSource::kWatch);
          }
          // A pod seen bound for the first time that this extender did not bind (kube's binder
          // placed it, CPU-only pods included): the policy learns the workload from it, as from
          // its own binds. Not from lists: a relist would count every pod again.
          const bool new_to_the_model = model.find_pod(pod->uid) == nullptr;
          const auto applied =
              apply_pod(model, ledger, *pod, core::EvidenceSource::kWatch, warnings);
          if (new_to_the_model && model.find_pod(pod->uid) != nullptr) {
            policy.observe(kube::learned_demand(model, *pod));
            policy.observe_cluster(model.nodes());
          }
          return applied;
        });
    owner_.reservation_metrics_.count_reservation_end(outcome,
                                                      evidence_label(core::EvidenceSource::kWatch));
    if (outcome == core::ReservationOutcome::kReleased) {
      spdlog::info(
          "reservation of pod {} (uid {}) released: the pod was deleted or finished while being "
          "bound",
          pod->key(), pod->uid);
    }
    for (const auto& warning : warnings) spdlog::warn("{}", warning);
    std::lock_guard lock(owner_.pods_mutex_);
    if (type == WatchEventType::kDeleted) {
      // Only if it is the same pod: a new one may already have taken the name.
      if (auto it = owner_.pods_.find(pod->key());
          it != owner_.pods_.end() && it->second.uid == pod->uid) {
        owner_.pods_.erase(it);
      }
    } else {
      owner_.pods_.insert_or_assign(pod->key(), std::move(*pod));
    }
  }

 private:
  std::optional<kube::PodInfo> parse(const json::Value& object) {
    try {
      kube::PodInfo pod = kube::decode_pod(object, owner_.options_.names);
      if (pod.uid.empty()) throw kube::BadInput(fmt::format("pod {} has no uid", pod.key()));
      return pod;
    } catch (const std::exception& e) {
      ++owner_.parse_errors_;
      spdlog::warn("ignoring pod object: {}", e.what());
      return std::nullopt;
    }
  }

  ClusterSync& owner_;
  // The list in progress, by pod key, and items whose key came again; reflector thread only.
  std::map<std::string, kube::PodInfo, std::less<>> staged_;
  std::vector<kube::PodInfo> shadowed_;
};

class ClusterSync::ConfigMapHandler final : public apiclient::ReflectorHandler {
 public:
  explicit ConfigMapHandler(ClusterSync& owner) : owner_(owner) {}

  void on_list_begin() override {
    staged_.clear();
    listed_.clear();
  }
  void on_list_item(const json::Value& item) override {
    if (auto parsed = parse(item)) {
      note(*parsed, false);
      listed_.push_back(parsed->object);
      staged_[parsed->node] = parsed->indices;
    }
  }

  void on_replace(const std::string&) override {
    std::map<std::string, std::vector<int>> unhealthy = std::move(staged_);
    staged_.clear();
    // ConfigMaps deleted while the watch was down take their warnings with them.
    if (owner_.config_warnings_.retain_only(listed_) > 0) publish_warnings();
    listed_.clear();
    owner_.store_.write([&](core::ClusterModel& model, core::PlacementPolicy&) {
      for (const auto& node : marked_) {
        if (!unhealthy.contains(node)) model.set_unhealthy(node, {});
      }
      marked_.clear();
      for (const auto& [node, indices] : unhealthy) {
        model.set_unhealthy(node, indices);
        marked_.insert(node);
      }
    });
  }

  void on_event(WatchEventType type, const json::Value& object) override {
    auto parsed = parse(object);
    if (!parsed) return;
    owner_.store_.write([&](core::ClusterModel& model, core::PlacementPolicy&) {
      if (type == WatchEventType::kDeleted) {
        model.set_unhealthy(parsed->node, {});
        marked_.erase(parsed->node);
      } else {
        model.set_unhealthy(parsed->node, parsed->indices);
        marked_.insert(parsed->node);
      }
    });
    // After the model: whoever sees the warning also sees the GPUs it leaves marked.
    note(*parsed, type == WatchEventType::kDeleted);
    spdlog::info(
        "unhealthy GPUs of node {}: [{}]", parsed->node,
        type == WatchEventType::kDeleted ? "" : fmt::format("{}", fmt::join(parsed->indices, ",")));
  }

 private:
  std::optional<kube::UnhealthyGpus> parse(const json::Value& object) {
    try {
      return kube::decode_unhealthy_configmap(object);
    } catch (const std::exception& e) {
      ++owner_.parse_errors_;
      spdlog::warn("ignoring ConfigMap: {}", e.what());
      return std::nullopt;
    }
  }

  // Records the ConfigMap's mistakes (none once deleted); logs them when they change, not on
  // every relist.
  void note(const kube::UnhealthyGpus& parsed, bool deleted) {
    auto warnings = deleted ? std::vector<service::ConfigWarning>{}
                            : service::unhealthy_configmap_warnings(parsed);
    const std::vector<service::ConfigWarning> logged = warnings;
    if (!owner_.config_warnings_.set(parsed.object, std::move(warnings))) return;
    for (const auto& warning : logged) spdlog::warn("{}", warning.message);
    publish_warnings();
  }

  void publish_warnings() {
    owner_.metrics_.set_config_warnings(owner_.config_warnings_.count_by_kind());
  }

  ClusterSync& owner_;
  std::set<std::string> marked_;  // nodes with an unhealthy-gpu ConfigMap; reflector thread only
  std::map<std::string, std::vector<int>> staged_;  // the list in progress
  std::vector<std::string> listed_;                 // the list in progress: ConfigMap names
};

ClusterSync::ClusterSync(apiclient::ApiClient& client, service::ModelStore& store,
                         metrics::MetricRegistry& metrics, SyncOptions options)
    : client_(client),
      store_(store),
      metrics_(metrics),
      reservation_metrics_(metrics),
      options_(std::move(options)) {
  node_handler_ = std::make_unique<NodeHandler>(*this);
  pod_handler_ = std::make_unique<PodHandler>(*this);
  configmap_handler_ = std::make_unique<ConfigMapHandler>(*this);
  auto make = [&](std::string path, std::string name, apiclient::ReflectorHandler& handler) {
    apiclient::ReflectorOptions reflector;
    reflector.path = std::move(path);
    reflector.name = std::move(name);
    if (options_.tune_reflector) options_.tune_reflector(reflector);
    return std::make_unique<apiclient::Reflector>(client_, std::move(reflector), handler);
  };
  nodes_ = make("/api/v1/nodes", "nodes", *node_handler_);
  pods_reflector_ = make("/api/v1/pods", "pods", *pod_handler_);
  configmaps_ =
      make(fmt::format("/api/v1/namespaces/{}/configmaps", options_.names.unhealthy_namespace),
           "configmaps", *configmap_handler_);
}

ClusterSync::~ClusterSync() {
  stop();
}

void ClusterSync::start() {
  nodes_->start();
  pods_reflector_->start();
  configmaps_->start();
  housekeeping_ = std::jthread([this](std::stop_token stop) {
    std::mutex mutex;
    std::condition_variable_any wake;
    bool announced = false;
    while (!stop.stop_requested()) {
      std::unique_lock lock(mutex);
      wake.wait_for(lock, stop, options_.expiry_interval, [] { return false; });
      if (stop.stop_requested()) break;
      resolve_reservations();
      publish_sync_metrics();
      report_stale_sync();
      if (!announced && synced()) {
        announced = true;
        spdlog::info("initial sync complete");
      }
    }
  });
}

void ClusterSync::stop() {
  if (housekeeping_.joinable()) {
    housekeeping_.request_stop();
    housekeeping_.join();
  }
  configmaps_->stop();
  pods_reflector_->stop();
  nodes_->stop();
}

bool ClusterSync::synced() const {
  return nodes_->has_synced() && pods_reflector_->has_synced() && configmaps_->has_synced();
}

bool ClusterSync::wait_for_sync(std::chrono::milliseconds timeout) const {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (const auto* reflector : {nodes_.get(), pods_reflector_.get(), configmaps_.get()}) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (!reflector->wait_for_sync(std::max(left, std::chrono::milliseconds(0)))) return false;
  }
  return true;
}

std::string ClusterSync::not_ready_reason() const {
  std::vector<std::string> pending;
  for (const auto* reflector : {nodes_.get(), pods_reflector_.get(), configmaps_.get()}) {
    if (!reflector->has_synced()) pending.push_back(reflector->name());
  }
  if (!pending.empty())
    return fmt::format("waiting for the first full list of {}", fmt::join(pending, ", "));
  // A model that has stopped hearing from the API server misses pods others bind and nodes that
  // change: past --sync-stale-seconds it should not be scheduling.
  std::vector<std::string> stale;
  for (const auto& [name, seconds] : failing_resources()) {
    if (seconds >= options_.stale_after)
      stale.push_back(fmt::format("{} for {} s", name, seconds.count()));
  }
  if (stale.empty()) return {};
  return fmt::format("list/watch failing ({}), longer than --sync-stale-seconds={}",
                     fmt::join(stale, ", "), options_.stale_after.count());
}

std::optional<kube::PodInfo> ClusterSync::cached_pod(std::string_view namespace_name,
                                                     std::string_view name) const {
  std::lock_guard lock(pods_mutex_);
  auto it = pods_.find(fmt::format("{}/{}", namespace_name, name));
  if (it == pods_.end()) return std::nullopt;
  return it->second;
}

std::size_t ClusterSync::cached_pod_count() const {
  std::lock_guard lock(pods_mutex_);
  return pods_.size();
}

std::string ClusterSync::pods_resource_version() const {
  return pods_reflector_->last_resource_version();
}

void ClusterSync::check_pin(const kube::PodInfo& pod, const core::ClusterModel& model,
                            std::vector<std::string>& warnings) {
  if (!service::UnmatchedPinWarnings::concerns(pod)) return;
  if (auto warning = pin_warnings_.check(pod, model.gpu_models(), options_.names.gpu_model_label)) {
    warnings.push_back(std::move(*warning));
  }
}

service::PodBinder::ReadBack ClusterSync::read_back(std::string_view namespace_name,
                                                    std::string_view name) const {
  using ReadBack = service::PodBinder::ReadBack;
  apiclient::RequestOptions options;
  options.timeout = options_.read_back_timeout;
  auto result =
      client_.get(fmt::format("/api/v1/namespaces/{}/pods/{}", namespace_name, name), options);
  if (!result) {
    if (result.error().is_not_found()) return {ReadBack::Result::kNotFound, std::nullopt, {}};
    return {ReadBack::Result::kFailed, std::nullopt, result.error().describe()};
  }
  try {
    // With the configured names: default ones would read a pod of a custom resource as asking
    // for no GPU memory.
    return {ReadBack::Result::kFound, kube::parse_pod(result.value(), options_.names), {}};
  } catch (const std::exception& e) {
    return {ReadBack::Result::kFailed, std::nullopt,
            fmt::format("pod {}/{} from the API server is unusable: {}", namespace_name, name,
                        e.what())};
  }
}

std::size_t ClusterSync::resolve_reservations() {
  const std::int64_t now = options_.now_ns();
  const std::vector<core::Reservation> due =
      store_.read([&](const core::ClusterModel&, const core::PlacementPolicy&,
                      const core::ReservationLedger& ledger) { return ledger.due(now); });
  std::size_t settled = 0;
  for (const core::Reservation& reservation : due) {
    const auto slash = reservation.pod_key.find('/');
    const std::string_view key = reservation.pod_key;
    const std::int64_t read_sent = options_.now_ns();
    const auto read = read_back(key.substr(0, slash), key.substr(slash + 1));  // outside the lock
    auto ended = [](const service::Settlement& s) {
      return s.outcome == core::ReservationOutcome::kConfirmed ||
             s.outcome == core::ReservationOutcome::kReleased;
    };
    const service::Settlement result = store_.write(
        [&](core::ClusterModel& model, core::PlacementPolicy&, core::ReservationLedger& ledger) {
          service::Settlement applied =
              service::apply_read_back(model, ledger, read, reservation.uid,
                                       reservation.reserved_ns, read_sent, options_.now_ns());
          // Counted with the model's change, so no reader sees one without the other.
          if (ended(applied)) ++read_back_settlements_;
          return applied;
        });
    reservation_metrics_.count_reservation_end(result.outcome, "read_back");
    if (ended(result)) ++settled;
    service::log_settlement(result);
  }
  return settled;
}

std::vector<ClusterSync::FailingResource> ClusterSync::failing_resources() const {
  const std::int64_t now = options_.now_ns();
  std::vector<FailingResource> out;
  for (const auto* reflector : {nodes_.get(), pods_reflector_.get(), configmaps_.get()}) {
    const std::int64_t since = reflector->failing_since_unix_ns();
    if (since == 0) continue;
    out.push_back(
        {reflector->name(), std::chrono::duration_cast<std::chrono::seconds>(
                                std::chrono::nanoseconds(std::max<std::int64_t>(0, now - since)))});
  }
  return out;
}

void ClusterSync::report_stale_sync() {
  const auto failing = failing_resources();
  std::set<std::string> stale;
  for (const auto& [name, seconds] : failing) {
    if (seconds >= options_.stale_after) stale.insert(name);
  }
  for (const auto& name : stale) {
    if (!stale_reported_.contains(name)) {
      spdlog::warn(
          "list/watch of {} has been failing for over {} s: the model may miss changes, so /readyz "
          "reports not ready until it recovers",
          name, options_.stale_after.count());
    }
  }
  for (const auto& name : stale_reported_) {
    if (!stale.contains(name)) spdlog::info("list/watch of {} is in step again", name);
  }
  stale_reported_ = std::move(stale);
  for (const auto* reflector : {nodes_.get(), pods_reflector_.get(), configmaps_.get()}) {
    std::int64_t seconds = 0;
    for (const auto& failing_resource : failing) {
      if (failing_resource.name == reflector->name())
        seconds = failing_resource.for_seconds.count();
    }
    metrics_.set_sync_failing(reflector->name(), seconds);
  }
}

void ClusterSync::publish_sync_metrics() {
  // Metrics counts events one by one; hand it what happened since the last call.
  const Counters now = counters();
  auto publish = [this](std::string_view resource, const apiclient::ReflectorCounters& current,
                        apiclient::ReflectorCounters& last) {
    for (auto n = last.watch_restarts; n < current.watch_restarts; ++n)
      metrics_.count_watch_restart(resource);
    for (auto n = last.relists; n < current.relists; ++n) metrics_.count_relist(resource);
    last = current;
  };
  publish("nodes", now.nodes, published_.nodes);
  publish("pods", now.pods, published_.pods);
  publish("configmaps", now.configmaps, published_.configmaps);
  if (synced()) {
    // The model is in step only as far as its stalest resource, and only as of the last real
    // list/watch progress: during an API-server outage this must stop moving (it used to be
    // "now" whenever the first sync had happened, so an outage never showed).
    std::int64_t oldest_ns = INT64_MAX;
    for (const auto* reflector : {nodes_.get(), pods_reflector_.get(), configmaps_.get()}) {
      oldest_ns = std::min(oldest_ns, reflector->last_progress_unix_ns());
    }
    metrics_.set_last_sync(oldest_ns / 1'000'000'000);
  }
}

ClusterSync::Counters ClusterSync::counters() const {
  return {nodes_->counters(), pods_reflector_->counters(), configmaps_->counters(),
          parse_errors_.load(), read_back_settlements_.load()};
}

}  // namespace gpushare::sync
