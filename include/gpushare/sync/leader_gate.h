#pragma once
// The gate that lets only a caught-up leader bind, on top of apiclient::LeaderElector:
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
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "gpushare/apiclient/api_client.h"
#include "gpushare/apiclient/lease_elector.h"
#include "gpushare/service/model_store.h"
#include "gpushare/sync/cluster_sync.h"

namespace gpushare::sync {

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
  LeaderGate(apiclient::ApiClient& client, const ClusterSync& sync,
             const service::ModelStore& store, apiclient::LeaderElectionConfig config,
             LeaderGateOptions options = {});
  ~LeaderGate();
  LeaderGate(const LeaderGate&) = delete;
  LeaderGate& operator=(const LeaderGate&) = delete;

  void start();
  // See apiclient::LeaderElector::stop. Call after the HTTP server has stopped and binds in flight
  // ended.
  void stop(bool release = true);
  void abandon() { stop(false); }

  // "" when this instance may bind (leader, caught up); else why not, for /readyz and bind.
  std::string not_ready_reason() const;
  bool ready() const { return not_ready_reason().empty(); }
  // How long a bind started now may take; nullopt if a bind must not start.
  std::optional<std::chrono::milliseconds> bind_budget() const;

  apiclient::LeaderElector& elector() { return elector_; }
  const apiclient::LeaderElector& elector() const { return elector_; }
  std::uint64_t catch_ups() const { return catch_ups_.load(); }

 private:
  void run_catch_up(std::stop_token stop);
  // Lists the bound pods and waits for the model to hold them; true when caught up.
  bool catch_up(std::uint64_t term, std::stop_token stop);
  bool current(std::uint64_t term) const { return elector_.leadership_term() == term; }
  void wake();

  apiclient::ApiClient& client_;
  const ClusterSync& sync_;
  const service::ModelStore& store_;
  LeaderGateOptions options_;
  std::chrono::milliseconds bind_margin_;

  mutable std::mutex mutex_;
  std::condition_variable_any wake_;
  std::uint64_t caught_up_term_ = 0;  // the leadership term we caught up in (0 = none)
  std::uint64_t wakeups_ = 0;
  std::atomic<std::uint64_t> catch_ups_{0};
  std::mutex stop_mutex_;  // serializes start/stop
  apiclient::LeaderElector elector_;
  std::jthread catch_up_thread_;
};

}  // namespace gpushare::sync
