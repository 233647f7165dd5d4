#include "gpushare/kubesim/deployed_run.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <limits>
#include <optional>
#include <stdexcept>

#include "gpushare/core/fragmentation.h"
#include "gpushare/core/model_pin.h"
#include "gpushare/core/placement_policy.h"
#include "gpushare/core/policy_registry.h"
#include "gpushare/core/reservation_ledger.h"
#include "gpushare/kube/pod_dra_demand.h"
#include "gpushare/kubesim/dra_allocator.h"
#include "gpushare/metrics/metric_registry.h"
#include "gpushare/service/model_store.h"
#include "gpushare/service/pod_binder.h"
#include "gpushare/service/rejection_log.h"
#include "gpushare/service/scheduling_service.h"
#include "gpushare/sim/arrivals.h"

namespace gpushare::kubesim {
namespace {

constexpr std::int64_t kMiB = 1024 * 1024;
// The DRA set-up: the driver and DeviceClass GPU pods' claims name, and the bytes one unit of
// GPU memory is published and requested as (the service's --dra-memory-unit default).
constexpr std::string_view kDraDriver = "gpu.nvidia.com";
constexpr std::int64_t kDraBytesPerUnit = core::kGiB;
constexpr std::string_view kDraRequest = "gpu";

// A node as kube-scheduler's cache holds it.
struct KubeNode {
  std::string name;
  std::optional<std::string> gpu_model;  // the GPU-model label's value; nullopt without it
  bool has_gpus = false;
  std::int64_t allocatable_cpu = 0;
  std::int64_t allocatable_memory = 0;
  std::int64_t allocatable_pods = 0;
  std::int64_t allocatable_gpu_mem = 0;
  std::int64_t allocatable_gpu_count = 0;
  std::int64_t requested_cpu = 0;
  std::int64_t requested_memory = 0;
  std::int64_t nonzero_cpu = 0;  // with kube's defaults for pods that request none
  std::int64_t nonzero_memory = 0;
  std::int64_t requested_gpu_mem = 0;
  std::int64_t pods = 0;
  std::vector<core::Units> dra_free;  // DRA: memory left on each device, in allocator order
};

// A pod as kube-scheduler reads it.
struct KubePod {
  std::string name;
  std::string uid;
  std::int64_t cpu = 0;     // milli
  std::int64_t memory = 0;  // bytes
  std::int64_t gpu_mem = 0;
  std::int64_t dra_count = 0;  // DRA: devices its claim asks for, each with dra_memory
  core::Units dra_memory = 0;
  std::int64_t nonzero_cpu = 0;
  std::int64_t nonzero_memory = 0;
  std::vector<std::string> resources;  // what its containers request, for IsInterested
  core::ModelPin pin;                  // required node affinity on the GPU-model label
};

// Where the extender's bind finds the pod: the one being scheduled.
class SimPodBinder final : public service::PodBinder {
 public:
  std::optional<kube::PodInfo> find_pod(std::string_view namespace_name,
                                        std::string_view name) override {
    if (current_ && current_->namespace_name == namespace_name && current_->name == name)
      return current_;
    return std::nullopt;
  }
  service::BindOutcome bind(const kube::PodInfo&, std::string_view,
                            const std::map<std::string, std::string>&) override {
    return {true, {}, false};
  }
  bool confirms_asynchronously() const override { return false; }
  void set_current(kube::PodInfo pod) { current_ = std::move(pod); }

 private:
  std::optional<kube::PodInfo> current_;
};

double thread_cpu_seconds() {
  timespec now{};
  if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now) != 0) return 0;
  return static_cast<double>(now.tv_sec) + static_cast<double>(now.tv_nsec) * 1e-9;
}

// calculateResourceAllocatableRequest: (allocatable, requested including the pod).
ResourceUse resource_use(std::string_view resource, const KubeNode& node, const KubePod& pod,
                         bool use_requested, KubeVersion version) {
  const bool actual = use_requested && version == KubeVersion::kCurrent;
  if (resource == "cpu") {
    return {node.allocatable_cpu,
            actual ? node.requested_cpu + pod.cpu : node.nonzero_cpu + pod.nonzero_cpu};
  }
  if (resource == "memory") {
    return {node.allocatable_memory,
            actual ? node.requested_memory + pod.memory : node.nonzero_memory + pod.nonzero_memory};
  }
  const std::int64_t pod_request = resource == kGpuMemResource ? pod.gpu_mem : 0;
  const std::int64_t allocatable = resource == kGpuMemResource     ? node.allocatable_gpu_mem
                                   : resource == kGpuCountResource ? node.allocatable_gpu_count
                                                                   : 0;
  const std::int64_t requested = resource == kGpuMemResource ? node.requested_gpu_mem : 0;
  // 1.23+: a scalar resource the pod does not request is not scored.
  if (version == KubeVersion::kCurrent && pod_request == 0) return {0, 0};
  return {allocatable, requested + pod_request};
}

