#include "gpushare/kubesim/deployed_run.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <limits>
#include <optional>
#include <stdexcept>
#include <unordered_map>

#include "gpushare/core/fragmentation.h"
#include "gpushare/core/model_pin.h"
#include "gpushare/core/placement_policy.h"
#include "gpushare/core/policy_registry.h"
#include "gpushare/extender/metrics/metric_registry.h"
#include "gpushare/extender/service/model_store.h"
#include "gpushare/extender/service/pod_binder.h"
#include "gpushare/extender/service/rejection_log.h"
#include "gpushare/extender/service/scheduling_service.h"
#include "gpushare/kube/pod_dra_demand.h"
#include "gpushare/kubesim/dra_allocator.h"
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
class SimPodBinder final : public extender::PodBinder {
 public:
  std::optional<kube::PodInfo> find_pod(std::string_view namespace_name,
                                        std::string_view name) override {
    if (current_ && current_->namespace_name == namespace_name && current_->name == name)
      return current_;
    return std::nullopt;
  }
  extender::BindOutcome bind(const kube::PodInfo&, std::string_view,
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

}  // namespace

DeployedResult run_deployed(const std::vector<core::NodeSpec>& node_specs,
                            const std::vector<sim::TracePod>& pods,
                            const std::vector<std::size_t>& arrivals,
                            const core::TargetWorkload& typical, const SchedulerConfig& config,
                            const DeployedOptions& options, std::uint64_t seed,
                            std::string run_name) {
  const auto started = std::chrono::steady_clock::now();
  const double cpu_started = thread_cpu_seconds();
  const KubeVersion version = options.version;

  // The profiles: GPU pods name the configured one; CPU-only pods the same one, or a plain
  // default-scheduler in a second-scheduler set-up.
  const SchedulerProfile* configured = options.scheduler_name.empty()
                                           ? &config.profiles.front()
                                           : config.profile(options.scheduler_name);
  if (configured == nullptr) {
    throw ConfigError(fmt::format("no profile with schedulerName {} in the configuration",
                                  options.scheduler_name));
  }
  const SchedulerProfile plain_default = default_profile(version);
  CpuOnlyPods cpu_only = options.cpu_only_pods;
  if (cpu_only == CpuOnlyPods::kAuto) {
    cpu_only = configured->scheduler_name == "default-scheduler" ? CpuOnlyPods::kSameProfile
                                                                 : CpuOnlyPods::kDefaultScheduler;
  }
  SchedulerInstance gpu_scheduler{configured, true, config.percentage_for(*configured), 0};
  SchedulerInstance plain_scheduler{&plain_default, false, 0, 0};
  SchedulerInstance& cpu_scheduler =
      cpu_only == CpuOnlyPods::kSameProfile ? gpu_scheduler : plain_scheduler;

  // The extender, as the service runs it.
  std::unique_ptr<core::PlacementPolicy> policy = core::make_policy(options.extender_policy);
  if (!policy)
    throw std::invalid_argument(fmt::format("unknown policy '{}'", options.extender_policy));
  extender::ModelStore store(std::move(policy));
  SimPodBinder binder;
  extender::MetricRegistry metrics;
  extender::RejectionLog rejections(16);
  extender::ServiceConfig service_config;
  std::int64_t clock_ns = 1'700'000'000'000'000'000;
  service_config.now_ns = [&clock_ns] { return ++clock_ns; };
  const std::optional<core::ScoreMapping> mapping =
      core::score_mapping_named(options.score_mapping);
  if (!mapping)
    throw std::invalid_argument(fmt::format("unknown score mapping '{}'", options.score_mapping));
  service_config.score_mapping = *mapping;
  extender::SchedulingService service(store, binder, metrics, rejections, service_config);
  // What the extender's watch makes of a pod kube bound itself: it learns the pod's demand (a DRA
  // pod's from its claims) and holds what kube::allocation_of reads from the bound pod.
  const auto watch_sees_bound = [&store](const kube::PodInfo& pending,
                                         const std::string& node_name) {
    store.write([&](core::ClusterModel& model, core::PlacementPolicy& policy) {
      policy.observe(kube::learned_demand(model, pending));
      kube::PodInfo bound = pending;
      bound.node_name = node_name;
      bound.phase = "Running";
      if (auto allocation = kube::allocation_of(bound)) model.add_pod(std::move(*allocation));
      policy.observe_cluster(model.nodes());
    });
  };

  std::vector<KubeNode> nodes;
  nodes.reserve(node_specs.size());
  std::unordered_map<std::string_view, std::size_t> node_index;
  store.write([&](core::ClusterModel& model, core::PlacementPolicy&) {
    for (const core::NodeSpec& trace_spec : node_specs) {
      core::NodeSpec spec = trace_spec;
      spec.memory = trace_spec.memory * kMiB;  // the trace counts MiB
      KubeNode node;
      node.name = spec.name;
      if (!spec.gpu_model.empty()) node.gpu_model = spec.gpu_model;
      node.has_gpus = spec.gpu_count > 0;
      node.allocatable_cpu = spec.cpu_milli;
      node.allocatable_memory = spec.memory;
      node.allocatable_pods = options.max_pods_per_node;
      if (options.dra) {
        // The Node object advertises no GPU resource; its ResourceSlice publishes the GPUs.
        node.dra_free.assign(static_cast<std::size_t>(std::max(0, spec.gpu_count)),
                             spec.memory_per_gpu);
        spec.gpu_count = 0;
        spec.memory_per_gpu = 0;
      } else {
        node.allocatable_gpu_mem = spec.memory_per_gpu * spec.gpu_count;
        node.allocatable_gpu_count = spec.gpu_count;
      }
      nodes.push_back(std::move(node));
      model.upsert_node(std::move(spec));
    }
    if (options.dra) {
      model.update_dra([&](core::DraState& dra) {
        dra.set_config({std::string(kDraDriver), kDraBytesPerUnit});
        dra.upsert_class({std::string(kDraDriver), std::string(kDraDriver)});
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
                                     true});
          }
          dra.upsert_slice(std::move(slice));
        }
      });
    }
  });
  for (std::size_t i = 0; i < nodes.size(); ++i) node_index.emplace(nodes[i].name, i);
  const std::size_t node_count = nodes.size();
  if (node_count == 0) throw std::invalid_argument("no nodes");

  // Which resources an extender with ignoredByScheduler takes off kube's own fit check.
  bool gpu_mem_ignored_by_scheduler = false;
  for (const ExtenderConfig& extender : config.extenders) {
    for (const ManagedResource& managed : extender.managed_resources) {
      if (managed.name == kGpuMemResource && managed.ignored_by_scheduler)
        gpu_mem_ignored_by_scheduler = true;
    }
  }

  core::Units capacity = 0;
  for (const core::NodeSpec& spec : node_specs)
    capacity += spec.memory_per_gpu * std::max(0, spec.gpu_count);
  const double capacity_units = static_cast<double>(std::max<core::Units>(1, capacity));

  std::vector<double> node_fragmentation(node_count, 0);
  double fragmentation_total = 0;
  store.read([&](const core::ClusterModel& model, const core::PlacementPolicy&) {
    for (std::size_t i = 0; i < node_count; ++i) {
      node_fragmentation[i] = core::fragmentation(*model.find_node(nodes[i].name), typical);
      fragmentation_total += node_fragmentation[i];
    }
  });

  sim::SeededRandom tie_break(seed ^ 0x73656c6563746877ULL);
  DeployedResult out;
  sim::RunResult& result = out.run;
  DeployedStats& stats = out.stats;
  result.policy = std::move(run_name);
  result.seed = seed;
  result.capacity = capacity;
  std::vector<sim::Record> records;
  records.reserve(arrivals.size());
  out.placements.reserve(arrivals.size());
  std::vector<std::size_t> feasible;
  std::vector<std::int64_t> totals;
  std::vector<ResourceUse> uses;

  for (std::size_t sequence = 0; sequence < arrivals.size(); ++sequence) {
    const sim::TracePod& trace_pod = pods[arrivals[sequence]];
    const core::PodDemand& demand = trace_pod.demand;
    result.arrived += demand.total_gpu();
    KubePod pod;
    pod.name = fmt::format("{}-{}", trace_pod.name, sequence);
    pod.uid = fmt::format("sim-{}", sequence);
    pod.cpu = demand.cpu_milli;
    pod.memory = demand.memory * kMiB;
    if (options.dra && demand.wants_gpu()) {
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
    const bool wants_gpu = demand.wants_gpu();
    const bool dra_pod = pod.dra_count > 0;
    (wants_gpu ? stats.gpu_pods : stats.cpu_only_pods) += 1;
    SchedulerInstance& scheduler = wants_gpu ? gpu_scheduler : cpu_scheduler;

    kube::PodInfo info;
    info.uid = pod.uid;
    info.namespace_name = "default";
    info.name = pod.name;
    info.request = pod.gpu_mem;
    info.cpu_milli = pod.cpu;
    info.memory = pod.memory;
    info.model_pin = pod.pin;  // as kube::decode_pod reads the pod's node affinity
    // A DRA pod's claim, generated from its template before the pod is scheduled: pending until
    // kube's allocator writes its allocation at bind.
    core::DraClaim claim;
    if (dra_pod) {
      claim.namespace_name = "default";
      claim.name = fmt::format("{}-{}", pod.name, kDraRequest);
      claim.uid = fmt::format("claim-{}", sequence);
      claim.requests.push_back({std::string(kDraRequest), std::string(kDraDriver), pod.dra_count,
                                false, pod.dra_memory * kDraBytesPerUnit});
      info.resource_claims.push_back({std::string(kDraRequest), claim.name, {}});
      store.write([&](core::ClusterModel& model, core::PlacementPolicy&) {
        model.update_dra([&](core::DraState& dra) { dra.upsert_claim(claim); });
      });
    }
    binder.set_current(info);

    const auto offered_names = [&] {
      std::vector<std::string> names;
      names.reserve(feasible.size());
      for (std::size_t index : feasible) names.push_back(nodes[index].name);
      return names;
    };
    // Filter from the rotating start index until enough feasible nodes are found, then the
    // extenders. A pod whose sampled nodes the extender all rejects goes back to kube's queue and
    // is retried after a back-off from where the start index moved on: here at once, until every
    // node has been examined (pods never leave, so waiting could not make room).
    const std::size_t to_find = feasible_nodes_to_find(node_count, scheduler.percentage);
    std::size_t examined = 0;
    for (;;) {
      feasible.clear();
      std::size_t processed = 0;
      for (std::size_t step = 0; step < node_count && feasible.size() < to_find; ++step) {
        const std::size_t index = (scheduler.next_start + step) % node_count;
        ++processed;
        const KubeNode& node = nodes[index];
        if (node.pods + 1 > node.allocatable_pods) continue;
        if (pod.cpu > 0 && pod.cpu > node.allocatable_cpu - node.requested_cpu) continue;
        if (pod.memory > 0 && pod.memory > node.allocatable_memory - node.requested_memory)
          continue;
        if (pod.gpu_mem > 0 && !gpu_mem_ignored_by_scheduler &&
            pod.gpu_mem > node.allocatable_gpu_mem - node.requested_gpu_mem) {
          continue;
        }
        if (!pod.pin.allows(node.gpu_model)) continue;
        // DynamicResources: the node's allocator must find the claim's devices.
        if (dra_pod && !dra_first_fit(node.dra_free, pod.dra_count, pod.dra_memory)) continue;
        feasible.push_back(index);
      }
      scheduler.next_start = (scheduler.next_start + processed) % node_count;
      examined += processed;

      // Extenders filter.
      if (scheduler.with_extenders) {
        for (const ExtenderConfig& extender : config.extenders) {
          if (feasible.empty()) break;
          if (extender.filter_verb.empty() || !extender.interested_in(pod.resources)) continue;
          extender::ExtenderArgs args;
          args.pod = info;
          args.node_names = offered_names();
          const extender::FilterResult filtered = service.filter(std::move(args));
          ++stats.extender_filter_calls;
          // Survivors come back in offered order.
          std::vector<std::size_t> kept;
          std::size_t cursor = 0;
          for (const std::string_view name : filtered.node_names) {
            while (cursor < feasible.size() && nodes[feasible[cursor]].name != name) ++cursor;
            if (cursor == feasible.size())
              throw std::logic_error("extender filter returned a node it was not offered");
            kept.push_back(feasible[cursor++]);
          }
          feasible = std::move(kept);
        }
      }
      if (!feasible.empty() || examined >= node_count) break;
      ++stats.retries;
    }

    std::optional<std::size_t> chosen;
    if (feasible.size() == 1) {
      chosen = feasible.front();
      ++stats.single_feasible;
    } else if (!feasible.empty()) {
      totals.assign(feasible.size(), 0);
      for (std::size_t i = 0; i < feasible.size(); ++i) {
        for (const ResourceScorer& scorer : scheduler.profile->scorers) {
          totals[i] += scorer.weight * plugin_score(scorer, nodes[feasible[i]], pod, version, uses);
        }
      }
      if (scheduler.with_extenders) {
        for (const ExtenderConfig& extender : config.extenders) {
          if (extender.prioritize_verb.empty() || !extender.interested_in(pod.resources)) continue;
          extender::ExtenderArgs args;
          args.pod = info;
          args.node_names = offered_names();
          const std::vector<extender::HostPriority> scores = service.prioritize(std::move(args));
          ++stats.extender_prioritize_calls;
          for (std::size_t i = 0; i < scores.size() && i < feasible.size(); ++i) {
            totals[i] += scores[i].score * extender.weight * kExtenderScoreFactor;
          }
        }
      }
      // selectHost: the highest total, ties uniformly at random (reservoir sampling).
      std::int64_t best = std::numeric_limits<std::int64_t>::min();
      std::uint64_t ties = 0;
      for (std::size_t i = 0; i < feasible.size(); ++i) {
        if (totals[i] > best) {
          best = totals[i];
          chosen = feasible[i];
          ties = 1;
        } else if (totals[i] == best) {
          ++ties;
          if (tie_break.below(ties) == 0) chosen = feasible[i];
        }
      }
    }

    bool placed = false;
    std::vector<int> dra_devices;
    if (chosen) {
      KubeNode& node = nodes[*chosen];
      const ExtenderConfig* binder_extender = nullptr;
      if (dra_pod) {
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
        store.write([&](core::ClusterModel& model, core::PlacementPolicy&) {
          model.update_dra([&](core::DraState& dra) { dra.upsert_claim(claim); });
        });
        watch_sees_bound(info, node.name);
        placed = true;
      } else if (scheduler.with_extenders) {
        for (const ExtenderConfig& extender : config.extenders) {
          if (!extender.bind_verb.empty() && extender.interested_in(pod.resources))
            binder_extender = &extender;
        }
      }
      if (dra_pod) {
        // Bound above.
      } else if (binder_extender != nullptr) {
        const extender::BindReply reply = service.bind({pod.name, "default", pod.uid, node.name});
        ++stats.extender_binds;
        placed = reply.error.empty();
      } else {
        // kube's own binder; the extender's watch then sees the bound pod.
        watch_sees_bound(info, node.name);
        placed = true;
      }
      if (placed) {
        node.requested_cpu += pod.cpu;
        node.requested_memory += pod.memory;
        node.nonzero_cpu += pod.nonzero_cpu;
        node.nonzero_memory += pod.nonzero_memory;
        node.requested_gpu_mem += pod.gpu_mem;
        ++node.pods;
        if (!wants_gpu && node.has_gpus) ++stats.cpu_only_on_gpu_nodes;
        result.allocated += demand.total_gpu();
        ++result.pods_placed;
        store.read([&](const core::ClusterModel& model, const core::PlacementPolicy&) {
          fragmentation_total -= node_fragmentation[*chosen];
          node_fragmentation[*chosen] = core::fragmentation(*model.find_node(node.name), typical);
          fragmentation_total += node_fragmentation[*chosen];
        });
      }
    }
    if (!placed) (wants_gpu ? stats.failed_gpu_pods : stats.failed_cpu_only_pods) += 1;
    if (dra_pod && !placed) {
      // The pod stays pending and its claim unallocated: nothing the model needs to keep.
      store.write([&](core::ClusterModel& model, core::PlacementPolicy&) {
        model.update_dra([&](core::DraState& dra) { dra.remove_claim(claim.key()); });
      });
    }
    out.placements.push_back(placed ? nodes[*chosen].name : std::string());
    if (options.dra) out.dra_devices.push_back(std::move(dra_devices));
    records.push_back({100.0 * static_cast<double>(result.arrived) / capacity_units,
                       100.0 * static_cast<double>(result.allocated) / capacity_units,
                       100.0 * fragmentation_total / capacity_units});
  }

  result.pods_arrived = arrivals.size();
  result.curve = sim::curve_from_records(records);
  result.final_alloc_pct = 100.0 * static_cast<double>(result.allocated) / capacity_units;
  result.seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  result.cpu_seconds = thread_cpu_seconds() - cpu_started;
  return out;
}

}  // namespace gpushare::kubesim
