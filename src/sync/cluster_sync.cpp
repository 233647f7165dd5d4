#include "gpushare/sync/cluster_sync.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "gpushare/kube/claim_check.h"
#include "gpushare/kube/node_info.h"

namespace gpushare::sync {

using apiclient::Json;
using apiclient::WatchEventType;

namespace {

// Applies what the API server says about one pod to the model. The watch is the truth for
// bound pods (this also confirms our own assumed binds, and replaces an assumption with what
// really happened after a time-out); a pod the watch still shows pending keeps a reservation
// made by a bind in flight. A claim out of range adds a warning naming the pod to `warnings`
// (logged by the caller once the model's lock is released).
void apply_pod(core::ClusterModel& model, const kube::PodInfo& pod, std::vector<std::string>& warnings) {
  if (auto allocation = kube::allocation_of(pod)) {
    if (std::string warning = kube::claim_warning(model, pod, *allocation); !warning.empty()) {
      warnings.push_back(std::move(warning));
    }
    model.add_pod(std::move(*allocation));
    return;
  }
  const core::PodAllocation* held = model.find_pod(pod.uid);
  if (held == nullptr) return;
  if (held->assumed && pod.node_name.empty() && !pod.finished()) return;
  model.remove_pod(pod.uid);
}

}  // namespace

class ClusterSync::NodeHandler final : public apiclient::ReflectorHandler {
 public:
  explicit NodeHandler(ClusterSync& owner) : owner_(owner) {}

  void on_list_begin() override { staged_.clear(); }
  bool on_list_item(Json& item) override {
    if (auto spec = parse(item)) staged_.push_back(std::move(*spec));
    return true;
  }

  void on_replace(std::vector<Json> items, const std::string& rv) override {
    std::vector<core::NodeSpec> specs = std::move(staged_);
    staged_.clear();
    for (Json& item : items) on_list_item(item);
    for (auto& spec : staged_) specs.push_back(std::move(spec));
    staged_.clear();
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
    spdlog::info("nodes listed: {} at resourceVersion {}", specs.size(), rv);
  }

  void on_event(WatchEventType type, const Json& object) override {
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
  std::optional<core::NodeSpec> parse(const Json& object) {
    try {
      return kube::parse_node(object, owner_.options_.names);
    } catch (const std::exception& e) {
      ++owner_.parse_errors_;
      spdlog::warn("ignoring node object: {}", e.what());
      return std::nullopt;
    }
  }

  static void upsert(core::ClusterModel& model, core::NodeSpec spec) {
    // Node status heartbeats arrive all the time; only a change of what we use rebuilds.
    if (const core::NodeState* current = model.find_node(spec.name); current && current->spec() == spec) {
      return;
    }
    if (!spec.misconfiguration.empty()) spdlog::warn("node {}: {}", spec.name, spec.misconfiguration);
    model.upsert_node(std::move(spec));
  }

  ClusterSync& owner_;
  std::vector<core::NodeSpec> staged_;  // the list in progress; reflector thread only
};

class ClusterSync::PodHandler final : public apiclient::ReflectorHandler {
 public:
  explicit PodHandler(ClusterSync& owner) : owner_(owner) {}

  void on_list_begin() override { staged_.clear(); }
  bool on_list_item(Json& item) override {
    if (auto pod = parse(item)) staged_.push_back(std::move(*pod));
    return true;
  }

  void on_replace(std::vector<Json> items, const std::string& rv) override {
    std::map<std::string, kube::PodInfo, std::less<>> directory;
    for (Json& item : items) on_list_item(item);
    items.clear();
    std::vector<kube::PodInfo> pods = std::move(staged_);
    staged_.clear();
    std::set<std::string, std::less<>> listed;
    for (const auto& pod : pods) listed.insert(pod.uid);
    // Pods we saw before that this list no longer has were deleted while the watch was down.
    std::set<std::string, std::less<>> deleted;
    {
      std::lock_guard lock(owner_.pods_mutex_);
      for (const auto& [key, pod] : owner_.pods_) {
        if (!listed.contains(pod.uid)) deleted.insert(pod.uid);
      }
    }
    std::vector<std::string> warnings;
    owner_.store_.write([&](core::ClusterModel& model, core::PlacementPolicy&) {
      for (const auto& pod : pods) apply_pod(model, pod, warnings);
      // Pods the model holds that the API server no longer has. A reservation of a bind in
      // flight stays until it is confirmed or expires (a list may be older than our bind),
      // unless the pod is known to be deleted.
      std::vector<std::string> vanished;
      for (const auto& [uid, allocation] : model.pods()) {
        if (!listed.contains(uid) && (!allocation.assumed || deleted.contains(uid))) vanished.push_back(uid);
      }
      for (const auto& uid : vanished) model.remove_pod(uid);
    });
    for (const auto& warning : warnings) spdlog::warn("{}", warning);
    for (auto& pod : pods) {
      std::string key = pod.key();
      directory.insert_or_assign(std::move(key), std::move(pod));
    }
    const std::size_t count = directory.size();
    {
      const std::int64_t now = owner_.options_.now_ns();
      std::lock_guard lock(owner_.pods_mutex_);
      owner_.pods_.swap(directory);
      for (auto& uid : deleted) owner_.deleted_uids_.insert_or_assign(uid, now);
    }
    spdlog::info("pods listed: {} at resourceVersion {}", count, rv);
  }

