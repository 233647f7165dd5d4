#pragma once
// Prometheus metrics on prometheus-cpp: counters, gauges and histograms with bounded label sets
// live in a prometheus::Registry; gauges that describe the model are built from a snapshot at
// scrape time, so a node's series go when the node goes. Thread-safe.

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "gpushare/core/cluster_model.h"
#include "gpushare/core/reservation_ledger.h"
#include "gpushare/extender/config_warnings.h"

namespace prometheus {
class Registry;
}

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

// gpushare_request_duration_seconds' upper bounds (100 µs to 5 s); dashboards read these `le`s.
inline constexpr std::array<double, 14> kRequestDurationBuckets{
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 5};

class Metrics {
 public:
  Metrics();
  ~Metrics();
  Metrics(const Metrics&) = delete;
  Metrics& operator=(const Metrics&) = delete;

  // One finished HTTP request on an extender verb (filter, prioritize, bind, preempt, inspect...).
  void observe_request(std::string_view verb, int status, double seconds);
  // `count` nodes rejected by filter, by FitStatus kind (a small fixed set).
  void count_filter_rejection(std::string_view kind, std::uint64_t count = 1);
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
  void set_last_sync(std::int64_t unix_seconds);
  // What /readyz says (synced and, with --leader-elect, the caught-up leader); set per scrape.
  void set_ready(bool ready);
  // The HTTP server's connections; set per scrape.
  struct HttpConnections {
    std::size_t served = 0;   // open connections
    std::size_t waiting = 0;  // a request buffered, waiting for a thread (all --http-threads busy)
    std::size_t limit = 0;    // --max-connections
  };
  void set_http_connections(HttpConnections connections);

  // Configuration mistakes standing now, by kind (ConfigWarnings::count_by_kind); set on change.
  void set_config_warnings(std::map<std::string, std::size_t> by_kind);

  // --leader-elect only (the series are absent without it); set per scrape.
  struct LeaderElection {
    bool leader = false;             // holds the Lease now
    std::uint64_t acquisitions = 0;  // times this replica became leader
    std::uint64_t lost = 0;          // step-downs: no renewal succeeded within the renew deadline
    std::uint64_t failed_attempts = 0;  // acquire or renew attempts that did not succeed
  };
  void set_leader_election(LeaderElection state);

  // Everything above in Prometheus text format (version 0.0.4), plus the model's gauges when
  // given.
  std::string render() const { return render(nullptr); }
  std::string render(const ModelGauges* model) const;

  // The registry /metrics serialises: a component may register its own families here (names
  // start with gpushare_); they are rendered with the rest.
  prometheus::Registry& registry();

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace gpushare::extender
