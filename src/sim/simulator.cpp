#include "gpushare/sim/simulator.h"

#include <fmt/format.h>

#include <chrono>
#include <cmath>
#include <ctime>
#include <limits>
#include <map>
#include <stdexcept>
#include <tuple>

#include "gpushare/core/cluster_model.h"
#include "gpushare/core/fragmentation.h"
#include "gpushare/sim/arrivals.h"

namespace gpushare::sim {
namespace {

auto demand_key(const core::PodDemand& d) {
  return std::tuple(d.per_gpu, d.gpu_count, d.cpu_milli, d.memory, d.allowed_models);
}

// The last answer of the policy for one (pod shape, node), valid while neither the node nor
// the policy's learned state changed. Only the node that took the last pod changes, so almost
// every lookup hits.
struct CachedPlacement {
  std::uint64_t node_generation = 0;
  std::uint64_t policy_version = 0;
  bool filled = false;
  std::optional<core::Placement> placement;
};

void check_placement(const core::NodeState& node, const core::PodDemand& pod,
                     const core::Placement& placement, std::string_view policy) {
  const auto fail = [&](std::string_view what) {
    throw std::logic_error(
        fmt::format("policy {} placed a pod on node {}: {}", policy, node.name(), what));
  };
  if (!pod.wants_gpu()) {
    if (!placement.gpus.empty()) fail("GPUs for a pod that wants none");
    return;
  }
  if (static_cast<int>(placement.gpus.size()) != pod.gpu_count) fail("wrong number of GPUs");
  std::vector<bool> taken(node.gpus().size(), false);
  for (int gpu : placement.gpus) {
    if (gpu < 0 || gpu >= node.gpu_count()) fail("GPU index out of range");
    const auto index = static_cast<std::size_t>(gpu);
    if (taken[index]) fail("the same GPU twice");
    taken[index] = true;
    const auto& state = node.gpus()[index];
    if (!state.healthy || state.free() < pod.per_gpu) fail("GPU without room");
    if (pod.needs_whole_gpus() && state.used != 0) fail("a shared GPU for a multi-GPU pod");
  }
}

double thread_cpu_seconds() {
  timespec now{};
  if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now) != 0) return 0;
  return static_cast<double>(now.tv_sec) + static_cast<double>(now.tv_nsec) * 1e-9;
}

}  // namespace

std::vector<CurvePoint> curve_from_records(std::span<const Record> records) {
  struct Sum {
    double alloc = 0;
    double frag = 0;
    int count = 0;
  };
  std::map<int, Sum> buckets;
  int last = 0;
  for (const auto& r : records) {
    // Round half to even, as Python's round() in the paper's analysis.
    const int bucket = static_cast<int>(std::nearbyint(r.arrived_pct));
    auto& sum = buckets[bucket];
    sum.alloc += r.alloc_pct;
    sum.frag += r.frag_pct;
    ++sum.count;
    last = std::max(last, bucket);
  }
  std::vector<CurvePoint> curve;
  for (int pct = 0; pct <= last; ++pct) {
    Sum sum;
    if (auto it = buckets.find(pct); it != buckets.end()) {
      sum = it->second;
    } else {
      // No record rounds to this value (a large pod jumped over it): use the neighbours.
      for (int near : {pct - 1, pct + 1}) {
        if (auto n = buckets.find(near); n != buckets.end()) {
          sum.alloc += n->second.alloc;
          sum.frag += n->second.frag;
          sum.count += n->second.count;
        }
      }
    }
    if (sum.count == 0) continue;
    curve.push_back({pct, sum.alloc / sum.count, sum.frag / sum.count});
  }
  return curve;
}

Simulator::Simulator(std::vector<core::NodeSpec> nodes, std::vector<TracePod> pods,
                     SimulationOptions options)
    : nodes_(std::move(nodes)), pods_(std::move(pods)), options_(options) {
  for (const auto& spec : nodes_) capacity_ += spec.memory_per_gpu * std::max(0, spec.gpu_count);
  if (capacity_ <= 0) throw std::invalid_argument("the trace's nodes have no GPUs");
  std::map<decltype(demand_key(core::PodDemand{})), std::size_t> shapes;
  shape_of_pod_.reserve(pods_.size());
  demands_.reserve(pods_.size());
  for (const auto& pod : pods_) {
    auto [it, inserted] = shapes.try_emplace(demand_key(pod.demand), shapes.size());
    shape_of_pod_.push_back(it->second);
    demands_.push_back(pod.demand);
  }
  shape_count_ = shapes.size();
  typical_ = core::typical_workload(demands_, options_.target_coverage);
}