  void on_event(WatchEventType type, const Json& object) override {
    auto pod = parse(object);
    if (!pod) return;
    std::vector<std::string> warnings;
    owner_.store_.write([&](core::ClusterModel& model, core::PlacementPolicy& policy) {
      if (type == WatchEventType::kDeleted) {
        model.remove_pod(pod->uid);
        return;
      }
      // A pod seen bound for the first time that this extender did not bind (kube's binder
      // placed it, CPU-only pods included): the policy learns the workload from it, as from its
      // own binds. Not from lists: a relist would count every pod again.
      const bool new_to_the_model = model.find_pod(pod->uid) == nullptr;
      apply_pod(model, *pod, warnings);
      if (new_to_the_model && model.find_pod(pod->uid) != nullptr) policy.observe(pod->demand());
    });
    for (const auto& warning : warnings) spdlog::warn("{}", warning);
    std::lock_guard lock(owner_.pods_mutex_);
    if (type == WatchEventType::kDeleted) {
      owner_.deleted_uids_.insert_or_assign(pod->uid, owner_.options_.now_ns());
      // Only if it is the same pod: a new one may already have taken the name.
      if (auto it = owner_.pods_.find(pod->key()); it != owner_.pods_.end() && it->second.uid == pod->uid) {
        owner_.pods_.erase(it);
      }
    } else {
      owner_.pods_.insert_or_assign(pod->key(), std::move(*pod));
    }
  }

 private:
  std::optional<kube::PodInfo> parse(const Json& object) {
    try {
      kube::PodInfo pod = kube::parse_pod(object, owner_.options_.names);
      if (pod.uid.empty()) throw kube::BadInput(fmt::format("pod {} has no uid", pod.key()));
      return pod;
    } catch (const std::exception& e) {
      ++owner_.parse_errors_;
      spdlog::warn("ignoring pod object: {}", e.what());
      return std::nullopt;
    }
  }

  ClusterSync& owner_;
  std::vector<kube::PodInfo> staged_;  // the list in progress; reflector thread only
};

class ClusterSync::ConfigMapHandler final : public apiclient::ReflectorHandler {
 public:
  explicit ConfigMapHandler(ClusterSync& owner) : owner_(owner) {}

  void on_list_begin() override {
    staged_.clear();
    listed_.clear();
  }
  bool on_list_item(Json& item) override {
    if (auto parsed = parse(item)) {
      note(*parsed, false);
      listed_.push_back(parsed->object);
      staged_[parsed->node] = parsed->indices;
    }
    return true;
  }

