#include "gpushare/sim/churn.h"

#include <fmt/format.h>
#include <fmt/ostream.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <ctime>
#include <limits>
#include <list>
#include <map>
#include <numeric>
#include <queue>
#include <stdexcept>
#include <tuple>

#include "gpushare/core/cluster_model.h"
#include "gpushare/core/consolidation_planner.h"
#include "gpushare/core/fit.h"
#include "gpushare/core/fragmentation.h"
#include "gpushare/sim/arrivals.h"

namespace gpushare::sim {
namespace {

double thread_cpu_seconds() {
  timespec now{};
  if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now) != 0) return 0;
  return static_cast<double>(now.tv_sec) + static_cast<double>(now.tv_nsec) * 1e-9;
}

// Uniform in (0, 1), from 53 random bits.
double uniform(SeededRandom& random) {
  constexpr std::uint64_t kBits = std::uint64_t{1} << 53;
  return (static_cast<double>(random.below(kBits)) + 0.5) / static_cast<double>(kBits);
}

// One arrival of a trace pod (a pod of the trace may arrive many times).
struct Arrival {
  double time = 0;
  std::size_t pod = 0;  // index into the simulator's pods
  double lifetime = 0;
  bool opt_in = false;
};

// The seed's arrivals up to `end`: the same for every policy.
std::vector<Arrival> make_arrivals(const Simulator& simulator, std::uint64_t seed,
                                   const ChurnOptions& options, double end, double& rate) {
  const auto& pods = simulator.pods();
  const auto clamp = [&](double lifetime) {
    lifetime = std::max(lifetime, options.min_lifetime);
    if (options.max_lifetime > 0) lifetime = std::min(lifetime, options.max_lifetime);
    return lifetime;
  };
  // The pods that may arrive: the simulator's options may leave some out.
  const SimulationOptions& admit = simulator.options();
  std::vector<std::size_t> admitted;
  for (std::size_t i = 0; i < pods.size(); ++i) {
    const core::PodDemand& demand = pods[i].demand;
    if (admit.single_gpu_only && demand.wants_gpu() && demand.gpu_count > 1) continue;
    if (admit.gpu_pods_only && !demand.wants_gpu()) continue;
    admitted.push_back(i);
  }
  std::vector<double> pool;
  for (std::size_t i : admitted) {
    if (pods[i].lifetime) pool.push_back(clamp(*pods[i].lifetime));
  }
  if (pool.empty()) {
    throw std::invalid_argument(
        "the time mode needs lifetimes: no pod of the trace has creation_time and deletion_time");
  }
  const double mean_lifetime =
      std::accumulate(pool.begin(), pool.end(), 0.0) / static_cast<double>(pool.size());
  // Offered load: rate x E[GPU demand x lifetime] = load x capacity.
  double demand_time = 0;
  for (std::size_t i : admitted) {
    const auto& pod = pods[i];
    const double lifetime = pod.lifetime ? clamp(*pod.lifetime) : mean_lifetime;
    demand_time += static_cast<double>(pod.demand.total_gpu()) * lifetime;
  }
  demand_time /= static_cast<double>(admitted.size());
  if (demand_time <= 0 || options.offered_load <= 0) {
    throw std::invalid_argument("the time mode needs GPU pods and an offered load above 0");
  }
  rate = options.offered_load * static_cast<double>(simulator.capacity()) / demand_time;

  std::vector<std::size_t> by_name = std::move(admitted);
  std::stable_sort(by_name.begin(), by_name.end(),
                   [&](std::size_t a, std::size_t b) { return pods[a].name < pods[b].name; });
  // Separate streams: the order, the gaps, drawn lifetimes, opt-in.
  SeededRandom order_random(seed);
  SeededRandom gap_random(seed ^ 0x6761702d74696d65ULL);
  SeededRandom life_random(seed ^ 0x6c69666574696d65ULL);
  SeededRandom opt_random(seed ^ 0x6f70742d696e2d2dULL);
  std::vector<Arrival> arrivals;
  std::vector<std::size_t> order;
  std::size_t next = 0;
  double time = 0;
  while (true) {
    const double gap = options.arrivals == ArrivalProcess::kPoisson
                           ? -std::log(uniform(gap_random)) / rate
                           : 1.0 / rate;
    time += gap;
    if (time > end) break;
    if (next == order.size()) {
      order = by_name;
      order_random.shuffle(order);
      next = 0;
    }
    Arrival arrival;
    arrival.time = time;
    arrival.pod = order[next++];
    const auto& lifetime = pods[arrival.pod].lifetime;
    arrival.lifetime = lifetime ? clamp(*lifetime) : pool[life_random.below(pool.size())];
    arrival.opt_in = uniform(opt_random) < options.consolidation.opt_in;
    arrivals.push_back(arrival);
  }
  return arrivals;
}

