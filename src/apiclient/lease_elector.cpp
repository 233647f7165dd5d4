#include "gpushare/apiclient/lease_elector.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <ctime>
#include <random>
#include <stdexcept>

#include "gpushare/apiclient/query.h"

namespace gpushare::apiclient {

using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

namespace {

// metav1.MicroTime: RFC 3339 with microseconds, UTC.
std::string micro_time_now() {
  const auto now = std::chrono::system_clock::now();
  const auto micros =
      std::chrono::duration_cast<std::chrono::microseconds>(now.time_since_epoch()).count();
  const std::time_t seconds = static_cast<std::time_t>(micros / 1'000'000);
  std::tm utc{};
  gmtime_r(&seconds, &utc);
  return fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:06}Z", utc.tm_year + 1900,
                     utc.tm_mon + 1, utc.tm_mday, utc.tm_hour, utc.tm_min, utc.tm_sec,
                     micros % 1'000'000);
}

std::string string_field(const Json& object, const char* key) {
  if (auto it = object.find(key); it != object.end() && it->is_string())
    return it->get<std::string>();
  return {};
}

int int_field(const Json& object, const char* key) {
  if (auto it = object.find(key); it != object.end() && it->is_number_integer())
    return it->get<int>();
  return 0;
}

std::chrono::milliseconds ms(Clock::duration duration) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(duration);
}

}  // namespace

std::string validate(const LeaderElectionConfig& config) {
  if (config.lease_namespace.empty() || config.lease_name.empty())
    return "the lease namespace and name must not be empty";
  if (config.lease_duration < 1s)
    return "the lease duration must be at least 1s (the Lease holds whole seconds)";
  if (config.lease_duration <= config.renew_deadline)
    return "the lease duration must be greater than the renew deadline";
  if (config.retry_period <= 0ms) return "the retry period must be positive";
  // client-go: renewDeadline > JitterFactor (1.2) * retryPeriod.
  if (config.renew_deadline * 10 <= config.retry_period * 12)
    return "the renew deadline must be greater than 1.2 x the retry period";
  return {};
}

std::string default_leader_identity() {
  char host[256] = {};
  if (gethostname(host, sizeof(host) - 1) != 0 || host[0] == '\0')
    std::snprintf(host, sizeof(host), "gpushare");
  std::random_device device;
  std::uniform_int_distribution<std::uint64_t> digits;
  return fmt::format("{}_{:012x}", host, digits(device) & 0xffffffffffffULL);
}

LeaderElector::LeaderElector(ApiClient& client, LeaderElectionConfig config, Callbacks callbacks)
    : client_(client), config_(std::move(config)), callbacks_(std::move(callbacks)) {
  if (const std::string problem = validate(config_); !problem.empty()) {
    throw std::invalid_argument("leader election: " + problem);
  }
  if (config_.identity.empty()) config_.identity = default_leader_identity();
  lease_seconds_ = static_cast<int>(
      std::chrono::duration_cast<std::chrono::seconds>(config_.lease_duration).count());
}

LeaderElector::~LeaderElector() {
  stop(true);
}

void LeaderElector::start() {
  std::lock_guard stop_lock(stop_mutex_);
  if (thread_.joinable()) return;
  spdlog::info("leader election: campaigning for lease {}/{} as {}", config_.lease_namespace,
               config_.lease_name, config_.identity);
  thread_ = std::jthread([this](std::stop_token stop) { run(stop); });
}

void LeaderElector::stop(bool release) {
  std::lock_guard stop_lock(stop_mutex_);
  if (!thread_.joinable()) return;
  {
    std::lock_guard lock(mutex_);
    release_on_stop_ = release && config_.release_on_stop;
  }
  thread_.request_stop();
  wake_.notify_all();
  thread_.join();
}

bool LeaderElector::is_leader() const {
  std::lock_guard lock(mutex_);
  return leader_ && Clock::now() < valid_until_;
}

std::optional<Clock::time_point> LeaderElector::leadership_valid_until() const {
  std::lock_guard lock(mutex_);
  if (!leader_ || Clock::now() >= valid_until_) return std::nullopt;
  return valid_until_;
}