std::int64_t plugin_score(const ResourceScorer& scorer, const KubeNode& node, const KubePod& pod,
                          KubeVersion version, std::vector<ResourceUse>& uses) {
  uses.clear();
  if (scorer.kind == ResourceScorer::Kind::kBalancedAllocation) {
    if (version == KubeVersion::k1_20) {
      uses.push_back(resource_use("cpu", node, pod, true, version));
      uses.push_back(resource_use("memory", node, pod, true, version));
    } else {
      for (const ResourceWeight& r : scorer.resources)
        uses.push_back(resource_use(r.name, node, pod, true, version));
    }
    return balanced_allocation_score(uses, version);
  }
  for (const ResourceWeight& r : scorer.resources)
    uses.push_back(resource_use(r.name, node, pod, false, version));
  return resource_strategy_score(scorer.strategy, scorer.resources, scorer.shape, uses, version);
}

// One scheduler process: its profile, extenders and rotating start index.
struct SchedulerInstance {
  const SchedulerProfile* profile = nullptr;
  bool with_extenders = false;
  int percentage = 0;
  std::size_t next_start = 0;
};

// The profile a run's GPU pods name; throws ConfigError when there is none.
const SchedulerProfile& configured_profile(const SchedulerConfig& config,
                                           const DeployedOptions& options) {
  const SchedulerProfile* configured = options.scheduler_name.empty()
                                           ? &config.profiles.front()
                                           : config.profile(options.scheduler_name);
  if (configured == nullptr) {
    throw ConfigError(fmt::format("no profile with schedulerName {} in the configuration",
                                  options.scheduler_name));
  }
  return *configured;
}

std::unique_ptr<core::PlacementPolicy> extender_policy(const DeployedOptions& options) {
  std::unique_ptr<core::PlacementPolicy> policy = core::make_policy(options.extender_policy);
  if (!policy)
    throw std::invalid_argument(fmt::format("unknown policy '{}'", options.extender_policy));
  return policy;
}

// One deployed run: kube-scheduler's cache and scheduling cycle around the extender's service,
// pod after pod.
class DeployedRun {
 public:
  DeployedRun(const std::vector<core::NodeSpec>& node_specs, const core::TargetWorkload& typical,
              const SchedulerConfig& config, const DeployedOptions& options, std::uint64_t seed,
              std::string run_name);
  DeployedRun(const DeployedRun&) = delete;
  DeployedRun& operator=(const DeployedRun&) = delete;

  void reserve(std::size_t pods) {
    records_.reserve(pods);
    out_.placements.reserve(pods);
  }
  // One pod's scheduling cycle: filter, score, select, bind, and what the run records of it.
  // The node it was bound to, if any.
  std::optional<std::size_t> schedule(const sim::TracePod& trace_pod, std::size_t sequence);
  // The pod `sequence` left node `index`: kube's cache frees its requests and the extender's
  // watch sees it deleted.
  void depart(const sim::TracePod& trace_pod, std::size_t sequence, std::size_t index);
  // The GPUs the extender's model holds for pod `sequence`; nullopt if it holds no such pod.
  std::optional<std::vector<int>> gpus_of(std::size_t sequence) const;
  const DeployedStats& stats() const { return out_.stats; }
  DeployedResult finish(std::size_t pods_arrived, double seconds, double cpu_seconds);

