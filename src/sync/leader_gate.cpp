#include "gpushare/sync/leader_gate.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <charconv>
#include <utility>
#include <vector>

#include "gpushare/apiclient/pager.h"
#include "gpushare/kube/pod_info.h"

namespace gpushare::sync {

using Clock = std::chrono::steady_clock;
using apiclient::Json;
using apiclient::LeaderElector;
using namespace std::chrono_literals;

namespace {

std::chrono::milliseconds ms(Clock::duration duration) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(duration);
}

// Compares two resourceVersions as numbers (what etcd-backed servers and the fake issue); false
// if either is not a number.
bool rv_at_least(const std::string& have, const std::string& want) {
  std::uint64_t a = 0, b = 0;
  auto [pa, ea] = std::from_chars(have.data(), have.data() + have.size(), a);
  auto [pb, eb] = std::from_chars(want.data(), want.data() + want.size(), b);
  if (ea != std::errc() || eb != std::errc() || pa != have.data() + have.size() ||
      pb != want.data() + want.size() || have.empty() || want.empty()) {
    return false;
  }
  return a >= b;
}

}  // namespace

LeaderGate::LeaderGate(apiclient::ApiClient& client, const ClusterSync& sync,
                       const service::ModelStore& store, apiclient::LeaderElectionConfig config,
                       LeaderGateOptions options)
    : client_(client),
      sync_(sync),
      store_(store),
      options_(options),
      bind_margin_(options.bind_margin.value_or(
          std::min<std::chrono::milliseconds>(500ms, config.lease_duration / 10))),
      elector_(client, std::move(config),
               LeaderElector::Callbacks{[this] { wake(); }, [this] { wake(); }, nullptr}) {}

LeaderGate::~LeaderGate() {
  stop(true);
}

void LeaderGate::wake() {
  {
    std::lock_guard lock(mutex_);
    ++wakeups_;
  }
  wake_.notify_all();
}

void LeaderGate::start() {
  std::lock_guard stop_lock(stop_mutex_);
  if (catch_up_thread_.joinable()) return;
  catch_up_thread_ = std::jthread([this](std::stop_token stop) { run_catch_up(stop); });
  elector_.start();
}

void LeaderGate::stop(bool release) {
  std::lock_guard stop_lock(stop_mutex_);
  // The elector first: it must stop leading before anything else lets go.
  elector_.stop(release);
  if (catch_up_thread_.joinable()) {
    catch_up_thread_.request_stop();
    wake_.notify_all();
    catch_up_thread_.join();
  }
}

std::string LeaderGate::not_ready_reason() const {
  const auto term = elector_.leadership_term();
  if (!term) {
    const std::string holder = elector_.observed_leader();
    return holder.empty() || holder == elector_.identity()
               ? std::string("not the leader (no leader yet)")
               : fmt::format("not the leader (the leader is {})", holder);
  }
  std::lock_guard lock(mutex_);
  if (caught_up_term_ != *term) return "new leader, catching up with the binds of the previous one";
  return {};
}

std::optional<std::chrono::milliseconds> LeaderGate::bind_budget() const {
  const auto until = elector_.leadership_valid_until();
  if (!until) return std::nullopt;
  const auto left = ms(*until - Clock::now()) - bind_margin_;
  if (left < bind_margin_) return std::nullopt;
  return left;
}

void LeaderGate::run_catch_up(std::stop_token stop) {
  while (!stop.stop_requested()) {
    std::optional<std::uint64_t> term;
    {
      std::unique_lock lock(mutex_);
      term = elector_.leadership_term();
      if (!term || caught_up_term_ == *term) {
        // Woken by leadership changes; also polls, since a term can end without a callback.
        const std::uint64_t seen = wakeups_;
        wake_.wait_for(lock, stop, 200ms, [&] { return wakeups_ != seen; });
        continue;
      }
    }
    const auto started = Clock::now();
    if (catch_up(*term, stop)) {
      std::lock_guard lock(mutex_);
      if (current(*term)) {
        caught_up_term_ = *term;
        ++catch_ups_;
        spdlog::info("leader election: caught up in {} ms; answering binds",
                     ms(Clock::now() - started).count());
      }
    }
  }
}

bool LeaderGate::catch_up(std::uint64_t term, std::stop_token stop) {
  // 1. The model must have had its first full lists.
  while (!sync_.synced()) {
    if (stop.stop_requested() || !current(term)) return false;
    std::this_thread::sleep_for(20ms);
  }
  // 2. Every pod bound right now that holds GPU memory, by a consistent (quorum) read, paged.
  // Pods holding only CPU and memory are in the model too, but a bind cannot double-book them
  // (filter and bind judge GPUs only), so the new leader does not wait for them.
  std::vector<std::pair<std::string, std::string>> bound;  // uid, node
  apiclient::PagerOptions pager;
  pager.query = {{"fieldSelector", "spec.nodeName!="}};
  pager.timeout = elector_.config().renew_deadline;
  pager.stop = stop;
  auto listed = apiclient::list_paged(
      client_, "/api/v1/pods", pager, [&] { bound.clear(); },
      [&](const json::Value& item) {
        try {
          const kube::PodInfo pod = kube::decode_pod(item, sync_.names());
          if (auto allocation = kube::allocation_of(pod); allocation && allocation->holds_gpu()) {
            bound.emplace_back(pod.uid, allocation->node);
          }
        } catch (const std::exception&) {
          // The sync ignores it too (and counts it); it holds nothing in either model.
        }
      });
  if (!listed) {
    if (!listed.error().is_stopped())
      spdlog::warn("leader election: listing bound pods: {}", listed.error().describe());
    std::this_thread::sleep_for(
        std::min<std::chrono::milliseconds>(elector_.config().retry_period, 500ms));
    return false;
  }
  const std::string list_rv = listed.value().resource_version;

  // 3. Wait until the model holds them all, or has seen the pod stream past the list.
  const auto deadline = Clock::now() + options_.catch_up_poll_limit;
  std::size_t missing = bound.size();
  while (!stop.stop_requested() && current(term)) {
    missing = store_.read([&](const core::ClusterModel& model, const core::PlacementPolicy&) {
      std::size_t count = 0;
      for (const auto& [uid, node] : bound) {
        const core::PodAllocation* held = model.find_pod(uid);
        if (held == nullptr || held->node != node) ++count;
      }
      return count;
    });
    if (missing == 0 || rv_at_least(sync_.pods_resource_version(), list_rv)) {
      spdlog::info(
          "leader election: the model holds all {} bound GPU pods (list at resourceVersion {})",
          bound.size(), list_rv);
      return true;
    }
    if (Clock::now() >= deadline) break;
    std::this_thread::sleep_for(10ms);
  }
  if (!stop.stop_requested() && current(term)) {
    spdlog::warn("leader election: the model still lacks {} of {} bound GPU pods; listing again",
                 missing, bound.size());
  }
  return false;
}

}  // namespace gpushare::sync