struct CachedPlacement {
  std::uint64_t node_generation = 0;
  std::uint64_t policy_version = 0;
  bool filled = false;
  std::optional<core::Placement> placement;
};

enum class EventKind { kDeparture = 0, kConsolidate = 1, kRetry = 2, kGiveUp = 3 };

struct Event {
  double time;
  EventKind kind;
  std::uint64_t sequence;  // ties: first scheduled first
  std::size_t instance;
  bool operator>(const Event& other) const {
    return std::tie(time, kind, sequence) > std::tie(other.time, other.kind, other.sequence);
  }
};

// One arrived pod's life.
struct Instance {
  double arrival = 0;
  std::string uid;
  bool placed = false;
  bool waiting = false;
  bool done = false;  // departed or gave up
  std::size_t node = 0;
  int attempts = 0;
  std::uint64_t tried_at_change = 0;  // the cluster's change count at its last attempt
  std::list<std::size_t>::iterator queue_position;
};

double percentile(std::vector<double> values, double p) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const auto rank = static_cast<std::size_t>(std::ceil(p * static_cast<double>(values.size())));
  return values[std::min(values.size() - 1, rank == 0 ? 0 : rank - 1)];
}

class ChurnRun {
 public:
  // Places pods with `contender`'s policy, or through `scheduler` when that is not null.
  ChurnRun(const Simulator& simulator, Contender* contender, ChurnScheduler* scheduler,
           std::string name, std::uint64_t seed, const ChurnOptions& options)
      : simulator_(simulator),
        contender_(contender),
        scheduler_(scheduler),
        options_(options),
        window_start_(options.warmup),
        window_end_(options.warmup + options.duration),
        budget_(0) {
    if (options.duration <= 0) throw std::invalid_argument("the time mode needs a duration");
    if (scheduler_ != nullptr && options.consolidation.enabled) {
      throw std::invalid_argument("consolidation runs with the policy alone, not with a scheduler");
    }
    for (const auto& spec : simulator.nodes()) model_.upsert_node(spec);
    tie_order_ = node_tie_order(model_.nodes().size(), seed);
    arrivals_ = make_arrivals(simulator, seed, options, window_end_, result_.arrival_rate);
    instances_.resize(arrivals_.size());
    // Pods with equal demands share cached scores.
    std::map<std::tuple<core::Units, int, std::int64_t, std::int64_t, std::vector<std::string>>,
             std::size_t>
        shapes;
    for (const auto& pod : simulator.pods()) {
      const auto& d = pod.demand;
      auto [it, inserted] = shapes.try_emplace(
          std::tuple(d.per_gpu, d.gpu_count, d.cpu_milli, d.memory, d.allowed_models),
          shapes.size());
      shape_of_pod_.push_back(it->second);
    }
    cache_.resize(shapes.size());
    const auto& nodes = model_.nodes();
    node_fragmentation_.resize(nodes.size());
    node_idle_.resize(nodes.size());
    for (std::size_t i = 0; i < nodes.size(); ++i) refresh_node(i);
    result_.policy = std::move(name);
    result_.seed = seed;
    result_.capacity_gpus =
        static_cast<double>(simulator.capacity()) / static_cast<double>(kUnitsPerGpu);
  }

