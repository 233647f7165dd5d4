// Filter and prioritize latency while the model changes (docs/benchmarks.md, "Filter and prioritize
// under churn").
//
// One thread plays the pod watch: `--events-per-second` events (a pod seen bound, a bound pod
// deleted, alternately), each applied under the model's exclusive lock through the reservation
// ledger exactly as the sync applies them. Another binds `--binds-per-second` pending pods
// through SchedulingService::bind (choose and reserve under the exclusive lock). The main thread
// sends filter and prioritize requests offering every node, first with nothing else running
// (idle), then during the churn, and prints p50 / p99 / max of each. The target: p99 under churn
// at most twice the idle p99 (the model lock must not stall readers).
//
//   build/bench/churn_bench [--nodes 5000] [--alloc 50] [--policy fgd-plus] [--requests 300]
//                           [--rounds 8] [--events-per-second 200] [--binds-per-second 50]
//
// Idle and churn windows alternate (`--rounds`), so load from outside the benchmark falls on
// both alike.

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <deque>
#include <iostream>
#include <mutex>
#include <random>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "bench_util.h"
#include "gpushare/kube/pod_info.h"

namespace gb = gpushare::bench;
namespace core = gpushare::core;
using Clock = std::chrono::steady_clock;

namespace {

struct Flags {
  int nodes = 5000;
  int alloc = 50;
  std::string policy = "fgd-plus";
  int requests = 300;  // per window
  int rounds = 8;      // idle and churn windows alternate, so outside load hits both alike
  int events_per_second = 200;
  int binds_per_second = 50;
};

Flags parse(int argc, char** argv) {
  Flags flags;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string_view name = argv[i];
    const char* value = argv[i + 1];
    if (name == "--nodes")
      flags.nodes = std::atoi(value);
    else if (name == "--alloc")
      flags.alloc = std::atoi(value);
    else if (name == "--policy")
      flags.policy = value;
    else if (name == "--requests")
      flags.requests = std::atoi(value);
    else if (name == "--events-per-second")
      flags.events_per_second = std::atoi(value);
    else if (name == "--binds-per-second")
      flags.binds_per_second = std::atoi(value);
    else {
      std::cerr << "unknown flag " << name << "\n";
      std::exit(2);
    }
  }
  return flags;
}

struct Latencies {
  std::vector<double> filter_ms, prioritize_ms;
};

void measure(gb::Harness& harness, const gpushare::wire::ExtenderArgs& args, int requests,
             Latencies& out) {
  for (int i = 0; i < requests; ++i) {
    auto started = Clock::now();
    auto filtered = harness.service->filter(args);
    benchmark::DoNotOptimize(filtered);
    out.filter_ms.push_back(
        std::chrono::duration<double, std::milli>(Clock::now() - started).count());
    started = Clock::now();
    auto scores = harness.service->prioritize(args);
    benchmark::DoNotOptimize(scores);
    out.prioritize_ms.push_back(
        std::chrono::duration<double, std::milli>(Clock::now() - started).count());
  }
}

// Runs `step` `per_second` times a second until `stop`, on a fixed schedule; returns how many ran.
template <typename Step>
std::jthread paced(int per_second, std::atomic<std::uint64_t>& done, Step step) {
  return std::jthread([per_second, &done, step](std::stop_token stop) mutable {
    const auto period = std::chrono::nanoseconds(1'000'000'000 / std::max(1, per_second));
    auto next = Clock::now();
    while (!stop.stop_requested()) {
      step();
      ++done;
      next += period;
      std::this_thread::sleep_until(next);
    }
  });
}

}  // namespace

