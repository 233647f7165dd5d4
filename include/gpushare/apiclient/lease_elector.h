#pragma once
// High availability: leader election on a coordination.k8s.io/v1 Lease, as client-go's
// leaderelection package does it (kube-scheduler's --leader-elect flags). What a scheduler
// extender adds on top (binding only once caught up) is sync::LeaderGate.
//
// LeaderElector campaigns for the Lease: it acquires it when it is free, expired (no renewal
// observed for leaseDurationSeconds, measured on our own monotonic clock, so clocks need not
// agree) or already ours, and renews it every retry period with optimistic concurrency (the
// Lease's resourceVersion). If no renewal succeeds for the renew deadline it steps down. On
// stop it gives the Lease up (holder "") so a follower takes over at its next retry.

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "gpushare/apiclient/api_client.h"

namespace gpushare::apiclient {

struct LeaderElectionConfig {
  std::string lease_namespace = "kube-system";
  std::string lease_name = "gpushare-extender";
  std::string identity;  // empty: default_leader_identity()
  // kube-scheduler's defaults. The Lease holds whole seconds (leaseDurationSeconds).
  std::chrono::milliseconds lease_duration{15000};
  std::chrono::milliseconds renew_deadline{10000};
  std::chrono::milliseconds retry_period{2000};
  bool release_on_stop = true;
};

// Empty if usable, else why not (client-go's rules: lease > renew deadline > 1.2 x retry period,
// lease at least 1 s, names not empty).
std::string validate(const LeaderElectionConfig& config);

// hostname + "_" + a random suffix, as kube-scheduler does.
std::string default_leader_identity();

class LeaderElector {
 public:
  // Called on the elector's thread; must return quickly.
  struct Callbacks {
    std::function<void()> on_started_leading;
    std::function<void()> on_stopped_leading;
    std::function<void(const std::string& holder)> on_new_leader;  // any change of holder
  };
  struct Counters {
    std::uint64_t acquisitions = 0;     // times we became leader
    std::uint64_t renewals = 0;         // successful renewals while leader
    std::uint64_t failed_attempts = 0;  // acquire/renew attempts that did not succeed
    std::uint64_t lost = 0;             // step-downs because the renew deadline passed
    std::uint64_t releases = 0;         // leases given up on stop
  };

  // Throws std::invalid_argument if validate(config) fails. `client` must outlive this.
  LeaderElector(ApiClient& client, LeaderElectionConfig config, Callbacks callbacks = {});
  ~LeaderElector();  // stop()
  LeaderElector(const LeaderElector&) = delete;
  LeaderElector& operator=(const LeaderElector&) = delete;

  void start();  // at most once
  // Stops campaigning. A leader steps down and, if `release` (and config.release_on_stop), gives
  // the Lease up. Idempotent; safe from any thread but the elector's own callbacks.
  void stop(bool release = true);
  // Stops without touching the Lease, like a crashed process: followers wait for it to expire.
  void abandon() { stop(false); }

  // True while we hold the Lease and it cannot have expired for anyone else yet.
  bool is_leader() const;
  // While leader: the instant after which a follower may take over (renewal sent + lease
  // duration). nullopt when not leader.
  std::optional<std::chrono::steady_clock::time_point> leadership_valid_until() const;
  // While leader: which of our terms this is (1 for the first acquisition, then 2...).
  std::optional<std::uint64_t> leadership_term() const;
  const std::string& identity() const { return config_.identity; }
  std::string observed_leader() const;  // holder last seen ("" = none / unknown)
  const LeaderElectionConfig& config() const { return config_; }
  Counters counters() const;

 private:
  struct Record {
    std::string holder;
    int lease_duration_seconds = 0;
    std::string acquire_time;
    std::string renew_time;
    int transitions = 0;
  };

  void run(std::stop_token stop);
  using Time = std::chrono::steady_clock::time_point;
  // One client-go tryAcquireOrRenew: on success, when the winning write was sent. `timeout`
  // bounds each API call.
  std::optional<Time> try_acquire_or_renew(std::chrono::milliseconds timeout, std::stop_token stop);
  void release();
  enum class WriteOutcome { written, conflict, failed };  // conflict: 409, or 409-like on create
  WriteOutcome write(const Record& record, bool create, std::chrono::milliseconds timeout,
                     std::stop_token stop);
  void set_observed(const Record& record, Time when);
  void become_leader(Time sent);
  void renewed(Time sent);
  void step_down(const std::string& why);
  bool wait(std::chrono::milliseconds duration, std::stop_token stop);
  std::string lease_path(bool collection = false) const;

  ApiClient& client_;
  LeaderElectionConfig config_;
  Callbacks callbacks_;
  int lease_seconds_ = 0;

  // Elector thread only.
  nlohmann::json lease_;  // the Lease object as last read or written (carries resourceVersion)
  Record observed_;
  Time observed_time_{};  // when observed_ last changed, on our clock

  mutable std::mutex mutex_;
  std::condition_variable_any wake_;
  bool leader_ = false;
  Time valid_until_{};
  std::string observed_holder_;
  Counters counters_;
  bool release_on_stop_ = true;
  std::mutex stop_mutex_;  // serializes start/stop
  std::jthread thread_;
};

}  // namespace gpushare::apiclient