  ChurnResult run() {
    const auto started = std::chrono::steady_clock::now();
    const double cpu_started = thread_cpu_seconds();
    if (options_.consolidation.enabled && options_.consolidation.every > 0) {
      schedule(options_.consolidation.every, EventKind::kConsolidate, 0);
    }
    std::size_t next_arrival = 0;
    while (true) {
      const double arrival_time = next_arrival < arrivals_.size()
                                      ? arrivals_[next_arrival].time
                                      : std::numeric_limits<double>::infinity();
      const double event_time =
          events_.empty() ? std::numeric_limits<double>::infinity() : events_.top().time;
      const double time = std::min(arrival_time, event_time);
      if (!(time <= window_end_)) break;
      advance(time);
      if (event_time <= arrival_time) {
        const Event event = events_.top();
        events_.pop();
        handle(event);
      } else {
        arrive(next_arrival++);
      }
    }
    advance(window_end_);
    finish();
    result_.seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    result_.cpu_seconds = thread_cpu_seconds() - cpu_started;
    return std::move(result_);
  }

 private:
  bool in_window(double time) const { return time >= window_start_ && time <= window_end_; }

  void schedule(double time, EventKind kind, std::size_t instance) {
    events_.push({time, kind, sequence_++, instance});
  }

  void refresh_node(std::size_t index) {
    const core::NodeState& node = model_.nodes()[index];
    fragmentation_total_ -= node_fragmentation_[index];
    node_fragmentation_[index] = core::fragmentation(node, simulator_.typical_workload());
    fragmentation_total_ += node_fragmentation_[index];
    idle_total_ -= node_idle_[index];
    node_idle_[index] = node.wholly_free_gpu_count();
    idle_total_ += node_idle_[index];
    ++changes_;
  }

  // Integrates the state over [now_, time) within the window and writes due samples.
  void advance(double time) {
    if (options_.sample_every > 0) {
      while (next_sample_ <= time) {
        result_.samples.push_back(sample(next_sample_));
        next_sample_ += options_.sample_every;
      }
    }
    const double from = std::max(now_, window_start_);
    const double to = std::min(time, window_end_);
    if (to > from) {
      const double dt = to - from;
      const double capacity = static_cast<double>(simulator_.capacity());
      sums_.alloc += dt * 100.0 * static_cast<double>(allocated_) / capacity;
      sums_.unallocated += dt * static_cast<double>(simulator_.capacity() - allocated_) /
                           static_cast<double>(kUnitsPerGpu);
      sums_.fragmented += dt * fragmentation_total_ / static_cast<double>(kUnitsPerGpu);
      sums_.idle += dt * static_cast<double>(idle_total_);
      sums_.waiting += dt * static_cast<double>(queue_.size());
      sums_.running += dt * static_cast<double>(model_.pod_count());
      sums_.running_gpu += dt * static_cast<double>(model_.gpu_pod_count());
    }
    now_ = std::max(now_, time);
  }

  ChurnSample sample(double time) const {
    ChurnSample s;
    s.time = time;
    const double capacity = static_cast<double>(simulator_.capacity());
    s.alloc_pct = 100.0 * static_cast<double>(allocated_) / capacity;
    s.unallocated_gpus =
        static_cast<double>(simulator_.capacity() - allocated_) / static_cast<double>(kUnitsPerGpu);
    s.fragmented_gpus = fragmentation_total_ / static_cast<double>(kUnitsPerGpu);
    s.idle_gpus = static_cast<double>(idle_total_);
    s.running = model_.pod_count();
    s.waiting = queue_.size();
    return s;
  }

  const core::PodDemand& demand_of(std::size_t instance) const {
    return simulator_.pods()[arrivals_[instance].pod].demand;
  }