 private:
  // The profiles: GPU pods name the configured one; CPU-only pods the same one, or a plain
  // default-scheduler in a second-scheduler set-up.
  SchedulerInstance& cpu_only_scheduler();
  service::ServiceConfig service_config();
  void add_nodes(const std::vector<core::NodeSpec>& node_specs);
  void find_gpu_mem_ignored();
  void measure_capacity(const std::vector<core::NodeSpec>& node_specs);
  KubePod kube_pod(const sim::TracePod& trace_pod, std::size_t sequence) const;
  kube::PodInfo pod_info(const KubePod& pod) const;
  core::DraClaim pending_claim(const KubePod& pod, kube::PodInfo& info, std::size_t sequence);
  std::vector<std::string> offered_names() const;
  bool kube_fits(const KubeNode& node, const KubePod& pod) const;
  void filter(SchedulerInstance& scheduler, const KubePod& pod, const kube::PodInfo& info);
  std::optional<std::size_t> select_host(const SchedulerInstance& scheduler, const KubePod& pod,
                                         const kube::PodInfo& info);
  bool bind(const SchedulerInstance& scheduler, KubeNode& node, const KubePod& pod,
            const kube::PodInfo& info, core::DraClaim& claim, std::vector<int>& dra_devices);
  void account_placed(std::size_t chosen, const KubePod& pod, const core::PodDemand& demand);
  void watch_sees_bound(const kube::PodInfo& pending, const std::string& node_name);

  const SchedulerConfig& config_;
  const DeployedOptions& options_;
  const core::TargetWorkload& typical_;
  const KubeVersion version_;
  const SchedulerProfile& configured_;
  const SchedulerProfile plain_default_;
  SchedulerInstance gpu_scheduler_;
  SchedulerInstance plain_scheduler_;
  SchedulerInstance& cpu_scheduler_;

  // The extender, as the service runs it.
  service::ModelStore store_;
  SimPodBinder binder_;
  metrics::MetricRegistry metrics_;
  service::RejectionLog rejections_{16};
  std::int64_t clock_ns_ = 1'700'000'000'000'000'000;
  service::SchedulingService service_;

  std::vector<KubeNode> nodes_;
  std::size_t node_count_ = 0;
  bool gpu_mem_ignored_by_scheduler_ = false;
  double capacity_units_ = 1;
  std::vector<double> node_fragmentation_;
  double fragmentation_total_ = 0;
  sim::SeededRandom tie_break_;
  DeployedResult out_;
  std::vector<sim::Record> records_;
  // Scratch of one cycle, kept for their capacity.
  std::vector<std::size_t> feasible_;
  std::vector<std::int64_t> totals_;
  std::vector<ResourceUse> uses_;
};

DeployedRun::DeployedRun(const std::vector<core::NodeSpec>& node_specs,
                         const core::TargetWorkload& typical, const SchedulerConfig& config,
                         const DeployedOptions& options, std::uint64_t seed, std::string run_name)
    : config_(config),
      options_(options),
      typical_(typical),
      version_(options.version),
      configured_(configured_profile(config, options)),
      plain_default_(default_profile(version_)),
      gpu_scheduler_{&configured_, true, config.percentage_for(configured_), 0},
      plain_scheduler_{&plain_default_, false, 0, 0},
      cpu_scheduler_(cpu_only_scheduler()),
      store_(extender_policy(options)),
      service_(store_, binder_, metrics_, rejections_, service_config()),
      tie_break_(seed ^ 0x73656c6563746877ULL) {
  add_nodes(node_specs);
  find_gpu_mem_ignored();
  measure_capacity(node_specs);
  out_.run.policy = std::move(run_name);
  out_.run.seed = seed;
}

SchedulerInstance& DeployedRun::cpu_only_scheduler() {
  CpuOnlyPods cpu_only = options_.cpu_only_pods;
  if (cpu_only == CpuOnlyPods::kAuto) {
    cpu_only = configured_.scheduler_name == "default-scheduler" ? CpuOnlyPods::kSameProfile
                                                                 : CpuOnlyPods::kDefaultScheduler;
  }
  return cpu_only == CpuOnlyPods::kSameProfile ? gpu_scheduler_ : plain_scheduler_;
}

service::ServiceConfig DeployedRun::service_config() {
  service::ServiceConfig service_config;
  service_config.now_ns = [this] { return ++clock_ns_; };
  const std::optional<core::ScoreMapping> mapping =
      core::score_mapping_named(options_.score_mapping);
  if (!mapping)
    throw std::invalid_argument(fmt::format("unknown score mapping '{}'", options_.score_mapping));
  service_config.score_mapping = *mapping;
  return service_config;
}

// What the extender's watch makes of a pod kube bound itself: it learns the pod's demand (a DRA
// pod's from its claims) and holds what kube::allocation_of reads from the bound pod.
void DeployedRun::watch_sees_bound(const kube::PodInfo& pending, const std::string& node_name) {
  store_.write([&](core::ClusterModel& model, core::PlacementPolicy& policy) {
    policy.observe(kube::learned_demand(model, pending));
    kube::PodInfo bound = pending;
    bound.node_name = node_name;
    bound.phase = "Running";
    if (auto allocation = kube::allocation_of(bound)) model.add_pod(std::move(*allocation));
    policy.observe_cluster(model.nodes());
  });
}