int main(int argc, char** argv) {
  const Flags flags = parse(argc, argv);
  gb::ClusterShape shape = gb::shape_of(flags.nodes, flags.alloc);
  shape.track_cpu_memory = true;
  shape.learned_workload = true;
  gb::Harness harness(shape, flags.policy);
  const gpushare::wire::ExtenderArgs args = gb::decode_request(
      gb::request_body(flags.nodes, gb::BodyForm::kNodeNames), gpushare::kube::ResourceNames{});

  Latencies warm_up, idle, churn;
  measure(harness, args, 20, warm_up);

  // Pods the churn added (by the watch or by binds), deleted oldest first to keep the level.
  std::mutex added_mutex;
  std::deque<std::string> added;
  std::atomic<std::uint64_t> events{0}, binds{0}, binds_ok{0};
  std::mt19937_64 event_random(7);
  std::uint64_t serial = 0;
  bool add_next = true;
  auto watch_event = [&] {
    std::string to_delete;
    if (!add_next) {
      std::lock_guard lock(added_mutex);
      if (!added.empty()) {
        to_delete = added.front();
        added.pop_front();
      }
    }
    add_next = !add_next;
    core::PodEvidence evidence;
    if (!to_delete.empty()) {
      evidence = {core::PodEvidence::Kind::kGone, to_delete, std::nullopt};
    } else {
      core::PodAllocation pod;
      pod.uid = "churn-watch-" + std::to_string(++serial);
      pod.namespace_name = "churn";
      pod.name = pod.uid;
      pod.node =
          gb::node_name(static_cast<int>(event_random() % static_cast<std::uint64_t>(flags.nodes)));
      pod.gpus = {
          static_cast<int>(event_random() % static_cast<std::uint64_t>(shape.gpus_per_node))};
      pod.per_gpu = 1 + static_cast<core::Units>(event_random() % 4);
      pod.cpu_milli = 2000;
      pod.memory = 8 * gb::kGiB;
      evidence = {core::PodEvidence::Kind::kBound, pod.uid, pod};
      std::lock_guard lock(added_mutex);
      added.push_back(pod.uid);
    }
    harness.store.write([&](core::ClusterModel& model, core::PlacementPolicy& policy,
                            core::ReservationLedger& ledger) {
      if (evidence.bound) {
        core::PodDemand demand;  // as the sync teaches the policy from pods others bound
        demand.per_gpu = evidence.bound->per_gpu;
        demand.cpu_milli = evidence.bound->cpu_milli;
        demand.memory = evidence.bound->memory;
        policy.observe(demand);
      }
      ledger.observe(model, evidence, core::EvidenceSource::kWatch);
    });
  };
  std::mt19937_64 bind_random(11);
  std::uint64_t bind_serial = 0;
  auto bind_one = [&] {
    const std::string name = "churn-bind-" + std::to_string(++bind_serial);
    const std::string uid = "uid-" + name;
    gpushare::kube::PodInfo pod = gpushare::kube::parse_pod(gb::pending_pod(name, uid, 4), {});
    harness.binder.remember(pod);
    gpushare::wire::BindingArgs binding;
    binding.pod_name = pod.name;
    binding.pod_namespace = pod.namespace_name;
    binding.pod_uid = uid;
    binding.node =
        gb::node_name(static_cast<int>(bind_random() % static_cast<std::uint64_t>(flags.nodes)));
    if (harness.service->bind(binding).error.empty()) {
      ++binds_ok;
      std::lock_guard lock(added_mutex);
      added.push_back(uid);
    }
  };

  double churn_seconds = 0;
  for (int round = 0; round < flags.rounds; ++round) {
    measure(harness, args, flags.requests, idle);
    const auto started = Clock::now();
    {
      std::jthread watch = paced(flags.events_per_second, events, watch_event);
      std::jthread binder = paced(flags.binds_per_second, binds, bind_one);
      measure(harness, args, flags.requests, churn);
    }
    churn_seconds += std::chrono::duration<double>(Clock::now() - started).count();
  }
  const double seconds = churn_seconds;
  auto row = [](std::string_view what, const std::vector<double>& idle_ms,
                const std::vector<double>& churn_ms) {
    const double idle_p99 = gb::percentile(idle_ms, 99);
    const double churn_p99 = gb::percentile(churn_ms, 99);
    std::cout << fmt::format(
        "| {} | {:.3f} / {:.3f} / {:.3f} ms | {:.3f} / {:.3f} / {:.3f} ms | {:.2f} |\n", what,
        gb::percentile(idle_ms, 50), idle_p99, gb::percentile(idle_ms, 100),
        gb::percentile(churn_ms, 50), churn_p99, gb::percentile(churn_ms, 100),
        churn_p99 / idle_p99);
  };
  std::cout << fmt::format(
      "{} nodes x {} GPUs, {} % allocated, policy {}, every node offered, {} requests each\n",
      flags.nodes, shape.gpus_per_node, flags.alloc, flags.policy, flags.requests);
  std::cout << fmt::format(
      "churn: {:.0f} watch events/s, {:.0f} binds/s ({} of {} placed) over {:.1f} s\n",
      static_cast<double>(events.load()) / seconds, static_cast<double>(binds.load()) / seconds,
      binds_ok.load(), binds.load(), seconds);
  std::cout << "| verb | idle p50 / p99 / max | churn p50 / p99 / max | p99 churn / idle "
               "|\n|---|---|---|---|\n";
  row("filter", idle.filter_ms, churn.filter_ms);
  row("prioritize", idle.prioritize_ms, churn.prioritize_ms);
  return 0;
}