  // The policy's best node for the instance, as the arrival-only simulator chooses it.
  std::optional<ChurnPlacement> policy_choice(std::size_t pod) {
    const core::PodDemand& demand = simulator_.pods()[pod].demand;
    core::PlacementPolicy& policy = *contender_->policy;
    const auto& nodes = model_.nodes();
    auto& entries = cache_[shape_of_pod_[pod]];
    if (entries.empty()) entries.resize(nodes.size());
    const std::uint64_t version = policy.state_version();
    std::size_t best = nodes.size();
    double best_score = -std::numeric_limits<double>::infinity();
    for (std::size_t index : tie_order_) {
      CachedPlacement& entry = entries[index];
      const core::NodeState& node = nodes[index];
      if (!entry.filled || entry.node_generation != node.generation() ||
          entry.policy_version != version) {
        entry.placement = policy.place(node, demand);
        entry.node_generation = node.generation();
        entry.policy_version = version;
        entry.filled = true;
      }
      if (entry.placement && entry.placement->score > best_score) {
        best_score = entry.placement->score;
        best = index;
      }
    }
    if (best == nodes.size()) return std::nullopt;
    return ChurnPlacement{best, entries[best].placement->gpus};
  }

  // Places the instance where the policy or the scheduler chooses; false if nowhere.
  bool try_place(std::size_t instance) {
    const std::size_t pod = arrivals_[instance].pod;
    const core::PodDemand& demand = simulator_.pods()[pod].demand;
    Instance& self = instances_[instance];
    self.tried_at_change = changes_;
    ++self.attempts;
    const std::optional<ChurnPlacement> choice =
        scheduler_ != nullptr ? scheduler_->schedule(simulator_.pods()[pod], instance)
                              : policy_choice(pod);
    if (!choice) return false;
    const auto& nodes = model_.nodes();
    const std::size_t best = choice->node;
    if (best >= nodes.size() || !fits(nodes[best], demand) ||
        !gpus_fit(nodes[best], demand, choice->gpus)) {
      throw std::logic_error(fmt::format("{} placed pod {} on node {} where it does not fit",
                                         result_.policy, simulator_.pods()[pod].name,
                                         best < nodes.size() ? nodes[best].name() : "(none)"));
    }
    const core::NodeState& node = nodes[best];
    core::PodAllocation allocation;
    allocation.uid = self.uid;
    allocation.name = simulator_.pods()[pod].name;
    allocation.node = node.name();
    allocation.gpus = choice->gpus;
    allocation.per_gpu = demand.wants_gpu() ? demand.per_gpu : 0;
    allocation.cpu_milli = demand.cpu_milli;
    allocation.memory = demand.memory;
    model_.add_pod(std::move(allocation));
    allocated_ += demand.total_gpu();
    if (contender_ != nullptr) {
      contender_->policy->observe(demand);
      contender_->policy->observe_cluster(nodes);
      if (contender_->observer != nullptr) contender_->observer->placed(node, demand);
    }
    refresh_node(best);
    self.placed = true;
    self.node = best;
    if (self.waiting) {
      queue_.erase(self.queue_position);
      self.waiting = false;
    }
    const double wait = now_ - self.arrival;
    if (in_window(self.arrival)) {
      ++result_.placed;
      if (wait > 0) ++result_.waited;
      waits_.push_back(wait);
    }
    schedule(now_ + arrivals_[instance].lifetime, EventKind::kDeparture, instance);
    return true;
  }

  void arrive(std::size_t instance) {
    Instance& self = instances_[instance];
    self.arrival = arrivals_[instance].time;
    self.uid = fmt::format("sim-{}", instance);
    if (in_window(self.arrival)) ++result_.arrived;
    if (try_place(instance)) return;
    self.waiting = true;
    self.queue_position = queue_.insert(queue_.end(), instance);
    schedule(self.arrival + options_.give_up_after, EventKind::kGiveUp, instance);
    if (options_.retry == RetryMode::kBackoff) schedule_retry(instance);
  }

  void schedule_retry(std::size_t instance) {
    const Instance& self = instances_[instance];
    const double delay =
        std::min(options_.backoff_max,
                 options_.backoff_initial * std::pow(2.0, std::max(0, self.attempts - 1)));
    schedule(now_ + delay, EventKind::kRetry, instance);
  }