void DeployedRun::add_nodes(const std::vector<core::NodeSpec>& node_specs) {
  nodes_.reserve(node_specs.size());
  store_.write([&](core::ClusterModel& model, core::PlacementPolicy&) {
    for (const core::NodeSpec& trace_spec : node_specs) {
      core::NodeSpec spec = trace_spec;
      spec.memory = trace_spec.memory * kMiB;  // the trace counts MiB
      KubeNode node;
      node.name = spec.name;
      if (!spec.gpu_model.empty()) node.gpu_model = spec.gpu_model;
      node.has_gpus = spec.gpu_count > 0;
      node.allocatable_cpu = spec.cpu_milli;
      node.allocatable_memory = spec.memory;
      node.allocatable_pods = options_.max_pods_per_node;
      if (options_.dra) {
        // The Node object advertises no GPU resource; its ResourceSlice publishes the GPUs.
        node.dra_free.assign(static_cast<std::size_t>(std::max(0, spec.gpu_count)),
                             spec.memory_per_gpu);
        spec.gpu_count = 0;
        spec.memory_per_gpu = 0;
      } else {
        node.allocatable_gpu_mem = spec.memory_per_gpu * spec.gpu_count;
        node.allocatable_gpu_count = spec.gpu_count;
      }
      nodes_.push_back(std::move(node));
      model.upsert_node(std::move(spec));
    }
    if (options_.dra) {
      model.update_dra([&](core::DraState& dra) {
        dra.set_config({std::string(kDraDriver), kDraBytesPerUnit});
        dra.upsert_class({std::string(kDraDriver), std::string(kDraDriver), {}, {}});
        for (const core::NodeSpec& trace_spec : node_specs) {
          if (trace_spec.gpu_count <= 0) continue;
          core::DraSlice slice;
          slice.name = fmt::format("{}-{}", trace_spec.name, kDraDriver);
          slice.driver = kDraDriver;
          slice.pool = trace_spec.name;
          slice.generation = 1;
          slice.node = trace_spec.name;
          for (int gpu = 0; gpu < trace_spec.gpu_count; ++gpu) {
            slice.devices.push_back({fmt::format("gpu-{}", gpu),
                                     trace_spec.memory_per_gpu * kDraBytesPerUnit,
                                     {},
                                     trace_spec.gpu_model,
                                     true,
                                     {}});
          }
          dra.upsert_slice(std::move(slice));
        }
      });
    }
  });
  node_count_ = nodes_.size();
  if (node_count_ == 0) throw std::invalid_argument("no nodes");
}

// Which resources an extender with ignoredByScheduler takes off kube's own fit check.
void DeployedRun::find_gpu_mem_ignored() {
  for (const ExtenderConfig& extender : config_.extenders) {
    for (const ManagedResource& managed : extender.managed_resources) {
      if (managed.name == kGpuMemResource && managed.ignored_by_scheduler)
        gpu_mem_ignored_by_scheduler_ = true;
    }
  }
}

void DeployedRun::measure_capacity(const std::vector<core::NodeSpec>& node_specs) {
  core::Units capacity = 0;
  for (const core::NodeSpec& spec : node_specs)
    capacity += spec.memory_per_gpu * std::max(0, spec.gpu_count);
  capacity_units_ = static_cast<double>(std::max<core::Units>(1, capacity));
  out_.run.capacity = capacity;

  node_fragmentation_.assign(node_count_, 0);
  store_.read([&](const core::ClusterModel& model, const core::PlacementPolicy&) {
    for (std::size_t i = 0; i < node_count_; ++i) {
      node_fragmentation_[i] = core::fragmentation(*model.find_node(nodes_[i].name), typical_);
      fragmentation_total_ += node_fragmentation_[i];
    }
  });
}

