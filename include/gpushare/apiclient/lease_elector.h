#pragma once
// High availability: leader election on a coordination.k8s.io/v1 Lease, as client-go's
// leaderelection package does it (kube-scheduler's --leader-elect flags), and the gate that lets
// only a caught-up leader bind.
//
// LeaderElector campaigns for the Lease: it acquires it when it is free, expired (no renewal
// observed for leaseDurationSeconds, measured on our own monotonic clock, so clocks need not
// agree) or already ours, and renews it every retry period with optimistic concurrency (the
// Lease's resourceVersion). If no renewal succeeds for the renew deadline it steps down. On
// stop it gives the Lease up (holder "") so a follower takes over at its next retry.
//
// LeaderGate adds what a scheduler extender needs on top:
//  * binds are answered only by the leader, and only once it has caught up: a new leader first
//    lists the bound pods (a consistent read) and waits until its model holds every one of them,
//    so it never chooses a GPU without seeing the old leader's binds;
//  * a bind's API call never outlives the Lease: its time-out is cut to what is left of our
//    lease (renewal sent + lease duration, minus a margin), so once a follower may take over,
//    no write of ours can still be in flight from an earlier decision (up to the API server's
//    own handling of a request whose client gave up, which no Kubernetes client can fence);
//  * readiness (/readyz) is "the caught-up leader", so the Service routes to it.

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "gpushare/apiclient/api_client.h"
#include "gpushare/extender/metrics.h"
#include "gpushare/extender/model_store.h"
#include "gpushare/extender/pod_binder.h"
#include "gpushare/sync/api_pod_binder.h"
#include "gpushare/sync/cluster_sync.h"

namespace gpushare::sync {

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

class LeaderElector;
// The elector's state as /metrics reports it.
extender::Metrics::LeaderElection leader_election_metrics(const LeaderElector& elector);

class LeaderElector {
 public:
  // Called on the elector's thread; must return quickly.
  struct Callbacks {
    std::function<void()> on_started_leading;
    std::function<void()> on_stopped_leading;
    std::function<void(const std::string& holder)> on_new_leader;  // any change of holder
  };
  struct Counters {
    std::uint64_t acquisitions = 0;  // times we became leader
    std::uint64_t renewals = 0;      // successful renewals while leader
    std::uint64_t failed_attempts = 0;  // acquire/renew attempts that did not succeed
    std::uint64_t lost = 0;          // step-downs because the renew deadline passed
    std::uint64_t releases = 0;      // leases given up on stop
  };

  // Throws std::invalid_argument if validate(config) fails. `client` must outlive this.
  LeaderElector(apiclient::ApiClient& client, LeaderElectionConfig config, Callbacks callbacks = {});
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
  bool write(const Record& record, bool create, std::chrono::milliseconds timeout, std::stop_token stop);
  void set_observed(const Record& record, Time when);
  void become_leader(Time sent);
  void renewed(Time sent);
  void step_down(const std::string& why);
  bool wait(std::chrono::milliseconds duration, std::stop_token stop);
  std::string lease_path(bool collection = false) const;

  apiclient::ApiClient& client_;
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

struct LeaderGateOptions {
  // Kept between the end of a bind's API call and the lease's expiry (clock-rate differences,
  // the follower's reaction time). Also the least time a bind is started with.
  // Default: min(500 ms, lease duration / 10).
  std::optional<std::chrono::milliseconds> bind_margin;
  // A new leader waits this long for its model to show the bound pods it listed before it
  // lists again.
  std::chrono::milliseconds catch_up_poll_limit{5000};
};

class LeaderGate {
 public:
  // `client`, `sync` and `store` must outlive the gate. Pods are parsed with sync.names().
  LeaderGate(apiclient::ApiClient& client, const ClusterSync& sync, const extender::ModelStore& store,
             LeaderElectionConfig config, LeaderGateOptions options = {});
  ~LeaderGate();
  LeaderGate(const LeaderGate&) = delete;
  LeaderGate& operator=(const LeaderGate&) = delete;

  void start();
  // See LeaderElector::stop. Call after the HTTP server has stopped and binds in flight ended.
  void stop(bool release = true);
  void abandon() { stop(false); }

  // "" when this instance may bind (leader, caught up); else why not, for /readyz and bind.
  std::string not_ready_reason() const;
  bool ready() const { return not_ready_reason().empty(); }
  // How long a bind started now may take; nullopt if a bind must not start.
  std::optional<std::chrono::milliseconds> bind_budget() const;

  LeaderElector& elector() { return elector_; }
  const LeaderElector& elector() const { return elector_; }
  std::uint64_t catch_ups() const { return catch_ups_.load(); }

 private:
  void run_catch_up(std::stop_token stop);
  // Lists the bound pods and waits for the model to hold them; true when caught up.
  bool catch_up(std::uint64_t term, std::stop_token stop);
  bool current(std::uint64_t term) const { return elector_.leadership_term() == term; }
  void wake();

  apiclient::ApiClient& client_;
  const ClusterSync& sync_;
  const extender::ModelStore& store_;
  LeaderGateOptions options_;
  std::chrono::milliseconds bind_margin_;

  mutable std::mutex mutex_;
  std::condition_variable_any wake_;
  std::uint64_t caught_up_term_ = 0;  // the leadership term we caught up in (0 = none)
  std::uint64_t wakeups_ = 0;
  std::atomic<std::uint64_t> catch_ups_{0};
  std::mutex stop_mutex_;  // serializes start/stop
  LeaderElector elector_;
  std::jthread catch_up_thread_;
};

// The binder in HA mode: refuses unless the gate says this instance is the caught-up leader,
// and bounds each bind's API call by what is left of the lease.
class LeaderBinder final : public extender::PodBinder {
 public:
  LeaderBinder(ApiPodBinder& inner, const LeaderGate& gate, std::chrono::milliseconds bind_timeout);

  std::optional<kube::PodInfo> find_pod(std::string_view namespace_name, std::string_view name) override {
    return inner_.find_pod(namespace_name, name);
  }
  extender::BindOutcome bind(const kube::PodInfo& pod, std::string_view node,
                             const std::map<std::string, std::string>& annotations) override;
  bool confirms_asynchronously() const override { return inner_.confirms_asynchronously(); }
  // Reading is not binding: followers may read too (a retry is judged on the truth anywhere).
  ReadBack read_back(std::string_view namespace_name, std::string_view name) override {
    return inner_.read_back(namespace_name, name);
  }
  std::uint64_t refused() const { return refused_.load(); }

 private:
  ApiPodBinder& inner_;
  const LeaderGate& gate_;
  std::chrono::milliseconds bind_timeout_;
  std::atomic<std::uint64_t> refused_{0};
};

}  // namespace gpushare::sync
