#pragma once
// Prometheus text-format metrics, hand-written: counters and histograms with bounded label sets.
// Thread-safe. Gauges that describe the model are rendered from a snapshot at scrape time.

#include <array>
#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gpushare/core/cluster_model.h"
#include "gpushare/core/reservation_ledger.h"
#include "gpushare/extender/config_warnings.h"

namespace gpushare::extender {

// What /metrics reports about the model, copied out under the store's shared lock so that
// formatting the text happens after the lock is released. Labels stay bounded: one series per
// GPU node and per GPU; CPU-only nodes are left out.
struct GpuGauge {
  int index = 0;
  core::Units capacity = 0;
  core::Units allocated = 0;
  bool healthy = true;
};

struct NodeGauge {
  std::string name;
  bool unschedulable = false;
  bool misconfigured = false;
  core::Units capacity = 0;
  core::Units allocated = 0;  // includes pods bound without a GPU index
  std::vector<GpuGauge> gpus;
};

struct ModelGauges {
  std::vector<NodeGauge> nodes;  // sorted by name
  std::size_t pods = 0;          // pods holding GPU memory
  std::size_t assumed_pods = 0;  // bound by us, not yet seen bound by the API server
  // Reservations by ledger state (binding, accepted, unresolved).
  std::size_t reservations_binding = 0;
  std::size_t reservations_accepted = 0;
  std::size_t reservations_unresolved = 0;
  core::Units capacity = 0;
  core::Units allocated = 0;
};

// Call with the model under the store's (shared) lock.
ModelGauges model_gauges(const core::ClusterModel& model);
ModelGauges model_gauges(const core::ClusterModel& model, const core::ReservationLedger& ledger);

class Histogram {
 public:
  static constexpr std::array<double, 14> kBuckets{0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005,
                                                   0.01,   0.025,   0.05,   0.1,   0.25,   0.5,
                                                   1,      5};
  void observe(double seconds);
  void render(std::string& out, std::string_view name, std::string_view labels) const;

 private:
  std::array<std::atomic<std::uint64_t>, kBuckets.size()> buckets_{};
  std::atomic<std::uint64_t> count_{0};
  std::atomic<std::uint64_t> sum_micros_{0};
};

class Metrics {
 public:
  // One finished HTTP request on an extender verb (filter, prioritize, bind, preempt, inspect...).
  void observe_request(std::string_view verb, int status, double seconds);
  // A node rejected by filter, by FitStatus kind (a small fixed set).
  void count_filter_rejection(std::string_view kind);
  // A bind's outcome: success, no_fit, unknown_node, pod_not_found, api_error, bad_request...
  void count_bind(std::string_view outcome);
  // Sync events from the API-server reflectors, by resource.
  void count_watch_restart(std::string_view resource);
  void count_relist(std::string_view resource);
  // A reservation that ended (kConfirmed or kReleased; others are not counted), by the evidence
  // that ended it: bind_call, watch, list, read_back.
  void count_reservation_end(core::ReservationOutcome outcome, std::string_view evidence);
  // Seconds each reflector's list/watch has been failing without a success (0: healthy); set by
  // live mode's housekeeping.
  void set_sync_failing(std::string_view resource, std::int64_t seconds);
  void set_last_sync(std::int64_t unix_seconds) { last_sync_seconds_ = unix_seconds; }
  // What /readyz says (synced and, with --leader-elect, the caught-up leader); set per scrape.
  void set_ready(bool ready) { ready_ = ready; }
  // The HTTP server's connections; set per scrape.
  struct HttpConnections {
    std::size_t served = 0;   // open connections
    std::size_t waiting = 0;  // a request buffered, waiting for a thread (all --http-threads busy)
    std::size_t limit = 0;    // --max-connections
  };
  void set_http_connections(HttpConnections connections) {
    http_served_ = connections.served;
    http_waiting_ = connections.waiting;
    http_limit_ = connections.limit;
  }

  // Configuration mistakes standing now, by kind (ConfigWarnings::count_by_kind); set on change.
  void set_config_warnings(std::map<std::string, std::size_t> by_kind);

  // --leader-elect only (the series are absent without it); set per scrape.
  struct LeaderElection {
    bool leader = false;              // holds the Lease now
    std::uint64_t acquisitions = 0;   // times this replica became leader
    std::uint64_t lost = 0;           // step-downs: no renewal succeeded within the renew deadline
    std::uint64_t failed_attempts = 0;  // acquire or renew attempts that did not succeed
  };
  void set_leader_election(LeaderElection state);

  // Everything above in Prometheus text format (version 0.0.4), plus the model's gauges when
  // given.
  std::string render() const { return render(nullptr); }
  std::string render(const ModelGauges* model) const;

 private:
  using LabelKey = std::vector<std::string>;
  struct Counter {
    std::map<LabelKey, std::uint64_t> values;
  };
  void increment(Counter& counter, LabelKey labels);
  std::optional<LeaderElection> leader_election() const;

  mutable std::mutex mutex_;  // guards the counter maps and the histogram map's shape
  Counter requests_;
  Counter filter_rejections_;
  Counter binds_;
  Counter watch_restarts_;
  Counter relists_;
  Counter reservations_ended_;
  std::map<std::string, std::int64_t, std::less<>> sync_failing_;  // guarded by mutex_
  std::map<std::string, Histogram, std::less<>> latency_;  // per verb; nodes are stable
  std::atomic<std::int64_t> last_sync_seconds_{0};
  std::atomic<bool> ready_{false};
  std::optional<LeaderElection> leader_election_;  // guarded by mutex_
  std::map<std::string, std::size_t> config_warnings_ =
      ConfigWarnings().count_by_kind();  // guarded by mutex_
  std::atomic<std::size_t> http_served_{0};
  std::atomic<std::size_t> http_waiting_{0};
  std::atomic<std::size_t> http_limit_{0};
};

}  // namespace gpushare::extender
