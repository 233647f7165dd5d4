// The time mode on small hand-made traces (tens of nodes).
#include "gpushare/sim/churn.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <map>
#include <sstream>

namespace gpushare::sim {
namespace {

// `nodes` nodes of 4 GPUs; pods of several shapes with lifetimes of 100..2000 s, and one
// without (it draws one from the others).
Simulator small_cluster(int nodes = 12) {
  std::string node_csv = "sn,cpu_milli,memory_mib,gpu,model\n";
  for (int i = 0; i < nodes; ++i) node_csv += fmt::format("n{},64000,262144,4,V100\n", i);
  const auto pods = parse_pods_csv(
      "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,"
      "deletion_time\n"
      "a,4000,8192,1,1000,,LS,Running,0,600\n"
      "b,2000,4096,1,500,,LS,Running,10,1010\n"
      "c,2000,4096,1,250,,LS,Running,20,220\n"
      "d,2000,4096,1,700,,LS,Running,30,2030\n"
      "e,8000,16384,2,1000,,LS,Running,40,440\n"
      "f,1000,2048,0,0,,LS,Running,50,150\n"
      "g,2000,4096,1,300,,LS,Running,,\n"
      "h,2000,4096,1,400,,LS,Running,60,1060\n");
  return Simulator(parse_nodes_csv(node_csv), pods);
}

ChurnOptions options(double load = 1.0) {
  ChurnOptions o;
  o.offered_load = load;
  o.warmup = 4000;
  o.duration = 20000;
  o.give_up_after = 1800;
  o.sample_every = 500;
  return o;
}

TEST(Churn, TraceLifetimesAreRead) {
  const Simulator simulator = small_cluster();
  EXPECT_EQ(simulator.pods()[0].lifetime, 600.0);
  EXPECT_EQ(simulator.pods()[6].lifetime, std::nullopt);
  // Times out of order or not whole seconds give no lifetime; the pod is still read.
  const auto odd = parse_pods_csv(
      "name,cpu_milli,memory_mib,num_gpu,gpu_milli,creation_time,deletion_time\n"
      "p,1,1,1,100,50,40\nq,1,1,1,100,1.5,40\nr,1,1,1,100,10,40\n");
  ASSERT_EQ(odd.size(), 3u);
  EXPECT_EQ(odd[0].lifetime, std::nullopt);
  EXPECT_EQ(odd[1].lifetime, std::nullopt);
  EXPECT_EQ(odd[2].lifetime, 30.0);
}

TEST(Churn, SameSeedSameRunAndEveryPolicySeesTheSameArrivals) {
  const Simulator simulator = small_cluster();
  const ChurnResult first = run_churn(simulator, "fgd", 7, options());
  const ChurnResult again = run_churn(simulator, "fgd", 7, options());
  std::ostringstream a, b;
  write_churn_csv(a, std::span(&first, 1));
  write_churn_csv(b, std::span(&again, 1));
  EXPECT_EQ(a.str(), b.str());
  EXPECT_EQ(first.fragmented_gpus, again.fragmented_gpus);
  EXPECT_EQ(first.wait_p99, again.wait_p99);
  const ChurnResult other = run_churn(simulator, "best-fit", 7, options());
  EXPECT_EQ(other.arrived, first.arrived);
  EXPECT_EQ(other.arrival_rate, first.arrival_rate);
  const ChurnResult seed8 = run_churn(simulator, "fgd", 8, options());
  EXPECT_NE(seed8.arrived, first.arrived);
}

TEST(Churn, DeparturesFreeCapacity) {
  const Simulator simulator = small_cluster();
  const ChurnResult run = run_churn(simulator, "fgd-plus", 1, options(0.7));
  // Far more pods were placed than the cluster holds at once: those that left made room.
  std::size_t most_running = 0;
  for (const auto& s : run.samples) most_running = std::max(most_running, s.running);
  EXPECT_GT(run.placed, 5 * most_running);
  EXPECT_GT(run.alloc_pct, 40.0);
  EXPECT_LT(run.alloc_pct, 100.0);
  for (const auto& s : run.samples) {
    EXPECT_LE(s.alloc_pct, 100.0);
    EXPECT_GE(s.unallocated_gpus, 0.0);
    EXPECT_LE(s.fragmented_gpus, s.unallocated_gpus + 1e-9);
    EXPECT_LE(s.idle_gpus, s.unallocated_gpus + 1e-9);
  }
  EXPECT_NEAR(run.unallocated_gpus, run.capacity_gpus * (1 - run.alloc_pct / 100), 1e-6);
}

TEST(Churn, WaitingPodsAreRetriedAsCapacityFrees) {
  const Simulator simulator = small_cluster();
  for (const RetryMode retry : {RetryMode::kOnDeparture, RetryMode::kBackoff}) {
    ChurnOptions o = options(1.3);
    o.retry = retry;
    const ChurnResult run = run_churn(simulator, "fgd-plus", 3, o);
    EXPECT_GT(run.waited, 0u);  // placed after waiting
    EXPECT_GT(run.wait_p99, 0.0);
    EXPECT_GT(run.waiting, 0.0);
    EXPECT_EQ(run.arrived, run.placed + run.gave_up + run.still_waiting);
  }
}

TEST(Churn, WaitingPodsGiveUpAfterTheBound) {
  const Simulator simulator = small_cluster();
  ChurnOptions o = options(2.0);
  o.give_up_after = 60;
  const ChurnResult run = run_churn(simulator, "fgd-plus", 3, o);
  EXPECT_GT(run.gave_up, 0u);
  EXPECT_LE(run.wait_max, 60.0);
  o.give_up_after = 1e9;
  const ChurnResult patient = run_churn(simulator, "fgd-plus", 3, o);
  EXPECT_EQ(patient.gave_up, 0u);
  EXPECT_GT(patient.wait_max, 60.0);
}

TEST(Churn, WarmUpIsLeftOut) {
  const Simulator simulator = small_cluster();
  ChurnOptions whole = options(0.9);
  whole.warmup = 0;
  whole.duration = 24000;
  ChurnOptions later = options(0.9);  // the same events, the first 4000 s left out
  const ChurnResult all = run_churn(simulator, "fgd", 5, whole);
  const ChurnResult steady = run_churn(simulator, "fgd", 5, later);
  EXPECT_EQ(all.samples.size(), steady.samples.size());
  EXPECT_LT(steady.arrived, all.arrived);
  // The empty cluster of the first minutes counts only in the whole run.
  EXPECT_GT(steady.alloc_pct, all.alloc_pct);
  // The measured average is the mean of the samples after the warm-up, near enough.
  double sum = 0;
  int count = 0;
  for (const auto& s : steady.samples) {
    if (s.time >= later.warmup) {
      sum += s.alloc_pct;
      ++count;
    }
  }
  EXPECT_NEAR(steady.alloc_pct, sum / count, 5.0);
}

TEST(Churn, ConsolidationMovesWithinItsBudgetAndFreesGpus) {
  const Simulator simulator = small_cluster(20);
  ChurnOptions o = options(0.8);
  o.consolidation.enabled = true;
  o.consolidation.moves_per_hour = 0.2;
  o.consolidation.every = 300;
  const ChurnResult run = run_churn(simulator, "best-fit", 11, o);
  EXPECT_GT(run.pods_moved, 0u);
  EXPECT_GT(run.gpus_freed, 0u);
  std::size_t most_running = 0;
  for (const auto& s : run.samples) most_running = std::max(most_running, s.running);
  const double hours = (o.warmup + o.duration) / 3600.0;
  EXPECT_LE(static_cast<double>(run.pods_moved), (hours + 1) * 0.2 * most_running);
  // Nobody opts in: nothing moves.
  o.consolidation.opt_in = 0;
  const ChurnResult none = run_churn(simulator, "best-fit", 11, o);
  EXPECT_EQ(none.pods_moved, 0u);
  EXPECT_EQ(none.arrived, run.arrived);
}

TEST(Churn, NeedsLifetimes) {
  const auto nodes = parse_nodes_csv("sn,cpu_milli,memory_mib,gpu,model\nn,1000,1000,1,V100\n");
  const auto pods = parse_pods_csv("name,cpu_milli,memory_mib,num_gpu,gpu_milli\np,1,1,1,100\n");
  const Simulator simulator(nodes, pods);
  EXPECT_THROW(run_churn(simulator, "fgd", 1, options()), std::invalid_argument);
}

// A scheduler that puts each pod on the first node, first GPUs, with room (its own books),
// recording what the run tells it.
class FirstFitScheduler final : public ChurnScheduler {
 public:
  explicit FirstFitScheduler(const Simulator& simulator) {
    for (const auto& node : simulator.nodes())
      free_.push_back(
          std::vector<core::Units>(static_cast<std::size_t>(node.gpu_count), node.memory_per_gpu));
  }
  std::optional<ChurnPlacement> schedule(const TracePod& pod, std::size_t instance) override {
    ++attempts;
    for (std::size_t n = 0; n < free_.size(); ++n) {
      ChurnPlacement placement{n, {}};
      auto& gpus = free_[n];
      for (std::size_t g = 0; g < gpus.size() && pod.demand.wants_gpu(); ++g) {
        if (static_cast<int>(placement.gpus.size()) < pod.demand.gpu_count &&
            gpus[g] >= pod.demand.per_gpu)
          placement.gpus.push_back(static_cast<int>(g));
      }
      if (static_cast<int>(placement.gpus.size()) !=
          (pod.demand.wants_gpu() ? pod.demand.gpu_count : 0))
        continue;
      if (bad) placement.gpus.assign(placement.gpus.size(), 0);  // one GPU twice, or full
      for (int g : placement.gpus) gpus[static_cast<std::size_t>(g)] -= pod.demand.per_gpu;
      held_[instance] = placement;
      return placement;
    }
    return std::nullopt;
  }
  void departed(const TracePod& pod, std::size_t instance, std::size_t node) override {
    const auto it = held_.find(instance);
    ASSERT_NE(it, held_.end()) << "departed without being placed";
    EXPECT_EQ(it->second.node, node);
    for (int g : it->second.gpus) free_[node][static_cast<std::size_t>(g)] += pod.demand.per_gpu;
    held_.erase(it);
    ++departures;
  }
  std::size_t running() const { return held_.size(); }

