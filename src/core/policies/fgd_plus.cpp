#include "gpushare/core/policies/fgd_plus.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <limits>

#include "gpushare/core/fit.h"
#include "reference_candidates.h"

namespace gpushare::core {
namespace {

constexpr std::int64_t kUntracked = std::numeric_limits<std::int64_t>::max();

// 0 up to `threshold`, rising linearly to 1 at 1, 1 beyond.
double ramp(double ratio, double threshold) {
  if (threshold >= 1) return ratio >= 1 ? 1.0 : 0.0;
  return std::clamp((ratio - threshold) / (1 - threshold), 0.0, 1.0);
}

int whole_free_gpus(const NodeState& node) {
  int whole = 0;
  for (const GpuState& gpu : node.gpus()) whole += gpu.healthy && gpu.used == 0 ? 1 : 0;
  return whole;
}

// How many pods of the multi-GPU `shape` fit in what a node has free (its model allowed).
std::int64_t hosts(const WorkloadShape& shape, int whole_free, std::int64_t cpu_free,
                   std::int64_t memory_free) {
  std::int64_t count = whole_free / shape.gpu_count;
  if (shape.cpu_milli > 0 && cpu_free != kUntracked) {
    count = std::min(count, std::max<std::int64_t>(0, cpu_free) / shape.cpu_milli);
  }
  if (shape.memory > 0 && memory_free != kUntracked) {
    count = std::min(count, std::max<std::int64_t>(0, memory_free) / shape.memory);
  }
  return count;
}

// Every host of `bigger` is a host of `smaller`: the two compete for the latter's hosts.
bool needs_at_least(const WorkloadShape& bigger, const WorkloadShape& smaller) {
  if (bigger.gpu_count < smaller.gpu_count || bigger.cpu_milli < smaller.cpu_milli ||
      bigger.memory < smaller.memory) {
    return false;
  }
  if (smaller.allowed_models.empty()) return true;
  return !bigger.allowed_models.empty() &&
         std::all_of(bigger.allowed_models.begin(), bigger.allowed_models.end(),
                     [&](const std::string& m) { return smaller.allows_model(m); });
}

// Idle GPU memory, GPU capacity and GPUs of the cluster.
struct ClusterGpus {
  double idle = 0;
  double capacity = 0;
  double gpus = 0;
  Units mean_per_gpu() const { return static_cast<Units>(capacity / gpus); }
};

Units healthy_free(const NodeState& node) {
  Units free = 0;
  for (const GpuState& gpu : node.gpus()) free += gpu.healthy ? gpu.free() : 0;
  return free;
}

ClusterGpus cluster_gpus(std::span<const NodeState> nodes) {
  ClusterGpus cluster;
  for (const NodeState& node : nodes) {
    if (node.gpu_count() == 0) continue;
    cluster.idle += static_cast<double>(healthy_free(node));
    cluster.capacity += static_cast<double>(node.spec().memory_per_gpu) * node.gpu_count();
    cluster.gpus += node.gpu_count();
  }
  return cluster;
}

// One shape's demand routed to the classes that host it (see FgdPlusPolicy).
struct RoutedDemand {
  double gpus = 0;
  std::vector<std::size_t> classes;  // indices into the slots
};

// Water-filling: each demand, those with the fewest classes first, raises the loads (routed
// GPUs / slots) of its classes to one common level, the least-loaded first. Returns the routed
// GPUs per class; `slots` are in GPUs, each above 0 for every class a demand names.
std::vector<double> route_demand(std::vector<RoutedDemand> demands,
                                 const std::vector<double>& slots) {
  std::vector<double> routed(slots.size(), 0.0);
  std::stable_sort(demands.begin(), demands.end(), [](const auto& a, const auto& b) {
    return a.classes.size() < b.classes.size();
  });
  for (RoutedDemand& demand : demands) {
    std::vector<std::size_t>& classes = demand.classes;
    std::sort(classes.begin(), classes.end(), [&](std::size_t a, std::size_t b) {
      return routed[a] / slots[a] < routed[b] / slots[b];
    });
    // Raise the first `raised` classes together: the level where they take the demand.
    double routed_sum = 0;
    double slot_sum = 0;
    double level = 0;
    for (std::size_t raised = 0; raised < classes.size(); ++raised) {
      routed_sum += routed[classes[raised]];
      slot_sum += slots[classes[raised]];
      level = (demand.gpus + routed_sum) / slot_sum;
      if (raised + 1 == classes.size()) break;
      const std::size_t next = classes[raised + 1];
      if (level <= routed[next] / slots[next]) break;
    }
    for (std::size_t c : classes) routed[c] = std::max(routed[c], level * slots[c]);
  }
  return routed;
}

}  // namespace

WorkloadHistogram::Options FgdPlusPolicy::default_learning() {
  WorkloadHistogram::Options options;
  options.with_memory = true;
  options.weighting = ShapeWeighting::kSqrtGpus;
  return options;
}

TargetWorkload FgdPlusPolicy::target_for(std::span<const PodDemand> pods) {
  const auto learning = default_learning();
  return typical_workload(pods, learning.coverage, learning.with_memory, learning.weighting);
}

FgdPlusPolicy::FgdPlusPolicy() : FgdPlusPolicy(default_learning(), Options{}) {}

FgdPlusPolicy::FgdPlusPolicy(WorkloadHistogram::Options learning, Options options)
    : learned_(WorkloadHistogram(learning)), weighting_(learning.weighting), options_(options) {
  update_ratios();
}

FgdPlusPolicy::FgdPlusPolicy(TargetWorkload fixed_target, Options options)
    : fixed_(std::move(fixed_target)), options_(options) {
  update_ratios();
}

const TargetWorkload& FgdPlusPolicy::target() const {
  return learned_ ? learned_->target() : fixed_;
}

void FgdPlusPolicy::update_ratios() {
  double cpu = 0;
  double memory = 0;
  double gpu = 0;
  for (const auto& [shape, weight] : target()) {
    if (shape.relative) continue;  // the prior says nothing about CPU or memory
    cpu += weight * static_cast<double>(shape.cpu_milli);
    memory += weight * static_cast<double>(shape.memory);
    if (shape.wants_gpu()) gpu += weight * static_cast<double>(shape.per_gpu * shape.gpu_count);
  }
  cpu_per_gpu_unit_ = gpu > 0 ? cpu / gpu : 0;
  memory_per_gpu_unit_ = gpu > 0 ? memory / gpu : 0;
  compiled_ = CompiledWorkload(target());
  prices_stale_ = true;
}

const std::vector<WeightedShape>& FgdPlusPolicy::demand_mix() const {
  return learned_ ? learned_->shapes() : fixed_;
}

std::vector<double> FgdPlusPolicy::demand_shares(Units per_gpu) const {
  std::vector<double> shares;
  shares.reserve(demand_mix().size());
  double total = 0;
  for (const auto& [shape, weight] : demand_mix()) {
    double demand = 0;
    if (shape.wants_gpu()) {
      // The target weighs a pod of g GPUs sqrt(g) (or 1) times; its demand is one pod's.
      PodDemand pod;
      pod.per_gpu = 1;
      pod.gpu_count = shape.gpu_count;
      demand = weight / pod_weight(pod, weighting_) *
               static_cast<double>(shape.per_gpu_on(per_gpu) * shape.gpu_count);
    }
    shares.push_back(demand);
    total += demand;
  }
  for (double& share : shares) share = total > 0 ? share / total : 0;
  return shares;
}

std::vector<ModelPrice> FgdPlusPolicy::model_prices(std::span<const NodeState> nodes) const {
  std::vector<ModelPrice> prices;
  if (options_.scarcity_weight == 0) return prices;
  const ClusterGpus cluster = cluster_gpus(nodes);
  if (cluster.gpus == 0) return prices;
  // Idle GPU memory per model.
  std::vector<std::pair<std::string_view, double>> idle_by_model;
  for (const NodeState& node : nodes) {
    if (node.gpu_count() == 0) continue;
    const std::string_view model = node.spec().gpu_model;
    auto it = std::find_if(idle_by_model.begin(), idle_by_model.end(),
                           [&](const auto& entry) { return entry.first == model; });
    if (it == idle_by_model.end()) it = idle_by_model.insert(idle_by_model.end(), {model, 0.0});
    it->second += static_cast<double>(healthy_free(node));
  }
  // The shapes' shares of GPU demand summed per pinned model set.
  const std::vector<double> shares = demand_shares(cluster.mean_per_gpu());
  std::vector<double> pinned;  // parallel to prices
  for (std::size_t i = 0; i < shares.size(); ++i) {
    const WorkloadShape& shape = demand_mix()[i].shape;
    if (shares[i] <= 0 || shape.allowed_models.empty()) continue;
    auto it = std::find_if(prices.begin(), prices.end(),
                           [&](const ModelPrice& p) { return p.models == shape.allowed_models; });
    if (it == prices.end()) {
      prices.push_back({shape.allowed_models, 0});
      pinned.push_back(0);
      it = prices.end() - 1;
    }
    pinned[static_cast<std::size_t>(it - prices.begin())] += shares[i];
  }
  for (std::size_t a = 0; a < prices.size(); ++a) {
    double supply = 0;
    for (const auto& [model, free] : idle_by_model) {
      if (std::binary_search(prices[a].models.begin(), prices[a].models.end(), model))
        supply += free;
    }
    const double demand = pinned[a] * cluster.idle;
    prices[a].price = supply > 0 ? ramp(demand / supply, options_.scarcity_threshold) : 1.0;
  }
  return prices;
}

bool HostClass::holds(const NodeState& node) const {
  const NodeSpec& spec = node.spec();
  return node.gpu_count() == gpu_count && spec.cpu_milli == cpu_milli && spec.memory == memory &&
         spec.gpu_model == gpu_model;
}

std::vector<HostClass> FgdPlusPolicy::host_classes(std::span<const NodeState> nodes) {
  std::vector<HostClass> classes;
  for (const NodeState& node : nodes) {
    if (classes.size() == kMaxHostClasses) break;
    if (node.gpu_count() < 2) continue;
    if (std::any_of(classes.begin(), classes.end(),
                    [&](const HostClass& c) { return c.holds(node); })) {
      continue;
    }
    const NodeSpec& spec = node.spec();
    classes.push_back({node.gpu_count(), spec.cpu_milli, spec.memory, spec.gpu_model});
  }
  return classes;
}

std::vector<HostPrice> FgdPlusPolicy::host_prices(std::span<const NodeState> nodes) const {
  return host_prices(nodes, host_classes(nodes));
}

std::vector<HostPrice> FgdPlusPolicy::host_prices(std::span<const NodeState> nodes,
                                                  const std::vector<HostClass>& classes) const {
  std::vector<HostPrice> prices;
  if (options_.host_weight == 0) return prices;
  const ClusterGpus cluster = cluster_gpus(nodes);
  if (cluster.gpus == 0 || cluster.mean_per_gpu() <= 0) return prices;
  const std::vector<double> shares = demand_shares(cluster.mean_per_gpu());
  std::vector<std::size_t> multi;  // demand_mix() indices of the multi-GPU shapes
  for (std::size_t i = 0; i < shares.size(); ++i) {
    if (shares[i] > 0 && demand_mix()[i].shape.gpu_count > 1) multi.push_back(i);
  }
  if (multi.empty()) return prices;
  std::vector<double> supply(multi.size(), 0.0);  // pods each shape can still be hosted
  // The same per host class (row per shape); a node of no class counts in `supply` alone.
  std::vector<std::vector<double>> class_supply(multi.size(),
                                                std::vector<double>(classes.size(), 0.0));
  // FNV-1a over the indices of the nodes that host each shape when empty.
  std::vector<std::uint64_t> host_set(multi.size(), 14695981039346656037ULL);
  for (std::size_t n = 0; n < nodes.size(); ++n) {
    const NodeState& node = nodes[n];
    if (node.gpu_count() < 2) continue;
    const NodeSpec& spec = node.spec();
    const std::int64_t cpu = spec.cpu_milli > 0 ? spec.cpu_milli : kUntracked;
    const std::int64_t memory = spec.memory > 0 ? spec.memory : kUntracked;
    const int whole = whole_free_gpus(node);
    const auto known = std::find_if(classes.begin(), classes.end(),
                                    [&](const HostClass& c) { return c.holds(node); });
    const auto host_class = static_cast<std::size_t>(known - classes.begin());
    for (std::size_t k = 0; k < multi.size(); ++k) {
      const WorkloadShape& shape = demand_mix()[multi[k]].shape;
      if (!shape.allows_model(spec.gpu_model)) continue;
      if (hosts(shape, node.gpu_count(), cpu, memory) > 0) {
        host_set[k] = (host_set[k] ^ static_cast<std::uint64_t>(n)) * 1099511628211ULL;
      }
      if (whole < 2) continue;
      const auto hosted =
          static_cast<double>(hosts(shape, whole, node.cpu_free(), node.memory_free()));
      supply[k] += hosted;
      if (known != classes.end()) class_supply[k][host_class] += hosted;
    }
  }
  const double idle_gpus = cluster.idle / static_cast<double>(cluster.mean_per_gpu());
  // Which multi-GPU shapes each host class can host when empty.
  std::vector<std::vector<bool>> hostable(classes.size(), std::vector<bool>(multi.size()));
  for (std::size_t c = 0; c < classes.size(); ++c) {
    const HostClass& host_class = classes[c];
    const std::int64_t cpu = host_class.cpu_milli > 0 ? host_class.cpu_milli : kUntracked;
    const std::int64_t memory = host_class.memory > 0 ? host_class.memory : kUntracked;
    for (std::size_t j = 0; j < multi.size(); ++j) {
      const WorkloadShape& shape = demand_mix()[multi[j]].shape;
      hostable[c][j] = shape.allows_model(host_class.gpu_model) &&
                       hosts(shape, host_class.gpu_count, cpu, memory) > 0;
    }
  }
  for (std::size_t k = 0; k < multi.size(); ++k) {
    const WorkloadShape& shape = demand_mix()[multi[k]].shape;
    if (supply[k] == 0) continue;  // no host left to protect
    const double slots = supply[k] * shape.gpu_count;
    double demand = 0;  // GPUs still to come that need a host of `shape`
    std::vector<double> class_demand(classes.size(), 0.0);  // of them, those each class hosts
    std::vector<double> class_slots(classes.size());
    for (std::size_t c = 0; c < classes.size(); ++c) {
      class_slots[c] = class_supply[k][c] * shape.gpu_count;
    }
    std::vector<RoutedDemand> routed;  // the same, by the classes with slots left that host it
    for (std::size_t j = 0; j < multi.size(); ++j) {
      if (!needs_at_least(demand_mix()[multi[j]].shape, shape)) continue;
      const double gpus = shares[multi[j]] * idle_gpus;
      demand += gpus;
      RoutedDemand route{gpus, {}};
      for (std::size_t c = 0; c < classes.size(); ++c) {
        class_demand[c] += hostable[c][j] ? gpus : 0;
        if (hostable[c][j] && class_slots[c] > 0) route.classes.push_back(c);
      }
      if (!route.classes.empty()) routed.push_back(std::move(route));
    }
    const double ratio = std::min(1.0, demand / slots);
    const double price = ramp(ratio, options_.host_threshold);
    if (price > 0 || (options_.exclusive_weight != 0 && ratio > 0)) {
      std::vector<double> class_prices;
      class_prices.reserve(classes.size());
      for (double d : class_demand) {
        class_prices.push_back(ramp(std::min(1.0, d / slots), options_.host_threshold));
      }
      const std::vector<double> loads = route_demand(std::move(routed), class_slots);
      // A class with no slot left now keeps its class price until the next recomputation.
      std::vector<double> routed_prices = class_prices;
      for (std::size_t c = 0; c < classes.size(); ++c) {
        if (class_slots[c] > 0) {
          routed_prices[c] =
              ramp(std::min(1.0, loads[c] / class_slots[c]), options_.host_threshold);
        }
      }
      prices.push_back(
          {shape, price, host_set[k], ratio, std::move(class_prices), std::move(routed_prices)});
    }
  }
  return prices;
}

double FgdPlusPolicy::host_cost(const NodeState& node, const PodDemand& pod) const {
  if (host_prices_.empty() || node.gpu_count() < 2) return 0;
  const int whole = whole_free_gpus(node);
  if (whole < 2) return 0;
  int taken = 0;  // whole GPUs the pod takes
  if (pod.needs_whole_gpus()) {
    taken = pod.gpu_count;
  } else if (pod.wants_gpu()) {
    // A sharing pod goes to a used GPU where one has room (see place_with's candidates).
    taken = std::any_of(node.gpus().begin(), node.gpus().end(),
                        [&](const GpuState& gpu) {
                          return gpu.healthy && gpu.used > 0 && gpu.free() >= pod.per_gpu;
                        })
                ? 0
                : 1;
  }
  // The node's host class, if the prices saw it.
  const auto known =
      std::find_if(host_classes_.begin(), host_classes_.end(),
                   [&](const HostClass& host_class) { return host_class.holds(node); });
  const std::size_t host_class = static_cast<std::size_t>(known - host_classes_.begin());
  const bool classed = known != host_classes_.end();
  const bool middle = middle_pod(pod);
  // A pod of one GPU or less on a node whose class can use its GPUs: routed prices for the
  // slots of the larger middle shapes.
  const bool small_routed =
      classed && pod.wants_gpu() && pod.gpu_count == 1 && small_routed_classes_[host_class];
  const std::int64_t cpu = node.cpu_free();
  const std::int64_t memory = node.memory_free();
  const std::int64_t cpu_after = cpu == kUntracked ? cpu : cpu - pod.cpu_milli;
  const std::int64_t memory_after = memory == kUntracked ? memory : memory - pod.memory;
  // The priced shapes overlap, and a broken slot would have held one pod: the dearest loss.
  double cost = 0;
  // A pod of the largest priced GPU count also pays, per set of hosts, the largest
  // scarcity-weighted loss of the shapes of at least its GPUs that need at least what it needs
  // (at most 32 sets counted).
  const bool exclusive = options_.exclusive_weight != 0 && pod.needs_whole_gpus() &&
                         pod.gpu_count >= largest_priced_gpus_;
  const WorkloadShape own = exclusive ? WorkloadShape::of(pod, true) : WorkloadShape{};
  std::array<std::pair<std::uint64_t, double>, 32> groups{};
  std::size_t group_count = 0;
  for (const HostPrice& host : host_prices_) {
    if (!host.shape.allows_model(node.spec().gpu_model)) continue;
    const std::int64_t before = hosts(host.shape, whole, cpu, memory);
    if (before == 0) continue;
    const std::int64_t lost = before - hosts(host.shape, whole - taken, cpu_after, memory_after);
    const bool routed =
        middle || (small_routed && 2 * host.shape.gpu_count >= largest_priced_gpus_ &&
                   host.shape.gpu_count < largest_priced_gpus_);
    const double price = !classed ? host.price
                         : routed ? host.routed_prices[host_class]
                                  : host.class_prices[host_class];
    const double loss = price * static_cast<double>(lost * host.shape.gpu_count);
    cost = std::max(cost, loss);
    if (!exclusive || lost == 0 || host.shape.gpu_count < pod.gpu_count ||
        !needs_at_least(host.shape, own)) {
      continue;
    }
    auto* group =
        std::find_if(groups.begin(), groups.begin() + static_cast<std::ptrdiff_t>(group_count),
                     [&](const auto& g) { return g.first == host.hosts; });
    if (group == groups.begin() + static_cast<std::ptrdiff_t>(group_count)) {
      if (group_count == groups.size()) continue;
      *group = {host.hosts, 0.0};
      ++group_count;
    }
    group->second =
        std::max(group->second, host.scarcity * static_cast<double>(lost * host.shape.gpu_count));
  }
  double exclusive_cost = 0;
  for (std::size_t g = 0; g < group_count; ++g) exclusive_cost += groups[g].second;
  return options_.host_weight * cost + options_.exclusive_weight * exclusive_cost;
}

double FgdPlusPolicy::spec_tie_break(const NodeState& node, const PodDemand& pod) const {
  if (!pod.needs_whole_gpus() || pod.gpu_count < 2 || whole_free_gpus(node) > pod.gpu_count) {
    return 0;
  }
  const NodeSpec& spec = node.spec();
  double size = static_cast<double>(std::max<std::int64_t>(0, spec.cpu_milli));
  if (cpu_per_gpu_unit_ > 0 && memory_per_gpu_unit_ > 0) {
    size += static_cast<double>(std::max<std::int64_t>(0, spec.memory)) * cpu_per_gpu_unit_ /
            memory_per_gpu_unit_;
  }
  return kSpecTieBreak * size / 1000;
}

double FgdPlusPolicy::usable_share(const NodeState& node) const {
  const NodeSpec& spec = node.spec();
  const double gpu_memory = static_cast<double>(node.gpu_count()) *
                            static_cast<double>(std::max<Units>(1, spec.memory_per_gpu));
  double usable = 1;
  if (cpu_per_gpu_unit_ > 0 && spec.cpu_milli > 0) {
    usable =
        std::min(usable, static_cast<double>(spec.cpu_milli) / (cpu_per_gpu_unit_ * gpu_memory));
  }
  if (memory_per_gpu_unit_ > 0 && spec.memory > 0) {
    usable =
        std::min(usable, static_cast<double>(spec.memory) / (memory_per_gpu_unit_ * gpu_memory));
  }
  return usable;
}

std::vector<bool> FgdPlusPolicy::small_routed_classes(std::span<const NodeState> nodes,
                                                      const std::vector<HostClass>& classes) const {
  std::vector<bool> small_routed(classes.size(), false);
  std::vector<bool> seen(classes.size(), false);
  for (const NodeState& node : nodes) {
    const auto known = std::find_if(classes.begin(), classes.end(),
                                    [&](const HostClass& c) { return c.holds(node); });
    if (known == classes.end()) continue;
    const auto c = static_cast<std::size_t>(known - classes.begin());
    if (seen[c]) continue;
    seen[c] = true;
    small_routed[c] = usable_share(node) >= options_.small_routed_usable;
  }
  return small_routed;
}

bool FgdPlusPolicy::middle_pod(const PodDemand& pod) const {
  return pod.needs_whole_gpus() && pod.gpu_count > 1 && pod.gpu_count < largest_priced_gpus_;
}

double FgdPlusPolicy::scarcity_cost(std::string_view model, Units capacity, const PodDemand& pod,
                                    Units taken) const {
  if (prices_.empty() || taken <= 0) return 0;
  double price = 0;
  for (const ModelPrice& set : prices_) {
    if (set.price <= price || !std::binary_search(set.models.begin(), set.models.end(), model)) {
      continue;
    }
    // A pod whose own pin lies within the set is the demand the price protects.
    const bool covered =
        !pod.allowed_models.empty() &&
        std::all_of(pod.allowed_models.begin(), pod.allowed_models.end(),
                    [&](const std::string& m) {
                      return std::binary_search(set.models.begin(), set.models.end(), m);
                    });
    if (!covered) price = set.price;
  }
  return options_.scarcity_weight * price * static_cast<double>(taken) /
         static_cast<double>(std::max<Units>(1, capacity));
}

void FgdPlusPolicy::observe_cluster(std::span<const NodeState> nodes) {
  if (options_.scarcity_weight == 0 && options_.host_weight == 0) return;
  if (!prices_stale_ && ++since_prices_ < options_.scarcity_refresh) return;
  since_prices_ = 0;
  prices_stale_ = false;
  std::vector<ModelPrice> prices = model_prices(nodes);
  std::vector<HostClass> classes = host_classes(nodes);
  std::vector<HostPrice> host = host_prices(nodes, classes);
  std::vector<bool> small_routed = small_routed_classes(nodes, classes);
  if (prices == prices_ && host == host_prices_ && classes == host_classes_ &&
      small_routed == small_routed_classes_) {
    return;
  }
  prices_ = std::move(prices);
  host_prices_ = std::move(host);
  host_classes_ = std::move(classes);
  small_routed_classes_ = std::move(small_routed);
  largest_priced_gpus_ = 0;
  dearest_host_price_ = 0;
  for (const HostPrice& price : host_prices_) {
    largest_priced_gpus_ = std::max(largest_priced_gpus_, price.shape.gpu_count);
    dearest_host_price_ = std::max(dearest_host_price_, price.price);
  }
  ++prices_version_;
}

double FgdPlusPolicy::stranded_gpu(Units idle_units, std::int64_t cpu_free,
                                   std::int64_t memory_free) const {
  const double idle = static_cast<double>(idle_units);
  double usable = idle;
  if (cpu_per_gpu_unit_ > 0 && cpu_free != kUntracked) {
    usable = std::min(usable,
                      static_cast<double>(std::max<std::int64_t>(0, cpu_free)) / cpu_per_gpu_unit_);
  }
  if (memory_per_gpu_unit_ > 0 && memory_free != kUntracked) {
    usable = std::min(
        usable, static_cast<double>(std::max<std::int64_t>(0, memory_free)) / memory_per_gpu_unit_);
  }
  return idle - usable;
}

double FgdPlusPolicy::middle_stranding(Units idle_before, std::int64_t cpu_before,
                                       std::int64_t memory_before, Units idle_after,
                                       std::int64_t cpu_after, std::int64_t memory_after) const {
  if (options_.middle_balance_weight == 0) return 0;
  if (dearest_host_price_ == 0) return 0;
  return dearest_host_price_ * options_.middle_balance_weight *
         (stranded_gpu(idle_after, cpu_after, memory_after) -
          stranded_gpu(idle_before, cpu_before, memory_before));
}

double FgdPlusPolicy::stranded_gpu(const FreeResources& node) const {
  return stranded_gpu(node.total_gpu_free(), node.cpu_free, node.memory_free);
}

double FgdPlusPolicy::measure(double fragmentation, Units idle, std::int64_t cpu_free,
                              std::int64_t memory_free) const {
  double value = fragmentation;
  if (options_.balance_weight != 0) {
    value += options_.balance_weight * stranded_gpu(idle, cpu_free, memory_free);
  }
  return value;
}

double FgdPlusPolicy::measure_before(const NodeReading* reading, double fragmentation, Units idle,
                                     std::int64_t cpu_free, std::int64_t memory_free) const {
  if (reading == nullptr || !reading->filled) {
    return measure(fragmentation, idle, cpu_free, memory_free);
  }
  if (reading->measure_of != fragmentation) {
    reading->measure = measure(fragmentation, idle, cpu_free, memory_free);
    reading->measure_of = fragmentation;
  }
  return reading->measure;
}

double FgdPlusPolicy::measure(const FreeResources& node) const {
  double value = fragmentation(node, target());
  if (options_.balance_weight != 0) value += options_.balance_weight * stranded_gpu(node);
  return value;
}

std::optional<Placement> FgdPlusPolicy::place(const NodeState& node, const PodDemand& pod) const {
  if (!fits(node, pod)) return std::nullopt;
  NodeFragmentation fragmentation;
  if (!fragmentation.prepare(compiled_, node, pod)) return reference_place(node, pod);
  return place_with(fragmentation, node, pod, nullptr);
}

std::optional<double> FgdPlusPolicy::score(const NodeState& node, const PodDemand& pod) const {
  ScoreContext context;
  return score_in(node, pod, context);
}

std::optional<double> FgdPlusPolicy::score_in(const NodeState& node, const PodDemand& pod,
                                              ScoreContext& context) const {
  if (!context.fit_checked && !fits(node, pod)) return std::nullopt;
  NodeFragmentation fragmentation;
  if (!fragmentation.prepare_to_score(
          compiled_, node, pod, context.reading, context.shared,
          /*bound_first=*/context.floor > -std::numeric_limits<double>::infinity() &&
              !context.bound_reaches_floor)) {
    return reference_score(*this, node, pod);
  }
  double best = 0;
  place_with(fragmentation, node, pod, &best, &context);
  return best;
}

double FgdPlusPolicy::sharing_score(double measure_before, double fragmentation_after,
                                    Units idle_after, std::int64_t cpu_after,
                                    std::int64_t memory_after, double capacity) const {
  return -(measure(fragmentation_after, idle_after, cpu_after, memory_after) - measure_before) /
             capacity -
         options_.pack_weight * static_cast<double>(idle_after) / (8 * capacity);
}

bool FgdPlusPolicy::bounds_scores(const PodDemand& pod) const {
  return pod.wants_gpu() && !pod.needs_whole_gpus();
}

std::optional<std::optional<double>> FgdPlusPolicy::score_bound(const NodeState& node,
                                                                const PodDemand& pod,
                                                                const NodeReading* reading) const {
  if (!bounds_scores(pod) || reading == nullptr || !reading->filled) return std::nullopt;
  if (!fits(node, pod)) return std::optional<double>();  // exact: infeasible
  const std::optional<double> after =
      compiled_.sharing_after_lower_bound(*reading, node, pod.per_gpu);
  if (!after) return std::nullopt;
  // As place_with on a prepared node with this reading: F(node) is the reading's, the idle
  // memory, CPU and memory as NodeFragmentation::prepare reads them.
  Units idle = 0;
  for (const GpuState& gpu : node.gpus()) {
    idle += gpu.healthy && gpu.used < gpu.capacity ? gpu.capacity - gpu.used : 0;
  }
  const std::int64_t cpu = node.cpu_free();
  const std::int64_t memory = node.memory_free();
  const std::int64_t cpu_after = cpu == kUntracked ? cpu : cpu - pod.cpu_milli;
  const std::int64_t memory_after = memory == kUntracked ? memory : memory - pod.memory;
  const double capacity = static_cast<double>(std::max<Units>(1, node.spec().memory_per_gpu));
  const double before = measure_before(reading, reading->before, idle, cpu, memory);
  return sharing_score(before, *after, idle - pod.per_gpu, cpu_after, memory_after, capacity) -
         scarcity_cost(node.spec().gpu_model, node.spec().memory_per_gpu, pod,
                       pod.per_gpu * pod.gpu_count) -
         host_cost(node, pod);
}

// The score of the best candidate; into *score_only (without choosing the GPU) when given.
Placement FgdPlusPolicy::place_with(NodeFragmentation& fragmentation, const NodeState& node,
                                    const PodDemand& pod, double* score_only,
                                    ScoreContext* context) const {
  const Units idle = fragmentation.total_before();
  const double capacity = static_cast<double>(std::max<Units>(1, node.spec().memory_per_gpu));
  double measured_before = 0;
  // As reference_place: higher is better, the growth of M in GPUs and a little packing.
  const auto score = [&](double fragmentation_after, Units idle_after) {
    return sharing_score(measured_before, fragmentation_after, idle_after,
                         fragmentation.cpu_after(), fragmentation.memory_after(), capacity);
  };
  const NodeReading* reading = context != nullptr ? context->reading : nullptr;
  const auto set_before = [&](double fragmentation_before) {
    measured_before = measure_before(reading, fragmentation_before, idle,
                                     fragmentation.cpu_before(), fragmentation.memory_before());
  };
  // The prices, taken off every path's score in this order.
  const double scarcity = pod.wants_gpu()
                              ? scarcity_cost(node.spec().gpu_model, node.spec().memory_per_gpu,
                                              pod, pod.per_gpu * pod.gpu_count)
                              : 0.0;
  const double host = host_cost(node, pod) + spec_tie_break(node, pod);
  const auto priced = [&](double value) {
    if (pod.wants_gpu()) value -= scarcity;
    return value - host;
  };
  Placement placement;
  const int count = fragmentation.candidates();
  if (!pod.wants_gpu() || pod.needs_whole_gpus()) {
    if (pod.wants_gpu()) placement.gpus = lowest_whole_gpus(node, pod.gpu_count);
    const Units taken =
        pod.wants_gpu() ? pod.per_gpu * static_cast<Units>(placement.gpus.size()) : 0;
    double before = 0;
    double after = 0;
    fragmentation.before_and_after(placement.gpus, before, after);
    set_before(before);
    placement.score = score(after, idle - taken);
    if (middle_pod(pod)) {
      placement.score -=
          middle_stranding(idle, fragmentation.cpu_before(), fragmentation.memory_before(),
                           idle - taken, fragmentation.cpu_after(), fragmentation.memory_after()) /
          capacity;
    }
  } else if (count == 0) {
    placement.gpus = {-1};  // as reference_place, though check_fit leaves a GPU that fits
  } else if (score_only != nullptr) {
    // Every candidate leaves the same idle memory, CPU and memory, so the score falls as
    // F(after) grows (each step is a monotonic floating-point operation): the best score is
    // among the candidates with the smallest F(after), which before_and_minimum sums exactly,
    // and the score at a lower bound of that smallest F(after) bounds it from above.
    if (context != nullptr && context->floor > -std::numeric_limits<double>::infinity()) {
      if (const std::optional<double> lowest = fragmentation.minimum_lower_bound(0.0)) {
        set_before(fragmentation.before());
        const double bound = priced(score(*lowest, idle - pod.per_gpu));
        if (bound < context->floor) {
          context->bounded = true;
          *score_only = bound;
          return placement;
        }
      }
    }
    std::array<double, NodeFragmentation::kMaxGpus> after;
    double before = 0;
    const int window = fragmentation.before_and_minimum(0.0, before, after);
    set_before(before);
    placement.score = score(after[0], idle - pod.per_gpu);
    for (int k = 1; k < window; ++k) {
      placement.score =
          std::max(placement.score, score(after[static_cast<std::size_t>(k)], idle - pod.per_gpu));
    }
  } else {
    set_before(fragmentation.before());
    std::array<double, NodeFragmentation::kMaxGpus> after;
    fragmentation.candidates_after(after);
    int best_gpu = -1;
    for (int k = 0; k < count; ++k) {
      const double candidate = score(after[static_cast<std::size_t>(k)], idle - pod.per_gpu);
      if (best_gpu < 0 || candidate > placement.score) {
        best_gpu = fragmentation.candidate_gpu(k);
        placement.score = candidate;
      }
    }
    placement.gpus = {best_gpu};
  }
  placement.score = priced(placement.score);
  if (score_only != nullptr) *score_only = placement.score;
  return placement;
}

std::optional<Placement> FgdPlusPolicy::reference_place(const NodeState& node,
                                                        const PodDemand& pod) const {
  if (!fits(node, pod)) return std::nullopt;
  const FreeResources before = FreeResources::of(node);
  const double measure_before = measure(before);
  const double capacity = static_cast<double>(std::max<Units>(1, node.spec().memory_per_gpu));
  // Higher is better: the growth of M in GPUs, and a little packing.
  const auto score = [&](const FreeResources& after) {
    return -(measure(after) - measure_before) / capacity -
           options_.pack_weight * static_cast<double>(after.total_gpu_free()) / (8 * capacity);
  };
  Placement placement;
  if (!pod.wants_gpu() || pod.needs_whole_gpus()) {
    if (pod.wants_gpu()) placement.gpus = lowest_whole_gpus(node, pod.gpu_count);
    FreeResources after = before;
    after.take(pod, placement.gpus);
    placement.score = score(after);
    if (middle_pod(pod)) {
      placement.score -=
          middle_stranding(before.total_gpu_free(), before.cpu_free, before.memory_free,
                           after.total_gpu_free(), after.cpu_free, after.memory_free) /
          capacity;
    }
    if (pod.wants_gpu()) {
      placement.score -= scarcity_cost(node.spec().gpu_model, node.spec().memory_per_gpu, pod,
                                       pod.per_gpu * pod.gpu_count);
    }
    placement.score -= host_cost(node, pod) + spec_tie_break(node, pod);
    return placement;
  }
  const auto [best_gpu, best_score] = best_reference_gpu(node, pod, before, score);
  placement.gpus = {best_gpu};
  placement.score =
      best_score -
      scarcity_cost(node.spec().gpu_model, node.spec().memory_per_gpu, pod, pod.per_gpu) -
      host_cost(node, pod);
  return placement;
}

std::optional<double> FgdPlusPolicy::score_taken(const NodeState& node, const PodDemand& pod,
                                                 std::span<const GpuTake> takes) const {
  // reference_place's measure, on the node after exactly these takes.
  const FreeResources before = FreeResources::of(node);
  const double capacity = static_cast<double>(std::max<Units>(1, node.spec().memory_per_gpu));
  FreeResources after = before;
  PodDemand no_gpu = pod;
  no_gpu.per_gpu = 0;
  after.take(no_gpu, {});
  for (const GpuTake& take : takes) {
    if (take.gpu < 0 || static_cast<std::size_t>(take.gpu) >= after.gpu_free.size())
      return std::nullopt;
    Units& free = after.gpu_free[static_cast<std::size_t>(take.gpu)];
    free = std::max<Units>(0, free - take.amount);
  }
  return -(measure(after) - measure(before)) / capacity -
         options_.pack_weight * static_cast<double>(after.total_gpu_free()) / (8 * capacity);
}

void FgdPlusPolicy::observe(const PodDemand& pod) {
  if (!learned_) return;
  const std::uint64_t version = learned_->version();
  learned_->observe(pod);
  if (learned_->version() != version) update_ratios();
}

std::uint64_t FgdPlusPolicy::state_version() const {
  return (learned_ ? learned_->version() : 0) + prices_version_;
}

std::optional<std::uint64_t> FgdPlusPolicy::reading_version() const {
  return learned_ ? learned_->version() : 0;
}

std::string FgdPlusPolicy::describe_state() const {
  const std::string workload =
      learned_ ? learned_->describe() : fmt::format("{{\"fixedTargetShapes\":{}}}", fixed_.size());
  return fmt::format(
      "{{\"policy\":\"fgd-plus\",\"balanceWeight\":{},\"packWeight\":{},"
      "\"cpuMilliPerGpuUnit\":{:.4f},\"memoryPerGpuUnit\":{:.4f},\"workload\":{}}}",
      options_.balance_weight, options_.pack_weight, cpu_per_gpu_unit_, memory_per_gpu_unit_,
      workload);
}

}  // namespace gpushare::core