KubePod DeployedRun::kube_pod(const sim::TracePod& trace_pod, std::size_t sequence) const {
  const core::PodDemand& demand = trace_pod.demand;
  KubePod pod;
  pod.name = fmt::format("{}-{}", trace_pod.name, sequence);
  pod.uid = fmt::format("sim-{}", sequence);
  pod.cpu = demand.cpu_milli;
  pod.memory = demand.memory * kMiB;
  if (options_.dra && demand.wants_gpu()) {
    pod.dra_count = demand.gpu_count;
    pod.dra_memory = demand.per_gpu;
  } else {
    pod.gpu_mem = demand.wants_gpu() ? demand.total_gpu() : 0;
  }
  pod.nonzero_cpu = pod.cpu > 0 ? pod.cpu : kDefaultMilliCpuRequest;
  pod.nonzero_memory = pod.memory > 0 ? pod.memory : kDefaultMemoryRequest;
  if (pod.cpu > 0) pod.resources.emplace_back("cpu");
  if (pod.memory > 0) pod.resources.emplace_back("memory");
  if (pod.gpu_mem > 0) pod.resources.emplace_back(kGpuMemResource);
  // The trace's models as the pod's required node affinity (In): kube-scheduler's NodeAffinity
  // below and the extender's model read the same pin with the same matcher.
  pod.pin = core::ModelPin::any_of(demand.allowed_models);
  return pod;
}

kube::PodInfo DeployedRun::pod_info(const KubePod& pod) const {
  kube::PodInfo info;
  info.uid = pod.uid;
  info.namespace_name = "default";
  info.name = pod.name;
  info.request = pod.gpu_mem;
  info.cpu_milli = pod.cpu;
  info.memory = pod.memory;
  info.model_pin = pod.pin;  // as kube::decode_pod reads the pod's node affinity
  return info;
}

// A DRA pod's claim, generated from its template before the pod is scheduled: pending until
// kube's allocator writes its allocation at bind.
core::DraClaim DeployedRun::pending_claim(const KubePod& pod, kube::PodInfo& info,
                                          std::size_t sequence) {
  core::DraClaim claim;
  claim.namespace_name = "default";
  claim.name = fmt::format("{}-{}", pod.name, kDraRequest);
  claim.uid = fmt::format("claim-{}", sequence);
  core::DraRequest request;
  request.name = kDraRequest;
  request.device_class = kDraDriver;
  request.count = pod.dra_count;
  request.memory_bytes = pod.dra_memory * kDraBytesPerUnit;
  claim.requests.push_back(std::move(request));
  info.resource_claims.push_back({std::string(kDraRequest), claim.name, {}});
  store_.write([&](core::ClusterModel& model, core::PlacementPolicy&) {
    model.update_dra([&](core::DraState& dra) { dra.upsert_claim(claim); });
  });
  return claim;
}

std::optional<std::size_t> DeployedRun::schedule(const sim::TracePod& trace_pod,
                                                 std::size_t sequence) {
  const core::PodDemand& demand = trace_pod.demand;
  sim::RunResult& result = out_.run;
  DeployedStats& stats = out_.stats;
  result.arrived += demand.total_gpu();
  const KubePod pod = kube_pod(trace_pod, sequence);
  const bool wants_gpu = demand.wants_gpu();
  const bool dra_pod = pod.dra_count > 0;
  (wants_gpu ? stats.gpu_pods : stats.cpu_only_pods) += 1;
  SchedulerInstance& scheduler = wants_gpu ? gpu_scheduler_ : cpu_scheduler_;

  kube::PodInfo info = pod_info(pod);
  core::DraClaim claim;
  if (dra_pod) claim = pending_claim(pod, info, sequence);
  binder_.set_current(info);

  filter(scheduler, pod, info);
  const std::optional<std::size_t> chosen = select_host(scheduler, pod, info);

  bool placed = false;
  std::vector<int> dra_devices;
  if (chosen) {
    placed = bind(scheduler, nodes_[*chosen], pod, info, claim, dra_devices);
    if (placed) account_placed(*chosen, pod, demand);
  }
  if (!placed) (wants_gpu ? stats.failed_gpu_pods : stats.failed_cpu_only_pods) += 1;
  if (dra_pod && !placed) {
    // The pod stays pending and its claim unallocated: nothing the model needs to keep.
    store_.write([&](core::ClusterModel& model, core::PlacementPolicy&) {
      model.update_dra([&](core::DraState& dra) { dra.remove_claim(claim.key()); });
    });
  }
  out_.placements.push_back(placed ? nodes_[*chosen].name : std::string());
  if (options_.dra) out_.dra_devices.push_back(std::move(dra_devices));
  records_.push_back({100.0 * static_cast<double>(result.arrived) / capacity_units_,
                      100.0 * static_cast<double>(result.allocated) / capacity_units_,
                      100.0 * fragmentation_total_ / capacity_units_});
  return placed ? chosen : std::nullopt;
}