  // After a departure from `node`: the waiting pods, oldest first, that now fit there. None
  // fits anywhere else, as nothing else has freed since their last attempt.
  void retry_after_departure(std::size_t node) {
    for (auto it = queue_.begin(); it != queue_.end();) {
      const std::size_t instance = *it++;  // try_place may erase it
      if (fits(model_.nodes()[node], demand_of(instance))) try_place(instance);
    }
  }

  void retry_all() {
    for (auto it = queue_.begin(); it != queue_.end();) {
      const std::size_t instance = *it++;
      if (instances_[instance].tried_at_change != changes_) try_place(instance);
    }
  }

  void handle(const Event& event) {
    if (event.kind == EventKind::kConsolidate) {
      consolidate();
      schedule(now_ + options_.consolidation.every, EventKind::kConsolidate, 0);
      return;
    }
    Instance& self = instances_[event.instance];
    switch (event.kind) {
      case EventKind::kDeparture: {
        const core::PodDemand& demand = demand_of(event.instance);
        model_.remove_pod(self.uid);
        if (scheduler_ != nullptr) {
          scheduler_->departed(simulator_.pods()[arrivals_[event.instance].pod], event.instance,
                               self.node);
        }
        allocated_ -= demand.total_gpu();
        self.done = true;
        refresh_node(self.node);
        if (options_.retry == RetryMode::kOnDeparture) retry_after_departure(self.node);
        break;
      }
      case EventKind::kRetry:
        if (!self.waiting) break;
        // Nothing changed since its last attempt: the same answer; wait for the next retry.
        if (self.tried_at_change == changes_) {
          ++self.attempts;
        } else if (try_place(event.instance)) {
          break;
        }
        schedule_retry(event.instance);
        break;
      case EventKind::kGiveUp:
        if (!self.waiting) break;
        queue_.erase(self.queue_position);
        self.waiting = false;
        self.done = true;
        if (in_window(self.arrival)) ++result_.gave_up;
        break;
      case EventKind::kConsolidate:
        break;
    }
  }

  core::ConsolidationLimits limits() {
    const auto& c = options_.consolidation;
    budget_.set_per_hour(static_cast<int>(
        std::floor(c.moves_per_hour * static_cast<double>(model_.gpu_pod_count()))));
    core::ConsolidationLimits limits;
    limits.max_moves = std::min(c.max_moves_per_plan, budget_.left(now_));
    limits.max_moves_per_gpu_freed = c.max_moves_per_gpu_freed;
    return limits;
  }

  void carry_out(const core::ConsolidationPlan& plan) {
    for (const auto& move : plan.moves) {
      const core::PodAllocation* pod = model_.find_pod(move.pod_uid);
      const core::NodeState* to = model_.find_node(move.to_node);
      if (pod == nullptr || to == nullptr ||
          to->gpus()[static_cast<std::size_t>(move.to_gpu)].free() < pod->per_gpu) {
        throw std::logic_error(
            fmt::format("consolidation moved {} where it does not fit", move.pod_uid));
      }
      core::PodAllocation moved = *pod;
      const std::size_t from = model_.position_of(*model_.find_node(pod->node));
      const std::size_t target = model_.position_of(*to);
      moved.node = move.to_node;
      moved.gpus = {move.to_gpu};
      model_.add_pod(std::move(moved));
      refresh_node(from);
      refresh_node(target);
      const auto instance = static_cast<std::size_t>(std::stoull(move.pod_uid.substr(4)));
      instances_[instance].node = target;
    }
    budget_.record(now_, static_cast<int>(plan.moves.size()));
    if (in_window(now_)) {
      ++result_.plans;
      result_.pods_moved += plan.moves.size();
    }
  }