  void on_replace(std::vector<Json> items, const std::string&) override {
    for (Json& item : items) on_list_item(item);
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

  void on_event(WatchEventType type, const Json& object) override {
    auto parsed = parse(object);
    if (!parsed) return;
    note(*parsed, type == WatchEventType::kDeleted);
    owner_.store_.write([&](core::ClusterModel& model, core::PlacementPolicy&) {
      if (type == WatchEventType::kDeleted) {
        model.set_unhealthy(parsed->node, {});
        marked_.erase(parsed->node);
      } else {
        model.set_unhealthy(parsed->node, parsed->indices);
        marked_.insert(parsed->node);
      }
    });
    spdlog::info("unhealthy GPUs of node {}: [{}]", parsed->node,
                 type == WatchEventType::kDeleted ? "" : fmt::format("{}", fmt::join(parsed->indices, ",")));
  }

 private:
  std::optional<kube::UnhealthyGpus> parse(const Json& object) {
    try {
      return kube::parse_unhealthy_configmap(object);
    } catch (const std::exception& e) {
      ++owner_.parse_errors_;
      spdlog::warn("ignoring ConfigMap: {}", e.what());
      return std::nullopt;
    }
  }

  // Records the ConfigMap's mistakes (none once deleted); logs them when they change, not on
  // every relist.
  void note(const kube::UnhealthyGpus& parsed, bool deleted) {
    auto warnings = deleted ? std::vector<extender::ConfigWarning>{}
                            : extender::unhealthy_configmap_warnings(parsed);
    const std::vector<extender::ConfigWarning> logged = warnings;
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

ClusterSync::ClusterSync(apiclient::ApiClient& client, extender::ModelStore& store,
                         extender::Metrics& metrics, SyncOptions options)
    : client_(client), store_(store), metrics_(metrics), options_(std::move(options)) {
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
  configmaps_ = make(fmt::format("/api/v1/namespaces/{}/configmaps", options_.names.unhealthy_namespace),
                     "configmaps", *configmap_handler_);
}

ClusterSync::~ClusterSync() { stop(); }

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
      expire_assumed();
      publish_sync_metrics();
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
  if (pending.empty()) return {};
  return fmt::format("waiting for the first full list of {}", fmt::join(pending, ", "));
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

std::string ClusterSync::pods_resource_version() const { return pods_reflector_->last_resource_version(); }

std::size_t ClusterSync::expire_assumed() {
  const std::int64_t deadline =
      options_.now_ns() - std::chrono::duration_cast<std::chrono::nanoseconds>(options_.assume_ttl).count();
  std::vector<std::string> deleted;
  {
    std::lock_guard lock(pods_mutex_);
    std::erase_if(deleted_uids_, [&](const auto& entry) { return entry.second < deadline; });
    deleted.reserve(deleted_uids_.size());
    for (const auto& [uid, when] : deleted_uids_) deleted.push_back(uid);
  }
  // Reservations whose bind is certainly over (older than max_bind_duration) for a pod the watch
  // does not have: had the bind landed on a living pod, the watch would show the pod.
  struct Settled {
    std::string uid, key;
    std::int64_t assume_time_ns;
  };
  const std::int64_t settled_before =
      options_.now_ns() - std::chrono::duration_cast<std::chrono::nanoseconds>(options_.max_bind_duration).count();
  std::vector<Settled> settled = store_.read([&](const core::ClusterModel& model, const core::PlacementPolicy&) {
    std::vector<Settled> out;
    for (const auto& [uid, pod] : model.pods()) {
      if (pod.assumed && pod.assume_time_ns < settled_before) {
        out.push_back({uid, pod.namespace_name + "/" + pod.name, pod.assume_time_ns});
      }
    }
    return out;
  });
  if (!settled.empty()) {
    std::lock_guard lock(pods_mutex_);
    std::erase_if(settled, [&](const Settled& pod) {
      const auto it = pods_.find(pod.key);
      return it != pods_.end() && it->second.uid == pod.uid;  // known: the TTL decides
    });
  }
  std::vector<std::string> dropped;
  const auto expired = store_.write([&](core::ClusterModel& model, core::PlacementPolicy&) {
    for (const auto& uid : deleted) {
      if (const core::PodAllocation* held = model.find_pod(uid); held != nullptr && held->assumed) {
        model.remove_pod(uid);
        dropped.push_back(uid);
      }
    }
    for (const auto& pod : settled) {
      // Unless the watch confirmed it meanwhile (then it is no longer assumed).
      if (const core::PodAllocation* held = model.find_pod(pod.uid);
          held != nullptr && held->assumed && held->assume_time_ns == pod.assume_time_ns) {
        model.remove_pod(pod.uid);
        dropped.push_back(pod.uid);
      }
    }
    auto uids = model.expire_assumed(deadline);
    // Counted with the change, so that whoever sees the reservation gone also sees the count.
    expired_assumptions_ += uids.size();
    return uids;
  });
  for (const auto& uid : dropped) {
    spdlog::info("dropped the bind reservation of pod uid {}: the pod was deleted while being bound", uid);
  }
  for (const auto& uid : expired) {
    spdlog::warn("bind reservation of pod uid {} expired: the API server never showed it bound", uid);
  }
  return expired.size() + dropped.size();
}

void ClusterSync::publish_sync_metrics() {
  // Metrics counts events one by one; hand it what happened since the last call.
  const Counters now = counters();
  auto publish = [this](std::string_view resource, const apiclient::ReflectorCounters& current,
                        apiclient::ReflectorCounters& last) {
    for (auto n = last.watch_restarts; n < current.watch_restarts; ++n) metrics_.count_watch_restart(resource);
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
  return {nodes_->counters(), pods_reflector_->counters(), configmaps_->counters(), parse_errors_.load(),
          expired_assumptions_.load()};
}

void attach_inspect_sources(const ClusterSync& sync, extender::HttpServerOptions& http) {
  http.pod_phase = [&sync](std::string_view uid, std::string_view namespace_name,
                           std::string_view name) -> std::optional<std::string> {
    const auto pod = sync.cached_pod(namespace_name, name);
    if (!pod || pod->uid != uid) return std::nullopt;  // another pod now has the name
    return pod->phase;
  };
  http.config_warnings = [&sync] { return sync.config_warnings().all(); };
}

}  // namespace gpushare::sync