std::optional<std::uint64_t> LeaderElector::leadership_term() const {
  std::lock_guard lock(mutex_);
  if (!leader_ || Clock::now() >= valid_until_) return std::nullopt;
  return counters_.acquisitions;
}

std::string LeaderElector::observed_leader() const {
  std::lock_guard lock(mutex_);
  return observed_holder_;
}

LeaderElector::Counters LeaderElector::counters() const {
  std::lock_guard lock(mutex_);
  return counters_;
}

std::string LeaderElector::lease_path(bool collection) const {
  return namespaced_path("/apis/coordination.k8s.io/v1", config_.lease_namespace, "leases",
                         collection ? std::string_view() : std::string_view(config_.lease_name));
}

bool LeaderElector::wait(std::chrono::milliseconds duration, std::stop_token stop) {
  std::unique_lock lock(mutex_);
  wake_.wait_for(lock, stop, duration, [] { return false; });
  return !stop.stop_requested();
}

void LeaderElector::set_observed(const Record& record, Time when) {
  observed_ = record;
  observed_time_ = when;
  bool changed = false;
  {
    std::lock_guard lock(mutex_);
    changed = observed_holder_ != record.holder;
    observed_holder_ = record.holder;
  }
  if (changed) {
    spdlog::info("leader election: lease {}/{} is held by {}", config_.lease_namespace,
                 config_.lease_name, record.holder.empty() ? "nobody" : record.holder);
    if (callbacks_.on_new_leader) callbacks_.on_new_leader(record.holder);
  }
}

LeaderElector::WriteOutcome LeaderElector::write(const Record& record, bool create,
                                                 std::chrono::milliseconds timeout,
                                                 std::stop_token stop) {
  Json spec = {{"holderIdentity", record.holder},
               {"leaseDurationSeconds", record.lease_duration_seconds},
               {"acquireTime", record.acquire_time},
               {"renewTime", record.renew_time},
               {"leaseTransitions", record.transitions}};
  RequestOptions options;
  options.retry = false;  // our own loop retries, within the renew deadline
  options.timeout = std::max(timeout, 1ms);
  options.stop = stop;
  Result<Json> result = [&]() -> Result<Json> {
    if (create) {
      Json lease = {
          {"apiVersion", "coordination.k8s.io/v1"},
          {"kind", "Lease"},
          {"metadata", {{"name", config_.lease_name}, {"namespace", config_.lease_namespace}}},
          {"spec", spec}};
      return client_.post(lease_path(true), lease, options);
    }
    Json lease = lease_;  // carries metadata.resourceVersion: a stale one gets 409
    lease["spec"] = spec;
    return client_.put(lease_path(), lease, options);
  }();
  if (!result) {
    SPDLOG_DEBUG("leader election: {} of lease failed: {}", create ? "create" : "update",
                 result.error().describe());
    if (result.error().is_conflict() || result.error().is_already_exists()) {
      spdlog::info("leader election: lost a race for lease {}/{}: {}", config_.lease_namespace,
                   config_.lease_name, result.error().message);
      return WriteOutcome::conflict;
    }
    if (!result.error().is_stopped()) {
      spdlog::warn("leader election: writing lease {}/{}: {}", config_.lease_namespace,
                   config_.lease_name, result.error().describe());
    }
    return WriteOutcome::failed;
  }
  lease_ = std::move(result.value());
  return WriteOutcome::written;
}