  void consolidate() {
    const core::MobilityLookup mobility =
        [this](const core::PodAllocation& pod) -> std::optional<core::PodMobility> {
      if (!pod.uid.starts_with("sim-")) return std::nullopt;
      const auto instance = static_cast<std::size_t>(std::stoull(pod.uid.substr(4)));
      core::PodMobility m;
      m.opted_in = arrivals_[instance].opt_in;
      m.has_owner = true;
      m.allowed_models = demand_of(instance).allowed_models;
      return m;
    };
    bool moved = false;
    if (options_.consolidation.for_pending) {
      for (std::size_t instance : queue_) {
        if (!demand_of(instance).wants_gpu()) continue;
        const auto plan = core::plan_for_pending(model_, demand_of(instance), mobility, limits());
        if (plan) {
          carry_out(*plan);
          if (in_window(now_)) ++result_.pending_plans;
          moved = true;
          try_place(instance);
        }
        break;  // the oldest waiting GPU pod only
      }
    }
    if (const auto plan = core::plan_free_gpus(model_, mobility, limits())) {
      carry_out(*plan);
      if (in_window(now_)) result_.gpus_freed += static_cast<std::size_t>(plan->gpus_freed);
      moved = true;
    }
    if (moved && options_.retry == RetryMode::kOnDeparture) retry_all();
  }

  void finish() {
    const double span = window_end_ - window_start_;
    result_.alloc_pct = sums_.alloc / span;
    result_.unallocated_gpus = sums_.unallocated / span;
    result_.fragmented_gpus = sums_.fragmented / span;
    result_.idle_gpus = sums_.idle / span;
    result_.waiting = sums_.waiting / span;
    result_.running = sums_.running / span;
    for (std::size_t instance : queue_) {
      if (in_window(instances_[instance].arrival)) ++result_.still_waiting;
    }
    result_.wait_p50 = percentile(waits_, 0.50);
    result_.wait_p99 = percentile(waits_, 0.99);
    result_.wait_max = waits_.empty() ? 0 : *std::max_element(waits_.begin(), waits_.end());
    const double running_gpu = sums_.running_gpu / span;
    if (running_gpu > 0) {
      result_.moves_per_hour_pct =
          100.0 * static_cast<double>(result_.pods_moved) / (span / 3600.0) / running_gpu;
    }
  }

  // The GPUs a placement names: as many as the pod wants, distinct, each with room.
  static bool gpus_fit(const core::NodeState& node, const core::PodDemand& demand,
                       const std::vector<int>& gpus) {
    if (!demand.wants_gpu()) return gpus.empty();
    if (gpus.size() != static_cast<std::size_t>(demand.gpu_count)) return false;
    for (std::size_t i = 0; i < gpus.size(); ++i) {
      const int gpu = gpus[i];
      if (gpu < 0 || static_cast<std::size_t>(gpu) >= node.gpus().size()) return false;
      if (std::find(gpus.begin(), gpus.begin() + static_cast<std::ptrdiff_t>(i), gpu) !=
          gpus.begin() + static_cast<std::ptrdiff_t>(i))
        return false;
      if (node.gpus()[static_cast<std::size_t>(gpu)].free() < demand.per_gpu) return false;
    }
    return true;
  }

  const Simulator& simulator_;
  Contender* contender_;
  ChurnScheduler* scheduler_;
  ChurnOptions options_;
  double window_start_;
  double window_end_;
  core::ClusterModel model_;
  std::vector<std::size_t> tie_order_;
  std::vector<Arrival> arrivals_;
  std::vector<Instance> instances_;
  std::vector<std::size_t> shape_of_pod_;
  std::vector<std::vector<CachedPlacement>> cache_;
  std::vector<double> node_fragmentation_;
  std::vector<int> node_idle_;
  double fragmentation_total_ = 0;
  std::int64_t idle_total_ = 0;
  core::Units allocated_ = 0;
  std::uint64_t changes_ = 0;
  std::priority_queue<Event, std::vector<Event>, std::greater<>> events_;
  std::uint64_t sequence_ = 0;
  std::list<std::size_t> queue_;
  double now_ = 0;
  double next_sample_ = 0;
  struct {
    double alloc = 0, unallocated = 0, fragmented = 0, idle = 0, waiting = 0, running = 0,
           running_gpu = 0;
  } sums_;
  std::vector<double> waits_;
  core::MoveBudget budget_;
  ChurnResult result_;
};

}  // namespace

