#pragma once
// The time mode: pods arrive and depart in simulated time. Arrivals follow a seeded shuffle of
// the trace (reshuffled on each pass) at a rate that holds a chosen offered load (GPU-seconds
// wanted per second, as a share of the cluster's GPUs) in steady state; each pod runs for its
// trace lifetime (pods without one draw a lifetime from the trace's, seeded). A pod that fits
// nowhere waits in a queue, is retried as capacity frees, and gives up after a bound. Figures
// exclude a warm-up period. Optionally a consolidation planner (core/consolidation_planner.h)
// runs periodically and its moves are carried out at once.
//
// Every policy sees the identical event sequence for a seed: arrival times, pods and lifetimes
// depend on the seed only.

#include <cstdint>
#include <optional>
#include <ostream>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "gpushare/sim/policies.h"
#include "gpushare/sim/simulator.h"

namespace gpushare::sim {

enum class RetryMode {
  kOnDeparture,  // a waiting pod is retried whenever capacity frees (a departure or a move)
  kBackoff,      // kube-scheduler's backoff: retried after 1 s, 2 s, ... up to 10 s
};

enum class ArrivalProcess {
  kPoisson,  // exponential gaps
  kEven,     // every gap the mean gap
};

struct ConsolidationSettings {
  bool enabled = false;
  double every = 300;            // seconds between planner runs
  double moves_per_hour = 0.01;  // budget: this share of the running GPU pods, per hour
  int max_moves_per_plan = 64;
  int max_moves_per_gpu_freed = 2;
  double opt_in = 1.0;      // share of pods that opt in (seeded per pod)
  bool for_pending = true;  // also plan for the oldest waiting GPU pod
};

struct ChurnOptions {
  double offered_load = 1.0;  // GPU-seconds wanted per second / GPUs
  double warmup = 0;          // seconds left out of the figures
  double duration = 0;        // seconds measured after the warm-up
  double max_lifetime = 0;    // lifetimes are capped to this; 0 = not capped
  double min_lifetime = 1;    // and raised to this
  ArrivalProcess arrivals = ArrivalProcess::kPoisson;
  RetryMode retry = RetryMode::kOnDeparture;
  double backoff_initial = 1;
  double backoff_max = 10;
  double give_up_after = 3600;  // a pod waiting this long leaves the queue
  double sample_every = 600;    // one time-series row per this many seconds (0 = none)
  ConsolidationSettings consolidation;
};

// The state at one time (a time-series row), GPUs in whole GPUs.
struct ChurnSample {
  double time = 0;
  double alloc_pct = 0;         // allocated GPU memory / capacity
  double unallocated_gpus = 0;  // capacity less allocated
  double fragmented_gpus = 0;   // the FGD paper's fragmentation against the typical workload
  double idle_gpus = 0;         // healthy GPUs with nothing on them
  std::size_t running = 0;
  std::size_t waiting = 0;
};

struct ChurnResult {
  std::string policy;
  std::uint64_t seed = 0;
  double capacity_gpus = 0;
  double arrival_rate = 0;  // pods per second
  // Time averages over the measured window.
  double alloc_pct = 0;
  double unallocated_gpus = 0;
  double fragmented_gpus = 0;
  double idle_gpus = 0;
  double waiting = 0;
  double running = 0;
  // Pods that arrived in the window: placed (at once or after waiting), gave up, still waiting.
  std::size_t arrived = 0;
  std::size_t placed = 0;
  std::size_t waited = 0;  // placed after waiting
  std::size_t gave_up = 0;
  std::size_t still_waiting = 0;
  double wait_p50 = 0;  // seconds, over the placed pods (those placed at once wait 0)
  double wait_p99 = 0;
  double wait_max = 0;
  // Consolidation in the window.
  std::size_t plans = 0;
  std::size_t pods_moved = 0;
  std::size_t gpus_freed = 0;        // by plans that free GPUs
  std::size_t pending_plans = 0;     // plans that made room for a waiting pod
  double moves_per_hour_pct = 0;     // pods moved per hour / mean running pods, in %
  std::vector<ChurnSample> samples;  // the whole run, warm-up included
  double seconds = 0;
  double cpu_seconds = 0;
};

// Where a pod went: a node (index into the simulator's nodes) and the GPUs it holds there.
struct ChurnPlacement {
  std::size_t node = 0;
  std::vector<int> gpus;  // empty for a pod that wants no GPU
};

// Places pods in place of a contender's policy, e.g. the deployed path (kube-scheduler's cycle
// around the extender's service, kubesim/deployed_run.h). The run calls it from one thread.
class ChurnScheduler {
 public:
  virtual ~ChurnScheduler() = default;
  // One scheduling attempt for arrival `instance` (its pod uid is "sim-<instance>") of `pod`:
  // where it was bound, or nullopt when no node took it (it may be tried again later).
  virtual std::optional<ChurnPlacement> schedule(const TracePod& pod, std::size_t instance) = 0;
  // The placed arrival `instance` of `pod` left `node`.
  virtual void departed(const TracePod& pod, std::size_t instance, std::size_t node) = 0;
};

// Runs the time mode over the simulator's nodes, pods and typical workload. Throws
// std::invalid_argument when no pod of the trace has a lifetime or the options are unusable.
// The simulator's single_gpu_only and gpu_pods_only options leave those pods out of the
// arrivals.
ChurnResult run_churn(const Simulator& simulator, Contender& contender, std::uint64_t seed,
                      const ChurnOptions& options);
// The same with `scheduler` placing every pod (results named `name`); consolidation is not
// available there (std::invalid_argument). Throws std::logic_error if the scheduler binds a pod
// where it does not fit.
ChurnResult run_churn(const Simulator& simulator, ChurnScheduler& scheduler, std::string name,
                      std::uint64_t seed, const ChurnOptions& options);
ChurnResult run_churn(const Simulator& simulator, std::string_view policy_name, std::uint64_t seed,
                      const ChurnOptions& options);

inline constexpr std::string_view kChurnCsvHeader =
    "policy,seed,time_s,alloc_pct,unallocated_gpus,fragmented_gpus,idle_gpus,running,waiting";
void write_churn_csv(std::ostream& out, std::span<const ChurnResult> runs);
// Markdown table, one row per run name (means over seeds).
void write_churn_table(std::ostream& out, std::span<const ChurnResult> runs);

}  // namespace gpushare::sim