void DeployedRun::depart(const sim::TracePod& trace_pod, std::size_t sequence, std::size_t index) {
  const KubePod pod = kube_pod(trace_pod, sequence);
  KubeNode& node = nodes_.at(index);
  node.requested_cpu -= pod.cpu;
  node.requested_memory -= pod.memory;
  node.nonzero_cpu -= pod.nonzero_cpu;
  node.nonzero_memory -= pod.nonzero_memory;
  node.requested_gpu_mem -= pod.gpu_mem;
  --node.pods;
  out_.run.allocated -= trace_pod.demand.total_gpu();
  store_.write(
      [&](core::ClusterModel& model, core::PlacementPolicy&, core::ReservationLedger& ledger) {
        ledger.observe(model, {core::PodEvidence::Kind::kGone, pod.uid, std::nullopt},
                       core::EvidenceSource::kWatch);
      });
  store_.read([&](const core::ClusterModel& model, const core::PlacementPolicy&) {
    fragmentation_total_ -= node_fragmentation_[index];
    node_fragmentation_[index] = core::fragmentation(*model.find_node(node.name), typical_);
    fragmentation_total_ += node_fragmentation_[index];
  });
}

std::optional<std::vector<int>> DeployedRun::gpus_of(std::size_t sequence) const {
  const std::string uid = fmt::format("sim-{}", sequence);
  return store_.read([&](const core::ClusterModel& model,
                         const core::PlacementPolicy&) -> std::optional<std::vector<int>> {
    const core::PodAllocation* pod = model.find_pod(uid);
    if (pod == nullptr) return std::nullopt;
    return pod->gpus;
  });
}

std::vector<std::string> DeployedRun::offered_names() const {
  std::vector<std::string> names;
  names.reserve(feasible_.size());
  for (std::size_t index : feasible_) names.push_back(nodes_[index].name);
  return names;
}

// kube-scheduler's own filters.
bool DeployedRun::kube_fits(const KubeNode& node, const KubePod& pod) const {
  if (node.pods + 1 > node.allocatable_pods) return false;
  if (pod.cpu > 0 && pod.cpu > node.allocatable_cpu - node.requested_cpu) return false;
  if (pod.memory > 0 && pod.memory > node.allocatable_memory - node.requested_memory) return false;
  if (pod.gpu_mem > 0 && !gpu_mem_ignored_by_scheduler_ &&
      pod.gpu_mem > node.allocatable_gpu_mem - node.requested_gpu_mem) {
    return false;
  }
  if (!pod.pin.allows(node.gpu_model)) return false;
  // DynamicResources: the node's allocator must find the claim's devices.
  return pod.dra_count == 0 || dra_first_fit(node.dra_free, pod.dra_count, pod.dra_memory);
}

// Filter from the rotating start index until enough feasible nodes are found, then the
// extenders. A pod whose sampled nodes the extender all rejects goes back to kube's queue and
// is retried after a back-off from where the start index moved on: here at once, until every
// node has been examined (pods never leave, so waiting could not make room).
void DeployedRun::filter(SchedulerInstance& scheduler, const KubePod& pod,
                         const kube::PodInfo& info) {
  const std::size_t to_find = feasible_nodes_to_find(node_count_, scheduler.percentage);
  std::size_t examined = 0;
  for (;;) {
    feasible_.clear();
    std::size_t processed = 0;
    for (std::size_t step = 0; step < node_count_ && feasible_.size() < to_find; ++step) {
      const std::size_t index = (scheduler.next_start + step) % node_count_;
      ++processed;
      if (kube_fits(nodes_[index], pod)) feasible_.push_back(index);
    }
    scheduler.next_start = (scheduler.next_start + processed) % node_count_;
    examined += processed;

    // Extenders filter.
    if (scheduler.with_extenders) {
      for (const ExtenderConfig& extender : config_.extenders) {
        if (feasible_.empty()) break;
        if (extender.filter_verb.empty() || !extender.interested_in(pod.resources)) continue;
        wire::ExtenderArgs args;
        args.pod = info;
        args.node_names = offered_names();
        const wire::FilterResult filtered = service_.filter(std::move(args));
        ++out_.stats.extender_filter_calls;
        // Survivors come back in offered order.
        std::vector<std::size_t> kept;
        std::size_t cursor = 0;
        for (const std::string_view name : filtered.node_names) {
          while (cursor < feasible_.size() && nodes_[feasible_[cursor]].name != name) ++cursor;
          if (cursor == feasible_.size())
            throw std::logic_error("extender filter returned a node it was not offered");
          kept.push_back(feasible_[cursor++]);
        }
        feasible_ = std::move(kept);
      }
    }
    if (!feasible_.empty() || examined >= node_count_) break;
    ++out_.stats.retries;
  }
}

