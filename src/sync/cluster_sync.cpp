#include "gpushare/sync/cluster_sync.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <string_view>
#include <utility>

#include "gpushare/service/read_back.h"
#include "watch_handler.h"

namespace gpushare::sync {

ClusterSync::ClusterSync(apiclient::ApiClient& client, service::ModelStore& store,
                         metrics::MetricRegistry& metrics, SyncOptions options)
    : client_(client),
      store_(store),
      metrics_(metrics),
      reservation_metrics_(metrics),
      options_(std::move(options)) {
  node_handler_ = make_node_handler();
  pod_handler_ = make_pod_handler();
  configmap_handler_ = make_configmap_handler();
  const auto& tune = options_.tune_reflector;
  nodes_ = make_reflector(client_, "/api/v1/nodes", "nodes", tune, *node_handler_);
  pods_reflector_ = make_reflector(client_, "/api/v1/pods", "pods", tune, *pod_handler_);
  configmaps_ = make_reflector(
      client_, fmt::format("/api/v1/namespaces/{}/configmaps", options_.names.unhealthy_namespace),
      "configmaps", tune, *configmap_handler_);
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
    // list/watch progress: during an API-server outage it stops moving, so the outage shows.
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