ChurnResult run_churn(const Simulator& simulator, Contender& contender, std::uint64_t seed,
                      const ChurnOptions& options) {
  return ChurnRun(simulator, &contender, nullptr, contender.name, seed, options).run();
}

ChurnResult run_churn(const Simulator& simulator, ChurnScheduler& scheduler, std::string name,
                      std::uint64_t seed, const ChurnOptions& options) {
  return ChurnRun(simulator, nullptr, &scheduler, std::move(name), seed, options).run();
}

ChurnResult run_churn(const Simulator& simulator, std::string_view policy_name, std::uint64_t seed,
                      const ChurnOptions& options) {
  std::vector<core::PodDemand> demands;
  for (const auto& pod : simulator.pods()) demands.push_back(pod.demand);
  auto contender =
      make_contender(policy_name, TraceContext{simulator.typical_workload(), demands, seed});
  if (!contender) throw std::invalid_argument(fmt::format("unknown policy '{}'", policy_name));
  return run_churn(simulator, *contender, seed, options);
}

void write_churn_csv(std::ostream& out, std::span<const ChurnResult> runs) {
  out << kChurnCsvHeader << '\n';
  for (const auto& run : runs) {
    for (const auto& s : run.samples) {
      fmt::print(out, "{},{},{:.0f},{:.4f},{:.3f},{:.3f},{:.0f},{},{}\n", run.policy, run.seed,
                 s.time, s.alloc_pct, s.unallocated_gpus, s.fragmented_gpus, s.idle_gpus, s.running,
                 s.waiting);
    }
  }
}

void write_churn_table(std::ostream& out, std::span<const ChurnResult> runs) {
  std::vector<std::string> names;
  for (const auto& run : runs) {
    if (std::find(names.begin(), names.end(), run.policy) == names.end()) {
      names.push_back(run.policy);
    }
  }
  out << "| run | seeds | alloc % | unallocated GPUs | fragmented GPUs | idle GPUs | waiting | "
         "wait p50 s | wait p99 s | gave up % | moved/h % of running | GPUs freed | "
         "freed per pod moved | CPU s |\n";
  out << "|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n";
  for (const auto& name : names) {
    double n = 0, alloc = 0, unalloc = 0, frag = 0, idle = 0, waiting = 0, p50 = 0, p99 = 0,
           gave = 0, arrived = 0, moved_pct = 0, moved = 0, freed = 0, cpu = 0;
    for (const auto& run : runs) {
      if (run.policy != name) continue;
      ++n;
      alloc += run.alloc_pct;
      unalloc += run.unallocated_gpus;
      frag += run.fragmented_gpus;
      idle += run.idle_gpus;
      waiting += run.waiting;
      p50 += run.wait_p50;
      p99 += run.wait_p99;
      gave += static_cast<double>(run.gave_up);
      arrived += static_cast<double>(run.arrived);
      moved_pct += run.moves_per_hour_pct;
      moved += static_cast<double>(run.pods_moved);
      freed += static_cast<double>(run.gpus_freed);
      cpu += run.cpu_seconds;
    }
    const std::string per_move = moved > 0 ? fmt::format("{:.2f}", freed / moved) : "-";
    fmt::print(out,
               "| {} | {:.0f} | {:.2f} | {:.1f} | {:.1f} | {:.1f} | {:.1f} | {:.0f} | {:.0f} | "
               "{:.2f} | {:.2f} | {:.1f} | {} | {:.1f} |\n",
               name, n, alloc / n, unalloc / n, frag / n, idle / n, waiting / n, p50 / n, p99 / n,
               arrived > 0 ? 100.0 * gave / arrived : 0.0, moved_pct / n, freed / n, per_move,
               cpu / n);
  }
}

}  // namespace gpushare::sim