std::optional<LeaderElector::Time> LeaderElector::try_acquire_or_renew(
    std::chrono::milliseconds timeout, std::stop_token stop) {
  const Time now = Clock::now();
  const std::string stamp = micro_time_now();
  Record desired{config_.identity, lease_seconds_, stamp, stamp, 0};
  auto valid = [&](const Record& record) {
    return observed_time_ + std::chrono::seconds(record.lease_duration_seconds) > now;
  };

  // 1. The leader's fast path: update without reading first.
  if (observed_.holder == config_.identity && valid(observed_) && lease_.is_object()) {
    desired.acquire_time = observed_.acquire_time;
    desired.transitions = observed_.transitions;
    const Time sent = Clock::now();
    if (write(desired, false, timeout, stop) == WriteOutcome::written) {
      set_observed(desired, Clock::now());
      return sent;
    }
    // Fall back to the slow path (the lease may have changed under us).
  }

  // 2. Read the lease, or create it.
  RequestOptions options;
  options.retry = false;
  options.timeout = std::max(ms(timeout - (Clock::now() - now)), 1ms);
  options.stop = stop;
  auto got = client_.get(lease_path(), options);
  if (!got) {
    if (!got.error().is_not_found()) {
      if (!got.error().is_stopped()) {
        spdlog::warn("leader election: reading lease {}/{}: {}", config_.lease_namespace,
                     config_.lease_name, got.error().describe());
      }
      return std::nullopt;
    }
    const Time sent = Clock::now();
    if (write(desired, true, timeout, stop) != WriteOutcome::written) return std::nullopt;
    set_observed(desired, Clock::now());
    return sent;
  }
  lease_ = std::move(got.value());
  const Json empty = Json::object();
  const Json& spec = lease_.contains("spec") && lease_["spec"].is_object() ? lease_["spec"] : empty;
  Record current{string_field(spec, "holderIdentity"), int_field(spec, "leaseDurationSeconds"),
                 string_field(spec, "acquireTime"), string_field(spec, "renewTime"),
                 int_field(spec, "leaseTransitions")};
  // 3. Expiry is measured from when *we* saw the record change, never from its timestamps.
  const bool changed = current.holder != observed_.holder ||
                       current.renew_time != observed_.renew_time ||
                       current.acquire_time != observed_.acquire_time ||
                       current.transitions != observed_.transitions ||
                       current.lease_duration_seconds != observed_.lease_duration_seconds;
  if (changed) set_observed(current, Clock::now());
  if (!current.holder.empty() && current.holder != config_.identity && valid(observed_)) {
    return std::nullopt;  // held by someone else and not expired
  }
  // 4. Take it over (or renew it if it is ours).
  if (current.holder == config_.identity) {
    desired.acquire_time = current.acquire_time;
    desired.transitions = current.transitions;
  } else {
    desired.transitions = current.transitions + 1;
  }
  const Time sent = Clock::now();
  if (write(desired, false, std::max(ms(timeout - (sent - now)), 1ms), stop) !=
      WriteOutcome::written)
    return std::nullopt;
  set_observed(desired, Clock::now());
  return sent;
}

void LeaderElector::become_leader(Time sent) {
  {
    std::lock_guard lock(mutex_);
    leader_ = true;
    valid_until_ = sent + std::chrono::seconds(lease_seconds_);
    ++counters_.acquisitions;
  }
  spdlog::info("leader election: {} became the leader of {}/{}", config_.identity,
               config_.lease_namespace, config_.lease_name);
  if (callbacks_.on_started_leading) callbacks_.on_started_leading();
}

void LeaderElector::renewed(Time sent) {
  std::lock_guard lock(mutex_);
  valid_until_ = std::max(valid_until_, sent + std::chrono::seconds(lease_seconds_));
  ++counters_.renewals;
}

void LeaderElector::step_down(const std::string& why) {
  {
    std::lock_guard lock(mutex_);
    if (!leader_) return;
    leader_ = false;
  }
  spdlog::warn("leader election: {} stopped leading: {}", config_.identity, why);
  if (callbacks_.on_stopped_leading) callbacks_.on_stopped_leading();
}