  bool bad = false;
  std::size_t attempts = 0;
  std::size_t departures = 0;

 private:
  std::vector<std::vector<core::Units>> free_;
  std::map<std::size_t, ChurnPlacement> held_;
};

TEST(Churn, AnExternalSchedulerPlacesEveryPodAndHearsEveryDeparture) {
  const Simulator simulator = small_cluster();
  FirstFitScheduler scheduler(simulator);
  ChurnOptions o = options(0.7);
  o.sample_every = 0;
  const ChurnResult run = run_churn(simulator, scheduler, "first-fit", 4, o);
  EXPECT_EQ(run.policy, "first-fit");
  EXPECT_GT(run.placed, 0u);
  EXPECT_GT(scheduler.departures, run.placed / 2);  // those that left told it
  EXPECT_GE(scheduler.attempts, run.placed);
  EXPECT_GT(run.alloc_pct, 40.0);
  // Its books and the run's agree: the run's allocation is what the scheduler still holds.
  EXPECT_GT(scheduler.running(), 0u);
  // The same events as a policy's run of the seed.
  EXPECT_EQ(run.arrived, run_churn(simulator, "fgd", 4, o).arrived);
}

TEST(Churn, AnExternalSchedulerIsCheckedAndRunsWithoutConsolidation) {
  const Simulator simulator = small_cluster();
  FirstFitScheduler scheduler(simulator);
  scheduler.bad = true;
  EXPECT_THROW(run_churn(simulator, scheduler, "bad", 4, options(0.7)), std::logic_error);
  FirstFitScheduler good(simulator);
  ChurnOptions o = options(0.7);
  o.consolidation.enabled = true;
  EXPECT_THROW(run_churn(simulator, good, "good", 4, o), std::invalid_argument);
}

TEST(Churn, OptionsLeavePodsOutOfTheArrivals) {
  const auto nodes = small_cluster().nodes();
  const auto pods = small_cluster().pods();
  SimulationOptions single;
  single.single_gpu_only = true;
  SimulationOptions gpu_only;
  gpu_only.gpu_pods_only = true;
  for (const SimulationOptions& admit : {single, gpu_only}) {
    const Simulator simulator(nodes, pods, admit);
    FirstFitScheduler scheduler(simulator);
    struct Watch final : ChurnScheduler {
      FirstFitScheduler& inner;
      const SimulationOptions& admit;
      Watch(FirstFitScheduler& i, const SimulationOptions& a) : inner(i), admit(a) {}
      std::optional<ChurnPlacement> schedule(const TracePod& pod, std::size_t instance) override {
        if (admit.single_gpu_only) {
          EXPECT_LE(pod.demand.gpu_count, 1) << pod.name;
        }
        if (admit.gpu_pods_only) {
          EXPECT_TRUE(pod.demand.wants_gpu()) << pod.name;
        }
        return inner.schedule(pod, instance);
      }
      void departed(const TracePod& pod, std::size_t instance, std::size_t node) override {
        inner.departed(pod, instance, node);
      }
    } watch(scheduler, admit);
    const ChurnResult run = run_churn(simulator, watch, "watched", 2, options(0.7));
    EXPECT_GT(run.placed, 100u);
  }
}

}  // namespace
}  // namespace gpushare::sim