std::vector<std::size_t> Simulator::arrivals(std::uint64_t seed) const {
  std::vector<std::size_t> order = arrival_order(pods_, seed, options_.max_arrival, capacity_);
  if (options_.single_gpu_only) {
    std::erase_if(order, [&](std::size_t index) { return pods_[index].demand.gpu_count > 1; });
  }
  if (options_.gpu_pods_only) {
    std::erase_if(order, [&](std::size_t index) { return !pods_[index].demand.wants_gpu(); });
  }
  return order;
}

RunResult Simulator::run(std::string_view policy_name, std::uint64_t seed) const {
  auto contender = make_contender(policy_name, TraceContext{typical_, demands_, seed});
  if (!contender) throw std::invalid_argument(fmt::format("unknown policy '{}'", policy_name));
  return run(*contender, seed);
}

RunResult Simulator::run(Contender& contender, std::uint64_t seed) const {
  const auto started = std::chrono::steady_clock::now();
  const double cpu_started = thread_cpu_seconds();
  core::PlacementPolicy& policy = *contender.policy;
  core::ClusterModel model;
  for (const auto& spec : nodes_) model.upsert_node(spec);
  const std::vector<core::NodeState>& nodes = model.nodes();
  const std::vector<std::size_t> tie_order = node_tie_order(nodes.size(), seed);
  const std::vector<std::size_t> arrivals = this->arrivals(seed);

  std::vector<std::vector<CachedPlacement>> cache(shape_count_);
  std::vector<double> node_fragmentation(nodes.size());
  double fragmentation_total = 0;
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    node_fragmentation[i] = core::fragmentation(nodes[i], typical_);
    fragmentation_total += node_fragmentation[i];
  }

  RunResult result;
  result.policy = contender.name;
  result.seed = seed;
  result.capacity = capacity_;
  std::vector<Record> records;
  records.reserve(arrivals.size());
  const double capacity = static_cast<double>(capacity_);

  for (std::size_t sequence = 0; sequence < arrivals.size(); ++sequence) {
    const TracePod& pod = pods_[arrivals[sequence]];
    const core::PodDemand& demand = pod.demand;
    result.arrived += demand.total_gpu();
    auto& entries = cache[shape_of_pod_[arrivals[sequence]]];
    if (entries.empty()) entries.resize(nodes.size());
    const std::uint64_t version = policy.state_version();

    std::size_t best_node = nodes.size();
    double best_score = -std::numeric_limits<double>::infinity();
    for (std::size_t index : tie_order) {
      CachedPlacement& entry = entries[index];
      const core::NodeState& node = nodes[index];
      if (!entry.filled || entry.node_generation != node.generation() ||
          entry.policy_version != version) {
        entry.placement = policy.place(node, demand);
        entry.node_generation = node.generation();
        entry.policy_version = version;
        entry.filled = true;
        ++result.place_calls;
      }
      // Strictly greater: the first node in tie order keeps a tie.
      if (entry.placement && entry.placement->score > best_score) {
        best_score = entry.placement->score;
        best_node = index;
      }
    }

    if (best_node < nodes.size()) {
      const core::NodeState& node = nodes[best_node];
      const core::Placement placement = *entries[best_node].placement;
      check_placement(node, demand, placement, contender.name);
      core::PodAllocation allocation;
      allocation.uid = fmt::format("sim-{}", sequence);
      allocation.name = pod.name;
      allocation.node = node.name();
      allocation.gpus = placement.gpus;
      allocation.per_gpu = demand.wants_gpu() ? demand.per_gpu : 0;
      allocation.cpu_milli = demand.cpu_milli;
      allocation.memory = demand.memory;
      model.add_pod(std::move(allocation));
      result.allocated += demand.total_gpu();
      ++result.pods_placed;
      policy.observe(demand);
      policy.observe_cluster(nodes);
      if (contender.observer != nullptr) contender.observer->placed(node, demand);
      fragmentation_total -= node_fragmentation[best_node];
      node_fragmentation[best_node] = core::fragmentation(node, typical_);
      fragmentation_total += node_fragmentation[best_node];
    }
    if (best_node == nodes.size()) {
      result.failures.push_back(
          {arrivals[sequence], 100.0 * static_cast<double>(result.arrived) / capacity});
    }
    records.push_back({100.0 * static_cast<double>(result.arrived) / capacity,
                       100.0 * static_cast<double>(result.allocated) / capacity,
                       100.0 * fragmentation_total / capacity});
  }

  result.pods_arrived = arrivals.size();
  result.curve = curve_from_records(records);
  result.final_alloc_pct = 100.0 * static_cast<double>(result.allocated) / capacity;
  result.seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  result.cpu_seconds = thread_cpu_seconds() - cpu_started;
  return result;
}

}  // namespace gpushare::sim
