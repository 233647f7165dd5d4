#pragma once
// Live-mode consolidation (--consolidate plan|evict): every interval, reads the opted-in pods and
// the PodDisruptionBudgets from the API server, plans on the model (core/consolidation_planner.h)
// and reports the plan (report(): GET /gpushare-scheduler/consolidation). In evict mode, and only
// while `may_act` says so (the caught-up leader with --leader-elect), it carries the plan out one
// pod at a time through the Eviction API:
//
//   hold the target's memory for the owner --> evict (UID precondition)
//   evict --201--> wait for the owner's replacement pod to be bound
//                            --429--> retry the same move after a back-off (doubling, capped)
//                            --404/409--> the pod is gone or was re-created: the plan stops
//   replacement bound on the planned GPU --> move done; the next move is planned afresh
//   replacement bound elsewhere, or none within `replacement_timeout` --> the plan stops
//
// The hold (core/consolidation_hold.h, in the model store) keeps the move's memory on the target
// GPU for the evicted pod's controller from just before the eviction until the replacement
// binds (anywhere), the plan stops (a refused eviction releases it until the retry), or
// `replacement_timeout` passes: filter and bind give that memory to no other pod, prioritize
// scores the target node top for the replacement and bind puts it on the target GPU. Holds live
// on this instance only: an instance that stops leading, or stops, releases its hold, and a new
// one starts with none (the model is the API server's, so nothing is oversubscribed).
//
// A stopped plan waits one interval before planning again. No move starts while an opted-in pod
// is being deleted or an owned one waits to be scheduled (younger than `replacement_timeout`),
// so an instance that starts while another's move is in flight (a restart, a new leader) waits
// for it instead of acting twice. Moves per hour are bounded (core::MoveBudget, in memory).
//
// Thread-safety: start/stop from one thread; report() and run_once() from any. One round runs at
// a time (round_mutex_); mutex_ guards the state report() reads. Neither is held while calling
// the API server; the model is read under the store's shared lock, and the exclusive one is
// taken only to place or release a hold.

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>

#include "gpushare/apiclient/api_client.h"
#include "gpushare/consolidation/consolidation_metrics.h"
#include "gpushare/consolidation/mobility.h"
#include "gpushare/core/consolidation_planner.h"
#include "gpushare/metrics/metric_registry.h"
#include "gpushare/service/model_store.h"

namespace gpushare::consolidation {

enum class Mode { kOff, kPlan, kEvict };
std::string_view to_string(Mode mode);
std::optional<Mode> mode_named(std::string_view name);

struct ConsolidatorOptions {
  Mode mode = Mode::kPlan;
  OptInRule opt_in;
  int max_moves_per_hour = 6;  // --consolidate-max-moves-per-hour
  int max_moves_per_plan = 4;
  int max_moves_per_gpu_freed = 2;
  std::chrono::milliseconds interval{60000};  // --consolidate-interval
  // How long an evicted pod's owner has to get its replacement bound before the plan stops.
  std::chrono::milliseconds replacement_timeout{300000};
  // While a move is in flight, rounds come this often.
  std::chrono::milliseconds poll{5000};
  // Back-off after a refused (429) or failed eviction: doubles from `retry_initial` to
  // `retry_max`.
  std::chrono::milliseconds retry_initial{5000};
  std::chrono::milliseconds retry_max{300000};
  // Whether this instance may evict now, and how long an eviction call may take (nullopt: it
  // may not). Default: always, with the client's time-out.
  std::function<std::optional<std::chrono::milliseconds>()> act_budget;
  // "" when the model is in step with the API server, else why not (no round plans then).
  std::function<std::string()> not_ready;
  // Unix seconds; injectable for tests.
  std::function<double()> now = [] {
    return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch())
        .count();
  };
  std::string component = "gpushare-extender";  // Events' source
};

class Consolidator {
 public:
  // `client`, `store` and `metrics` must outlive it.
  Consolidator(apiclient::ApiClient& client, service::ModelStore& store,
               metrics::MetricRegistry& metrics, ConsolidatorOptions options);
  ~Consolidator();
  Consolidator(const Consolidator&) = delete;
  Consolidator& operator=(const Consolidator&) = delete;

  void start();  // the rounds' thread
  void stop();

  // One round now: read, plan, and (evict mode, allowed to act) take the next step.
  void run_once();

  // The state as GET /gpushare-scheduler/consolidation answers it (JSON text): the last round's,
  // with the holds in force now. Takes mutex_, then the store's shared lock (not both at once).
  std::string report() const;

 private:
  struct Snapshot;
  struct ActiveMove {
    core::ConsolidationMove move;
    std::string namespace_name;
    std::string owner_uid;
    std::string owner;              // "Kind/name"
    bool owner_controller = false;  // the owner is the pod's controller: its replacement is held
    std::set<std::string> owner_pods_before;  // the owner's pods when the move began
    enum class Phase { kEvicting, kAwaitingReplacement } phase = Phase::kEvicting;
    double evicted_at = 0;
    double next_try = 0;
    int refusals = 0;
    bool held = false;  // a hold for the replacement is in the model store
  };

  std::optional<Snapshot> read_cluster(std::string& error);
  void step(const Snapshot& snapshot, double now);
  void try_evict(ActiveMove& active, const Snapshot& snapshot, double now);
  void follow_replacement(const Snapshot& snapshot, double now);
  void stop_plan(const std::string& why, double now);
  // Takes the active move's hold out of the store (if still there) and counts `event`.
  void end_hold(ActiveMove& active, std::string_view event, std::string_view why);
  // "" when the hold is placed, else why not.
  std::string place_hold(ActiveMove& active, double now);
  Json holds_json(double now) const;
  void post_event(const ActiveMove& active, const std::string& reason, const std::string& message,
                  const std::string& type);
  void run(std::stop_token stop);

  apiclient::ApiClient& client_;
  service::ModelStore& store_;
  ConsolidationMetrics metrics_;
  ConsolidatorOptions options_;

  std::mutex round_mutex_;  // one round at a time; guards active_, budget_, quiet_until_
  std::optional<ActiveMove> active_;
  core::MoveBudget budget_;
  double quiet_until_ = 0;  // after a stopped plan: no new move before this

  mutable std::mutex mutex_;  // guards report_ and wake_ below
  Json report_;
  std::condition_variable_any wake_;
  std::jthread thread_;
};

}  // namespace gpushare::consolidation
