#pragma once
// Trace-driven placement simulation (the method of Weng et al., USENIX ATC'23): pods arrive one
// at a time and never leave; each goes to the feasible node with the highest score of the
// policy under test, ties to the node that comes first in a per-seed random order; a pod that
// fits nowhere fails and is not retried. The cluster is a core::ClusterModel and the policy a
// core::PlacementPolicy: the objects the service runs.

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "gpushare/core/node_state.h"
#include "gpushare/core/workload.h"
#include "gpushare/sim/policies.h"
#include "gpushare/sim/trace.h"

namespace gpushare::sim {

struct SimulationOptions {
  double max_arrival = 1.3;       // stop when arrived GPU demand reaches this x capacity
  double target_coverage = 0.95;  // FGD's typical workload: top shapes covering this share
  // Drop multi-GPU pods from each seed's arrival sequence (drawn from the whole trace, so the
  // single-GPU pods arrive in the same order as with them): gpushare places single-GPU pods only.
  bool single_gpu_only = false;
  // Drop pods that want no GPU likewise (to see what CPU-only pods cost).
  bool gpu_pods_only = false;
};

// Means of the records whose arrived demand rounds to `arrived_pct` (as the paper's analysis).
struct CurvePoint {
  int arrived_pct = 0;
  double alloc_pct = 0;  // allocated GPU memory / capacity
  double frag_pct = 0;   // fragmented idle GPU memory (vs. the typical workload) / capacity
};

// A pod that fit nowhere: where it stood in the arrival sequence.
struct Failure {
  std::size_t pod = 0;     // index into Simulator::pods()
  double arrived_pct = 0;  // arrived GPU demand when it failed (itself included)
};

struct RunResult {
  std::string policy;
  std::uint64_t seed = 0;
  std::vector<CurvePoint> curve;
  std::size_t pods_arrived = 0;
  std::size_t pods_placed = 0;
  core::Units capacity = 0;
  core::Units arrived = 0;
  core::Units allocated = 0;
  double final_alloc_pct = 0;     // after the last pod
  double seconds = 0;             // wall time of the run
  double cpu_seconds = 0;         // CPU time of the thread that ran it: robust to a busy machine
  std::uint64_t place_calls = 0;  // policy evaluations (cache misses)
  std::vector<Failure> failures;  // in arrival order
};

class Simulator {
 public:
  Simulator(std::vector<core::NodeSpec> nodes, std::vector<TracePod> pods,
            SimulationOptions options = {});

  core::Units capacity() const { return capacity_; }
  const core::TargetWorkload& typical_workload() const { return typical_; }
  const SimulationOptions& options() const { return options_; }
  const std::vector<TracePod>& pods() const { return pods_; }
  const std::vector<core::NodeSpec>& nodes() const { return nodes_; }
  // The seed's arrival sequence: indices into pods().
  std::vector<std::size_t> arrivals(std::uint64_t seed) const;

  // Throws std::invalid_argument for an unknown policy name, std::logic_error if the policy
  // proposes GPUs the pod does not fit on.
  RunResult run(std::string_view policy_name, std::uint64_t seed) const;
  RunResult run(Contender& contender, std::uint64_t seed) const;

 private:
  std::vector<core::NodeSpec> nodes_;
  std::vector<TracePod> pods_;
  std::vector<core::PodDemand> demands_;   // the pods' demands, for policies' targets
  std::vector<std::size_t> shape_of_pod_;  // pods with equal demands share cached scores
  std::size_t shape_count_ = 0;
  SimulationOptions options_;
  core::Units capacity_ = 0;
  core::TargetWorkload typical_;
};

// Turns per-pod records (arrived %, alloc %, frag %) into one point per integer arrived %.
struct Record {
  double arrived_pct;
  double alloc_pct;
  double frag_pct;
};
std::vector<CurvePoint> curve_from_records(std::span<const Record> records);

}  // namespace gpushare::sim