// Scores the feasible nodes (kube's plugins, then the extenders' prioritize) and picks one.
std::optional<std::size_t> DeployedRun::select_host(const SchedulerInstance& scheduler,
                                                    const KubePod& pod, const kube::PodInfo& info) {
  std::optional<std::size_t> chosen;
  if (feasible_.size() == 1) {
    chosen = feasible_.front();
    ++out_.stats.single_feasible;
    return chosen;
  }
  if (feasible_.empty()) return chosen;
  totals_.assign(feasible_.size(), 0);
  for (std::size_t i = 0; i < feasible_.size(); ++i) {
    for (const ResourceScorer& scorer : scheduler.profile->scorers) {
      totals_[i] +=
          scorer.weight * plugin_score(scorer, nodes_[feasible_[i]], pod, version_, uses_);
    }
  }
  if (scheduler.with_extenders) {
    for (const ExtenderConfig& extender : config_.extenders) {
      if (extender.prioritize_verb.empty() || !extender.interested_in(pod.resources)) continue;
      wire::ExtenderArgs args;
      args.pod = info;
      args.node_names = offered_names();
      const wire::HostPriorityList scores = service_.prioritize(args);
      ++out_.stats.extender_prioritize_calls;
      for (std::size_t i = 0; i < scores.size() && i < feasible_.size(); ++i) {
        totals_[i] += scores[i].score * extender.weight * kExtenderScoreFactor;
      }
    }
  }
  // selectHost: the highest total, ties uniformly at random (reservoir sampling).
  std::int64_t best = std::numeric_limits<std::int64_t>::min();
  std::uint64_t ties = 0;
  for (std::size_t i = 0; i < feasible_.size(); ++i) {
    if (totals_[i] > best) {
      best = totals_[i];
      chosen = feasible_[i];
      ties = 1;
    } else if (totals_[i] == best) {
      ++ties;
      if (tie_break_.below(ties) == 0) chosen = feasible_[i];
    }
  }
  return chosen;
}

// Binds the pod to `node`: kube's DRA allocator then kube's binder, the extender's bind verb, or
// kube's own binder. True when the pod is bound.
bool DeployedRun::bind(const SchedulerInstance& scheduler, KubeNode& node, const KubePod& pod,
                       const kube::PodInfo& info, core::DraClaim& claim,
                       std::vector<int>& dra_devices) {
  if (pod.dra_count > 0) {
    // kube's allocator (Reserve/PreBind) writes the claim's allocation, then kube binds.
    const auto taken = dra_first_fit(node.dra_free, pod.dra_count, pod.dra_memory);
    if (!taken) throw std::logic_error("a DRA pod chosen for a node its claim does not fit");
    claim.allocated = true;
    claim.node = node.name;
    claim.reserved_for.push_back(pod.name);
    for (const std::size_t device : *taken) {
      node.dra_free[device] -= pod.dra_memory;
      dra_devices.push_back(static_cast<int>(device));
      claim.results.push_back({std::string(kDraRequest), std::string(kDraDriver), node.name,
                               fmt::format("gpu-{}", device), pod.dra_memory * kDraBytesPerUnit,
                               fmt::format("{}-{}", claim.uid, device)});
    }
    store_.write([&](core::ClusterModel& model, core::PlacementPolicy&) {
      model.update_dra([&](core::DraState& dra) { dra.upsert_claim(claim); });
    });
    watch_sees_bound(info, node.name);
    return true;
  }
  const ExtenderConfig* binder_extender = nullptr;
  if (scheduler.with_extenders) {
    for (const ExtenderConfig& extender : config_.extenders) {
      if (!extender.bind_verb.empty() && extender.interested_in(pod.resources))
        binder_extender = &extender;
    }
  }
  if (binder_extender != nullptr) {
    const service::BindReply reply = service_.bind({pod.name, "default", pod.uid, node.name});
    ++out_.stats.extender_binds;
    return reply.error.empty();
  }
  // kube's own binder; the extender's watch then sees the bound pod.
  watch_sees_bound(info, node.name);
  return true;
}

