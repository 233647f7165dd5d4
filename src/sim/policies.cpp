#include "gpushare/sim/policies.h"

#include <algorithm>
#include <cmath>

#include "gpushare/core/fit.h"
#include "gpushare/core/fragmentation.h"
#include "gpushare/core/policies/best_fit.h"
#include "gpushare/core/policies/fgd.h"
#include "gpushare/core/policies/fgd_plus.h"
#include "gpushare/core/policies/random_choice.h"
#include "gpushare/core/policy_registry.h"

namespace gpushare::sim {
namespace {

int clustering_tag(const core::PodDemand& pod, core::Units gpu_capacity) {
  if (pod.gpu_count == 1 && pod.per_gpu < gpu_capacity) return 0;
  return pod.gpu_count;
}

// kube-scheduler's non-zero request defaults used for scoring.
constexpr std::int64_t kDefaultCpuMilli = 100;
constexpr std::int64_t kDefaultMemoryMiB = 200;

std::int64_t least_allocated(std::int64_t requested, std::int64_t capacity) {
  if (capacity <= 0 || requested > capacity) return 0;
  return (capacity - requested) * 100 / capacity;
}

}  // namespace

std::optional<core::Placement> GpuClusteringPolicy::place(const core::NodeState& node,
                                                          const core::PodDemand& pod) const {
  if (!fits(node, pod)) return std::nullopt;
  core::Placement placement;
  placement.gpus = core::best_fit_gpus(node, pod);
  if (!pod.wants_gpu()) return placement;  // score 0
  const core::Units capacity = std::max<core::Units>(1, node.spec().memory_per_gpu);
  const std::int64_t scale = 8 * capacity;
  const std::int64_t left = core::FreeResources::of(node).total_gpu_free();
  const std::int64_t base = 25 * (scale - left) / scale;
  const int tag = clustering_tag(pod, capacity);
  int bonus = 25;  // no GPU pods on the node yet
  if (auto it = tags_by_node_.find(node.name()); it != tags_by_node_.end() && !it->second.empty()) {
    const auto& tags = it->second;
    if (tags.contains(tag)) {
      bonus = tags.size() == 1 ? 75 : 50;
    } else {
      bonus = 0;
    }
  }
  placement.score = static_cast<double>(base + bonus);
  return placement;
}

void GpuClusteringPolicy::placed(const core::NodeState& node, const core::PodDemand& pod) {
  if (!pod.wants_gpu()) return;
  ++tags_by_node_[node.name()][clustering_tag(pod, node.spec().memory_per_gpu)];
}

std::optional<core::Placement> KubeDefaultPolicy::place(const core::NodeState& node,
                                                        const core::PodDemand& pod) const {
  if (!fits(node, pod)) return std::nullopt;
  const std::int64_t cpu_capacity = node.spec().cpu_milli;
  const std::int64_t memory_capacity = node.spec().memory;
  const std::int64_t cpu_requested =
      node.cpu_used() + (pod.cpu_milli > 0 ? pod.cpu_milli : kDefaultCpuMilli);
  const std::int64_t memory_requested =
      node.memory_used() + (pod.memory > 0 ? pod.memory : kDefaultMemoryMiB);
  // NodeResourcesFit, LeastAllocated strategy: weighted mean of per-resource scores.
  const std::int64_t least = (least_allocated(cpu_requested, cpu_capacity) +
                              least_allocated(memory_requested, memory_capacity)) /
                             2;
  // NodeResourcesBalancedAllocation: 1 - standard deviation of the requested fractions.
  const auto fraction = [](std::int64_t requested, std::int64_t capacity) {
    return capacity <= 0
               ? 0.0
               : std::min(1.0, static_cast<double>(requested) / static_cast<double>(capacity));
  };
  const double deviation = std::abs(fraction(cpu_requested, cpu_capacity) -
                                    fraction(memory_requested, memory_capacity)) /
                           2;
  const auto balanced = static_cast<std::int64_t>((1 - deviation) * 100);
  core::Placement placement;
  placement.score = static_cast<double>(least + balanced);
  placement.gpus = core::best_fit_gpus(node, pod);
  return placement;
}

GpuOnlyView::GpuOnlyView(std::unique_ptr<core::PlacementPolicy> inner) : inner_(std::move(inner)) {}

std::optional<core::Placement> GpuOnlyView::place(const core::NodeState& node,
                                                  const core::PodDemand& pod) const {
  if (!fits(node, pod)) return std::nullopt;  // kube-scheduler's filters
  core::NodeSpec spec = node.spec();
  spec.cpu_milli = 0;
  spec.memory = 0;
  core::NodeState gpu_only(std::move(spec));
  std::vector<int> unhealthy;
  for (int i = 0; i < node.gpu_count(); ++i) {
    const auto& gpu = node.gpus()[static_cast<std::size_t>(i)];
    if (gpu.used > 0) gpu_only.add_usage(i, gpu.used);
    if (!gpu.healthy) unhealthy.push_back(i);
  }
  if (!unhealthy.empty()) gpu_only.set_unhealthy(unhealthy);
  if (node.unindexed_used() > 0) gpu_only.add_usage(-1, node.unindexed_used());
  core::PodDemand gpu_demand = pod;
  gpu_demand.cpu_milli = 0;
  gpu_demand.memory = 0;
  return inner_->place(gpu_only, gpu_demand);
}

void GpuOnlyView::observe(const core::PodDemand& pod) {
  core::PodDemand gpu_demand = pod;
  gpu_demand.cpu_milli = 0;
  gpu_demand.memory = 0;
  inner_->observe(gpu_demand);
}

std::vector<std::string> sim_policy_names() {
  std::vector<std::string> names = core::policy_names();
  names.emplace_back("fgd-online");
  names.emplace_back("fgd-plus-online");
  names.emplace_back("gpu-clustering");
  names.emplace_back("gpushare-original");
  return names;
}

std::optional<Contender> make_contender(std::string_view full_name, const TraceContext& context) {
  std::string_view name = full_name;
  const bool gpu_only = name.ends_with(kGpuOnlySuffix);
  if (gpu_only) name.remove_suffix(kGpuOnlySuffix.size());
  Contender contender;
  contender.name = std::string(full_name);
  if (name == "fgd") {
    contender.policy = std::make_unique<core::FgdPolicy>(context.typical_workload);
  } else if (name == "fgd-online") {
    contender.policy = std::make_unique<core::FgdPolicy>();
  } else if (name == "fgd-plus") {
    contender.policy =
        std::make_unique<core::FgdPlusPolicy>(core::FgdPlusPolicy::target_for(context.trace_pods));
  } else if (name == "fgd-plus-online") {
    contender.policy = std::make_unique<core::FgdPlusPolicy>();
  } else if (name == "random") {
    contender.policy = std::make_unique<core::RandomPolicy>(context.seed);
  } else if (name == "gpu-clustering") {
    auto policy = std::make_unique<GpuClusteringPolicy>();
    contender.observer = policy.get();
    contender.policy = std::move(policy);
  } else if (name == "gpushare-original") {
    contender.policy = std::make_unique<KubeDefaultPolicy>();
  } else {
    contender.policy = core::make_policy(name);
  }
  if (!contender.policy) return std::nullopt;
  if (gpu_only) {
    if (contender.observer != nullptr) return std::nullopt;  // needs the real node's history
    contender.policy = std::make_unique<GpuOnlyView>(std::move(contender.policy));
  }
  return contender;
}

}  // namespace gpushare::sim