void LeaderElector::release() {
  // Like client-go: holder "", a 1 s lease, so that followers take over at their next retry.
  const Time started = Clock::now();
  auto left = [&] { return std::max(ms(config_.renew_deadline - (Clock::now() - started)), 1ms); };
  const std::string stamp = micro_time_now();
  Record released{"", 1, stamp, stamp, observed_.transitions};
  WriteOutcome outcome = write(released, false, left(), std::stop_token());
  if (outcome == WriteOutcome::conflict) {
    // Our copy is stale, most often because the stop cut a renewal whose PUT the server had
    // already applied. Read the lease again: if it is still ours, release that version.
    RequestOptions options;
    options.retry = false;
    options.timeout = left();
    auto got = client_.get(lease_path(), options);
    if (got && got.value().contains("spec") && got.value()["spec"].is_object() &&
        string_field(got.value()["spec"], "holderIdentity") == config_.identity) {
      lease_ = std::move(got.value());
      released.transitions = int_field(lease_["spec"], "leaseTransitions");
      outcome = write(released, false, left(), std::stop_token());
    } else if (got) {
      spdlog::info("leader election: lease {}/{} is no longer ours; nothing to release",
                   config_.lease_namespace, config_.lease_name);
      return;
    }
  }
  if (outcome == WriteOutcome::written) {
    set_observed(released, Clock::now());
    std::lock_guard lock(mutex_);
    ++counters_.releases;
    spdlog::info("leader election: released lease {}/{}", config_.lease_namespace,
                 config_.lease_name);
  } else {
    spdlog::warn("leader election: could not release lease {}/{}; followers wait for it to expire",
                 config_.lease_namespace, config_.lease_name);
  }
}

void LeaderElector::run(std::stop_token stop) {
  std::mt19937_64 random{std::random_device{}()};
  auto count_failure = [this] {
    std::lock_guard lock(mutex_);
    ++counters_.failed_attempts;
  };
  while (!stop.stop_requested()) {
    bool leading = false;
    {
      std::lock_guard lock(mutex_);
      leading = leader_;
    }
    if (!leading) {
      // Acquire: try every retry period, jittered by up to 1.2 periods (wait.JitterUntil).
      if (auto sent = try_acquire_or_renew(config_.renew_deadline, stop)) {
        become_leader(*sent);
        continue;
      }
      count_failure();
      const double jitter = std::uniform_real_distribution<double>(0.0, 1.2)(random);
      auto pause = ms(config_.retry_period +
                      std::chrono::duration_cast<Clock::duration>(config_.retry_period * jitter));
      // If the holder's lease (as we observed it) runs out before the next jittered attempt, try
      // right then instead: the same acquisition rule as client-go, without waiting up to 2.2
      // retry periods past the expiry. No extra calls while the holder keeps renewing, since each
      // attempt then sees a new renewTime and pushes the expiry a lease duration ahead.
      if (!observed_.holder.empty() && observed_.holder != config_.identity) {
        const Time expiry =
            observed_time_ + std::chrono::seconds(observed_.lease_duration_seconds) + 5ms;
        const auto until_expiry = ms(expiry - Clock::now());
        if (until_expiry > 0ms && until_expiry < pause) pause = until_expiry;
      }
      if (!wait(pause, stop)) break;
      continue;
    }
    // Renew: every retry period; within one round, retry until the renew deadline passes.
    if (!wait(config_.retry_period, stop)) break;
    const Time deadline = Clock::now() + config_.renew_deadline;
    bool renewed_in_time = false;
    while (!stop.stop_requested()) {
      const auto left = ms(deadline - Clock::now());
      if (left <= 0ms) break;
      if (auto sent = try_acquire_or_renew(left, stop)) {
        renewed(*sent);
        renewed_in_time = true;
        break;
      }
      count_failure();
      if (!observed_.holder.empty() && observed_.holder != config_.identity) break;  // taken over
      if (!wait(std::min(config_.retry_period, std::max(ms(deadline - Clock::now()), 0ms)), stop))
        break;
    }
    if (stop.stop_requested()) break;
    if (!renewed_in_time) {
      {
        std::lock_guard lock(mutex_);
        ++counters_.lost;
      }
      step_down(observed_.holder != config_.identity && !observed_.holder.empty()
                    ? fmt::format("the lease is now held by {}", observed_.holder)
                    : std::string("could not renew the lease within the renew deadline"));
    }
  }
  bool release_now = false;
  bool leading = false;
  {
    std::lock_guard lock(mutex_);
    leading = leader_;
    release_now = release_on_stop_ && leader_ && Clock::now() < valid_until_;
  }
  if (release_now) release();
  if (leading)
    step_down(release_now ? "stopping (lease released)" : "stopping (lease left to expire)");
}

}  // namespace gpushare::apiclient