// kube's cache takes the bound pod; the run counts it and the node's new fragmentation.
void DeployedRun::account_placed(std::size_t chosen, const KubePod& pod,
                                 const core::PodDemand& demand) {
  KubeNode& node = nodes_[chosen];
  node.requested_cpu += pod.cpu;
  node.requested_memory += pod.memory;
  node.nonzero_cpu += pod.nonzero_cpu;
  node.nonzero_memory += pod.nonzero_memory;
  node.requested_gpu_mem += pod.gpu_mem;
  ++node.pods;
  if (!demand.wants_gpu() && node.has_gpus) ++out_.stats.cpu_only_on_gpu_nodes;
  out_.run.allocated += demand.total_gpu();
  ++out_.run.pods_placed;
  store_.read([&](const core::ClusterModel& model, const core::PlacementPolicy&) {
    fragmentation_total_ -= node_fragmentation_[chosen];
    node_fragmentation_[chosen] = core::fragmentation(*model.find_node(node.name), typical_);
    fragmentation_total_ += node_fragmentation_[chosen];
  });
}

DeployedResult DeployedRun::finish(std::size_t pods_arrived, double seconds, double cpu_seconds) {
  sim::RunResult& result = out_.run;
  result.pods_arrived = pods_arrived;
  result.curve = sim::curve_from_records(records_);
  result.final_alloc_pct = 100.0 * static_cast<double>(result.allocated) / capacity_units_;
  result.seconds = seconds;
  result.cpu_seconds = cpu_seconds;
  return std::move(out_);
}

}  // namespace

struct DeployedChurnScheduler::Impl {
  Impl(const std::vector<core::NodeSpec>& nodes, core::TargetWorkload typical_workload,
       SchedulerConfig scheduler_config, DeployedOptions deployed_options, std::uint64_t seed)
      : typical(std::move(typical_workload)),
        config(std::move(scheduler_config)),
        options(std::move(deployed_options)),
        run(nodes, typical, config, options, seed, "") {}
  // The run holds references to these three.
  const core::TargetWorkload typical;
  const SchedulerConfig config;
  const DeployedOptions options;
  DeployedRun run;
};

namespace {
DeployedOptions without_dra(DeployedOptions options) {
  if (options.dra) throw std::invalid_argument("the time mode does not model DRA");
  return options;
}
}  // namespace

DeployedChurnScheduler::DeployedChurnScheduler(const std::vector<core::NodeSpec>& nodes,
                                               const core::TargetWorkload& typical,
                                               SchedulerConfig config, DeployedOptions options,
                                               std::uint64_t seed)
    : impl_(std::make_unique<Impl>(nodes, typical, std::move(config),
                                   without_dra(std::move(options)), seed)) {}

DeployedChurnScheduler::~DeployedChurnScheduler() = default;

std::optional<sim::ChurnPlacement> DeployedChurnScheduler::schedule(const sim::TracePod& pod,
                                                                    std::size_t instance) {
  const std::optional<std::size_t> node = impl_->run.schedule(pod, instance);
  if (!node) return std::nullopt;
  sim::ChurnPlacement placement;
  placement.node = *node;
  if (pod.demand.wants_gpu()) {
    auto gpus = impl_->run.gpus_of(instance);
    if (!gpus || gpus->empty()) {
      throw std::logic_error(fmt::format(
          "GPU pod {} was bound without a GPU in the extender's model (no extender binds it)",
          pod.name));
    }
    placement.gpus = std::move(*gpus);
  }
  return placement;
}

void DeployedChurnScheduler::departed(const sim::TracePod& pod, std::size_t instance,
                                      std::size_t node) {
  impl_->run.depart(pod, instance, node);
}

const DeployedStats& DeployedChurnScheduler::stats() const {
  return impl_->run.stats();
}

DeployedResult run_deployed(const std::vector<core::NodeSpec>& node_specs,
                            const std::vector<sim::TracePod>& pods,
                            const std::vector<std::size_t>& arrivals,
                            const core::TargetWorkload& typical, const SchedulerConfig& config,
                            const DeployedOptions& options, std::uint64_t seed,
                            std::string run_name) {
  const auto started = std::chrono::steady_clock::now();
  const double cpu_started = thread_cpu_seconds();
  DeployedRun run(node_specs, typical, config, options, seed, std::move(run_name));
  run.reserve(arrivals.size());
  for (std::size_t sequence = 0; sequence < arrivals.size(); ++sequence)
    run.schedule(pods[arrivals[sequence]], sequence);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  return run.finish(arrivals.size(), seconds, thread_cpu_seconds() - cpu_started);
}

}  // namespace gpushare::kubesim
