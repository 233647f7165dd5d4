#pragma once
// Placement as deployed: the trace's pods go through a model of kube-scheduler configured by a
// KubeSchedulerConfiguration file, and kube-scheduler calls the extender as it would over HTTP,
// except that the extender is the service's own SchedulingService in process (the object the
// HTTP server calls), with its own ModelStore and placement policy.
//
// Per pod, as kube-scheduler's scheduling cycle does it:
//  1. the profile: GPU pods use the configured profile; CPU-only pods use it too, or a default
//     kube-scheduler when the configured profile is a second scheduler (only GPU pods name it);
//  2. filter: NodeResourcesFit (cpu, memory, pod count, extended resources by node total unless
//     an extender manages them with ignoredByScheduler) and required node affinity on the GPU
//     model, over nodes taken from a start index that rotates by the nodes examined, until
//     percentageOfNodesToScore's share of feasible nodes is found;
//  3. every extender interested in the pod (managedResources) filters the survivors; when it
//     rejects them all, the pod is tried again from the next start index (kube's queue retries
//     it) until every node has been examined;
//  4. one survivor is taken as is; otherwise each is scored: sum of score plugin x weight, plus
//     each interested extender's prioritize score x weight x 10;
//  5. the highest total wins, ties broken uniformly at random (kube's selectHost);
//  6. bind: through the extender with a bindVerb that is interested, else kube's own binder; the
//     extender's model then learns the pod as its watch would.
//
// With DeployedOptions::dra, GPUs are Dynamic Resource Allocation devices instead of the device
// plugin's aliyun.com/gpu-mem: each GPU node publishes one ResourceSlice (pool = node name,
// driver gpu.nvidia.com) whose devices gpu-0.. have allowMultipleAllocations and a memory
// capacity, and a GPU pod asks through one ResourceClaim with one request (count = its GPUs,
// capacity.requests.memory = its memory per GPU). kube's DynamicResources plugin filters (a node
// is feasible when its allocator, dra_allocator.h, finds devices) and kube binds, writing the
// claim's allocation; extenders without managedResources still score the pod (the service
// predicts the allocator's pick from the pending claim, as it does in a cluster), and no
// extender filters or binds it.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "gpushare/core/node_state.h"
#include "gpushare/core/workload.h"
#include "gpushare/kubesim/scheduler_config.h"
#include "gpushare/sim/churn.h"
#include "gpushare/sim/simulator.h"
#include "gpushare/sim/trace.h"

namespace gpushare::kubesim {

inline constexpr std::string_view kGpuMemResource = "aliyun.com/gpu-mem";
inline constexpr std::string_view kGpuCountResource = "aliyun.com/gpu-count";

enum class CpuOnlyPods {
  kAuto,  // kSameProfile if the profile is default-scheduler, else kDefaultScheduler
  kSameProfile,
  kDefaultScheduler,  // a second-scheduler set-up: only GPU pods name the configured profile
};

struct DeployedOptions {
  KubeVersion version = KubeVersion::kCurrent;
  std::string scheduler_name;  // profile for GPU pods; empty = the first profile
  CpuOnlyPods cpu_only_pods = CpuOnlyPods::kAuto;
  std::int64_t max_pods_per_node = 110;     // kubelet's default
  std::string extender_policy = "binpack";  // the service's --policy
  std::string score_mapping = "rank";       // the service's --score-mapping
  bool dra = false;  // GPUs as DRA devices and GPU pods as ResourceClaims (above)
};

// What happened to the pods, beyond the allocation curve.
struct DeployedStats {
  std::size_t gpu_pods = 0;
  std::size_t cpu_only_pods = 0;
  std::size_t failed_gpu_pods = 0;
  std::size_t failed_cpu_only_pods = 0;
  std::size_t cpu_only_on_gpu_nodes = 0;  // CPU-only pods placed on nodes with GPUs
  std::size_t single_feasible = 0;        // pods taken without scoring (one feasible node)
  std::size_t retries = 0;  // cycles again after the extender rejected every sampled node
  std::size_t extender_filter_calls = 0;
  std::size_t extender_prioritize_calls = 0;
  std::size_t extender_binds = 0;
};

struct DeployedResult {
  sim::RunResult run;
  DeployedStats stats;
  std::vector<std::string> placements;  // per arrival: the node it went to, empty if it failed
  std::vector<std::vector<int>> dra_devices;  // with dra, per arrival: the devices its claim got
};

// Runs the arrivals (indices into `pods`) for one seed. Throws ConfigError for a profile that
// does not exist and std::invalid_argument for an unknown policy or score mapping.
DeployedResult run_deployed(const std::vector<core::NodeSpec>& nodes,
                            const std::vector<sim::TracePod>& pods,
                            const std::vector<std::size_t>& arrivals,
                            const core::TargetWorkload& typical, const SchedulerConfig& config,
                            const DeployedOptions& options, std::uint64_t seed,
                            std::string run_name);

// The deployed path as the time mode's scheduler (sim/churn.h): each attempt is one scheduling
// cycle as above; a departure leaves kube's cache, and the extender's model as the watch's
// delete event does (the ledger sees the pod gone). A GPU pod's GPUs are the ones the
// extender's model holds after bind. DRA is not modelled in the time mode: the constructor
// throws std::invalid_argument for options.dra (and as run_deployed for a bad profile, policy
// or score mapping). Not thread-safe: one run's thread uses it.
class DeployedChurnScheduler final : public sim::ChurnScheduler {
 public:
  DeployedChurnScheduler(const std::vector<core::NodeSpec>& nodes,
                         const core::TargetWorkload& typical, SchedulerConfig config,
                         DeployedOptions options, std::uint64_t seed);
  ~DeployedChurnScheduler() override;
  DeployedChurnScheduler(const DeployedChurnScheduler&) = delete;
  DeployedChurnScheduler& operator=(const DeployedChurnScheduler&) = delete;

  std::optional<sim::ChurnPlacement> schedule(const sim::TracePod& pod,
                                              std::size_t instance) override;
  void departed(const sim::TracePod& pod, std::size_t instance, std::size_t node) override;
  // Every attempt counts: a pod tried three times before it fit counts three GPU pods.
  const DeployedStats& stats() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace gpushare::kubesim
