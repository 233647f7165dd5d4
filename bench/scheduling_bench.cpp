// Filter, prioritize and bind on generated clusters of 1 000 / 5 000 / 10 000 nodes x 8 GPUs
// at 0 / 50 / 90 % of GPU memory allocated.
//
//  BM_Filter/<nodes>/<alloc%>              SchedulingService::filter on decoded args (no JSON)
//  BM_Prioritize/<policy>/<nodes>/<alloc%> SchedulingService::prioritize, per placement policy
//  BM_PlaceOneNode/<policy>/<alloc%>       the bind's GPU choice: policy.place() on one node
//  BM_Bind/<policy>/<nodes>/<alloc%>       SchedulingService::bind (choose, assume) with an
//                                          in-memory binder; the assumed pod is released
//                                          outside the timed region
//  BM_FilterRequest/<nodes>/<alloc%>       the whole in-process request: body text -> decode ->
//                                          filter -> encoded reply (nodeCacheCapable: NodeNames)
//  BM_PrioritizeRequest/<nodes>/<alloc%>   the same for prioritize (the default policy, on its
//                                          built-in prior)
//  BM_PrioritizeLatency/<policy>/<nodes>/<alloc%>/<pod>/<workload>/<newpod>
//                                          SchedulingService::prioritize alone (as BM_Prioritize)
//                                          as a latency distribution, on a cluster whose nodes
//                                          track CPU and memory and whose pods hold them (live
//                                          mode), for binpack, fgd and fgd-plus; pod 0: the GPU
//                                          pod below, 1: the same pod without GPU (prioritize
//                                          scores those too); workload 0: the policy's built-in
//                                          prior, 1: learned from every bound pod; newpod 0:
//                                          every request for the same pod (the replicas of one
//                                          workload: prioritize reuses the scores of the last
//                                          request), 1: each request's pod asks for other GPU
//                                          memory than the last one's (4 and 3 GiB in turn): a
//                                          new pod of a shape seen before (the scores kept for
//                                          that shape are reused), 2: each request's pod asks
//                                          for CPU no pod asked for before (4.05 cores plus one
//                                          milli-core per request), so no score is reused: the
//                                          cost of scoring every node; 3: as 2, with GPU memory
//                                          other than the last 30 requests' (1 to 31 GiB in
//                                          turn): a GPU size new to the caches as well
//  BM_FilterLatency/<nodes>/<alloc%>       SchedulingService::filter alone (as BM_Filter) as a
//                                          latency distribution
//  BM_RankScores/<infeasible%>/<tied%>/<levels>
//                                          core::rank_scores, prioritize's mapping of raw scores
//                                          onto kube-scheduler's levels, on 5 000 raw scores in
//                                          random order: infeasible% of them none (the node
//                                          cannot hold the pod), tied% of the others at one of
//                                          `levels` values above the rest (nodes in equal states
//                                          tie at the top levels). 5/25/9 is about what the
//                                          90 % cluster's requests map, 0/0 the 50 % one's
//  *Latency                                the two above as 1-request repetitions, with
//                                          p50/p90/p99/max rows (the latency distribution)
//
// BM_FilterLatency and BM_PrioritizeLatency hand the service a copy of the decoded arguments made
// outside the timed region, as the HTTP path hands over what it decoded: the service moves the
// offered names into its reply instead of copying them. BM_PrioritizeLatency decodes the arguments
// of every GPU size it asks for before its first timed request, so that the decoded arguments kept
// between requests do not grow the heap between timed requests (each request's temporaries
// would then land on pages no request touched before).
//  BM_*RequestDefaultOfferLatency/<nodes>/<alloc%>  the same with as many nodes offered as
//                                          kube-scheduler offers by default
//                                          (percentageOfNodesToScore unset: 420 of 1 000, 500 of 5
//                                          000 and of 10 000); the others offer every node, the
//                                          worst case
//
// The pod asks for 4 GiB on one GPU (4.05 cores, 32 GiB + 64 MiB of memory); GPUs hold 32 GiB.

#include <array>
#include <cmath>
#include <map>
#include <optional>
#include <random>
#include <vector>

#include "bench_util.h"
#include "gpushare/core/policies/fgd.h"
#include "gpushare/core/policies/fgd_plus.h"
#include "gpushare/core/policy_registry.h"
#include "gpushare/core/score_mapping.h"

namespace gb = gpushare::bench;
namespace core = gpushare::core;

namespace {

constexpr int kLatencyRequests = 2000;

// `request` GiB of GPU memory; 0: the pod wants no GPU.
const gpushare::wire::ExtenderArgs& typed_args(int nodes, core::Units request = 4) {
  static std::map<std::pair<int, core::Units>, gpushare::wire::ExtenderArgs> cache;
  const auto key = std::pair{nodes, request};
  auto it = cache.find(key);
  if (it == cache.end()) {
    it = cache
             .emplace(key,
                      gb::decode_request(gb::request_body(nodes, gb::BodyForm::kNodeNames, request),
                                         gpushare::kube::ResourceNames{}))
             .first;
  }
  return it->second;
}

// The policies BM_PrioritizeLatency compares: the default and the two FGD measures.
const std::vector<std::string>& latency_policies() {
  static const std::vector<std::string> names = {"binpack", "fgd", "fgd-plus"};
  return names;
}

void BM_Filter(benchmark::State& state) {
  const int nodes = static_cast<int>(state.range(0));
  auto& harness = gb::cached_harness(gb::shape_of(nodes, static_cast<int>(state.range(1))));
  const auto& args = typed_args(nodes);
  std::size_t survivors = 0;
  for (auto _ : state) {
    auto result = harness.service->filter(args);
    survivors = result.node_names.size();
    benchmark::DoNotOptimize(result);
  }
  state.counters["survivors"] = static_cast<double>(survivors);
  state.counters["nodes/s"] =
      benchmark::Counter(static_cast<double>(nodes), benchmark::Counter::kIsIterationInvariantRate);
}

// One request per repetition (as_distribution), on arguments given up as the HTTP path does.
void BM_FilterLatency(benchmark::State& state) {
  const int nodes = static_cast<int>(state.range(0));
  auto& harness = gb::cached_harness(gb::shape_of(nodes, static_cast<int>(state.range(1))));
  gpushare::wire::ExtenderArgs args = typed_args(nodes);
  for (auto _ : state) {
    auto result = harness.service->filter(std::move(args));
    benchmark::DoNotOptimize(result);
  }
}

void BM_Prioritize(benchmark::State& state) {
  const std::string& policy = gb::policy_list()[static_cast<std::size_t>(state.range(0))];
  const int nodes = static_cast<int>(state.range(1));
  auto& harness = gb::cached_harness(gb::shape_of(nodes, static_cast<int>(state.range(2))), policy);
  const auto& args = typed_args(nodes);
  state.SetLabel(policy);
  for (auto _ : state) {
    auto result = harness.service->prioritize(args);
    benchmark::DoNotOptimize(result);
  }
  state.counters["nodes/s"] =
      benchmark::Counter(static_cast<double>(nodes), benchmark::Counter::kIsIterationInvariantRate);
}

void BM_PrioritizeLatency(benchmark::State& state) {
  const std::string& policy = latency_policies()[static_cast<std::size_t>(state.range(0))];
  const int nodes = static_cast<int>(state.range(1));
  gb::ClusterShape shape = gb::shape_of(nodes, static_cast<int>(state.range(2)));
  shape.track_cpu_memory = true;
  shape.learned_workload = state.range(4) != 0;
  const bool cpu_only = state.range(3) != 0;
  auto& harness = gb::cached_harness(shape, policy);
  // With newpod, the pod changes from one request (repetition) to the next. Each run counts its
  // own requests, so that its pods are the same whichever runs the filter selected before it.
  static std::map<std::array<std::int64_t, 6>, std::int64_t> requests_by_run;
  const std::int64_t sent = ++requests_by_run[{state.range(0), state.range(1), state.range(2),
                                               state.range(3), state.range(4), state.range(5)}];
  const std::int64_t newpod = state.range(5);
  for (const core::Units size : {0, 3, 4}) typed_args(nodes, size);
  if (newpod == 3) {
    for (core::Units size = 1; size <= 31; ++size) typed_args(nodes, size);
  }
  core::Units request = 4;
  if (cpu_only) {
    request = 0;
  } else if (newpod == 1) {
    request = sent % 2 == 0 ? 3 : 4;
  } else if (newpod == 3) {
    request = 1 + sent % 31;
  }
  gpushare::wire::ExtenderArgs args = typed_args(nodes, request);
  if (newpod >= 2) args.pod.cpu_milli += sent;
  state.SetLabel(fmt::format("{} {} pod, {}{}", policy, cpu_only ? "CPU-only" : "GPU",
                             shape.learned_workload ? "learned workload" : "prior",
                             newpod == 1   ? ", a new pod of a known shape each request"
                             : newpod == 2 ? ", a never-seen demand each request"
                             : newpod == 3 ? ", a never-seen demand and GPU size each request"
                                           : ""));
  for (auto _ : state) {
    auto result = harness.service->prioritize(std::move(args));
    benchmark::DoNotOptimize(result);
  }
  std::size_t shapes = 0;
  harness.store.read([&](const core::ClusterModel&, const core::PlacementPolicy& p) {
    if (const auto* fgd = dynamic_cast<const core::FgdPolicy*>(&p)) shapes = fgd->target().size();
    if (const auto* plus = dynamic_cast<const core::FgdPlusPolicy*>(&p))
      shapes = plus->target().size();
  });
  state.counters["shapes"] = static_cast<double>(shapes);
}

void BM_PlaceOneNode(benchmark::State& state) {
  const std::string& policy_name = gb::policy_list()[static_cast<std::size_t>(state.range(0))];
  auto& harness =
      gb::cached_harness(gb::shape_of(5000, static_cast<int>(state.range(1))), policy_name);
  const core::PodDemand demand = typed_args(5000).pod.demand();
  state.SetLabel(policy_name);
  harness.store.read([&](const core::ClusterModel& model, const core::PlacementPolicy& policy) {
    const auto& all = model.nodes();
    std::size_t i = 0;
    std::size_t fits = 0;
    for (auto _ : state) {
      auto placement = policy.place(all[i], demand);
      fits += placement.has_value();
      benchmark::DoNotOptimize(placement);
      if (++i == all.size()) i = 0;
    }
    state.counters["fit%"] =
        100.0 * static_cast<double>(fits) / static_cast<double>(state.iterations());
  });
}

void BM_Bind(benchmark::State& state) {
  const std::string& policy_name = gb::policy_list()[static_cast<std::size_t>(state.range(0))];
  const int nodes = static_cast<int>(state.range(1));
  auto& harness =
      gb::cached_harness(gb::shape_of(nodes, static_cast<int>(state.range(2))), policy_name);
  const gpushare::wire::ExtenderArgs& args = typed_args(nodes);
  harness.binder.remember(args.pod);
  state.SetLabel(policy_name);
  // Nodes where the pod fits, so every bind succeeds.
  std::vector<std::string> targets = harness.service->filter(args).node_names.strings();
  if (targets.empty()) {
    state.SkipWithError("no node fits");
    return;
  }
  gpushare::wire::BindingArgs bind{args.pod.name, args.pod.namespace_name, args.pod.uid, ""};
  std::size_t i = 0;
  std::size_t failures = 0;
  for (auto _ : state) {
    bind.node = targets[i];
    const gpushare::service::BindReply reply = harness.service->bind(bind);
    failures += !reply.error.empty();
    state.PauseTiming();
    harness.store.write(
        [&](core::ClusterModel& model, core::PlacementPolicy&) { model.remove_pod(args.pod.uid); });
    if (++i == targets.size()) i = 0;
    state.ResumeTiming();
  }
  if (failures > 0) state.SkipWithError("bind failed");
}

void BM_FilterRequest(benchmark::State& state) {
  const int nodes = static_cast<int>(state.range(0));
  auto& harness = gb::cached_harness(gb::shape_of(nodes, static_cast<int>(state.range(1))));
  const std::string& body = gb::request_body(nodes, gb::BodyForm::kNodeNames);
  std::size_t reply_bytes = 0;
  for (auto _ : state) {
    std::string reply = gb::handle_filter(*harness.service, body);
    reply_bytes = reply.size();
    benchmark::DoNotOptimize(reply);
  }
  state.counters["req_KB"] = static_cast<double>(body.size()) / 1024.0;
  state.counters["reply_KB"] = static_cast<double>(reply_bytes) / 1024.0;
}

void BM_PrioritizeRequest(benchmark::State& state) {
  const int nodes = static_cast<int>(state.range(0));
  auto& harness = gb::cached_harness(gb::shape_of(nodes, static_cast<int>(state.range(1))),
                                     core::kDefaultPolicy);
  state.SetLabel(std::string(core::kDefaultPolicy));
  const std::string& body = gb::request_body(nodes, gb::BodyForm::kNodeNames);
  std::size_t reply_bytes = 0;
  for (auto _ : state) {
    std::string reply = gb::handle_prioritize(*harness.service, body);
    reply_bytes = reply.size();
    benchmark::DoNotOptimize(reply);
  }
  state.counters["req_KB"] = static_cast<double>(body.size()) / 1024.0;
  state.counters["reply_KB"] = static_cast<double>(reply_bytes) / 1024.0;
}

void BM_FilterRequestDefaultOffer(benchmark::State& state) {
  const int nodes = static_cast<int>(state.range(0));
  auto& harness = gb::cached_harness(gb::shape_of(nodes, static_cast<int>(state.range(1))));
  const std::string& body =
      gb::request_body(nodes, gb::BodyForm::kNodeNames, 4, gb::default_offered(nodes));
  for (auto _ : state) {
    std::string reply = gb::handle_filter(*harness.service, body);
    benchmark::DoNotOptimize(reply);
  }
  state.counters["offered"] = gb::default_offered(nodes);
}

void BM_PrioritizeRequestDefaultOffer(benchmark::State& state) {
  const int nodes = static_cast<int>(state.range(0));
  auto& harness = gb::cached_harness(gb::shape_of(nodes, static_cast<int>(state.range(1))),
                                     core::kDefaultPolicy);
  state.SetLabel(std::string(core::kDefaultPolicy));
  const std::string& body =
      gb::request_body(nodes, gb::BodyForm::kNodeNames, 4, gb::default_offered(nodes));
  for (auto _ : state) {
    std::string reply = gb::handle_prioritize(*harness.service, body);
    benchmark::DoNotOptimize(reply);
  }
  state.counters["offered"] = gb::default_offered(nodes);
}

void size_grid(benchmark::internal::Benchmark* b) {
  b->ArgNames({"nodes", "alloc%"});
  for (int nodes : gb::kNodeCounts) {
    for (int alloc : gb::kAllocatedPercents) b->Args({nodes, alloc});
  }
}

void policy_size_grid(benchmark::internal::Benchmark* b) {
  b->ArgNames({"policy", "nodes", "alloc%"});
  // Cluster-major order, so each generated cluster is built once per policy, not per point.
  for (int nodes : gb::kNodeCounts) {
    for (int alloc : gb::kAllocatedPercents) {
      for (std::size_t p = 0; p < gb::policy_list().size(); ++p) {
        b->Args({static_cast<std::int64_t>(p), nodes, alloc});
      }
    }
  }
}

void policy_alloc_grid(benchmark::internal::Benchmark* b) {
  b->ArgNames({"policy", "alloc%"});
  for (int alloc : gb::kAllocatedPercents) {
    for (std::size_t p = 0; p < gb::policy_list().size(); ++p)
      b->Args({static_cast<std::int64_t>(p), alloc});
  }
}

void BM_RankScores(benchmark::State& state) {
  const double infeasible = static_cast<double>(state.range(0)) / 100;
  const double tied = static_cast<double>(state.range(1)) / 100;
  const auto levels = static_cast<double>(state.range(2));
  std::mt19937 random(1);
  std::uniform_real_distribution<double> uniform(0, 1);
  std::vector<std::optional<double>> raw(5000);
  for (auto& score : raw) {
    if (uniform(random) < infeasible) continue;
    score = uniform(random) < tied ? 100.0 + std::floor(uniform(random) * levels)
                                   : uniform(random) * 99;
  }
  for (auto _ : state) {
    std::vector<int> levels = core::rank_scores(raw);
    benchmark::DoNotOptimize(levels);
  }
  state.counters["nodes/s"] = benchmark::Counter(static_cast<double>(raw.size()),
                                                 benchmark::Counter::kIsIterationInvariantRate);
}

// Cluster-major order, so each generated cluster is built once per policy. At 0 % no pod is
// bound, so the learned workload is the prior; binpack learns nothing: both are measured once.
void latency_policy_grid(benchmark::internal::Benchmark* b) {
  b->ArgNames({"policy", "nodes", "alloc%", "cpuonly", "learned", "newpod"});
  for (int alloc : gb::kAllocatedPercents) {
    for (int learned : {1, 0}) {
      if (learned == 0 && alloc == 0) continue;
      for (std::size_t p = 0; p < latency_policies().size(); ++p) {
        if (learned == 0 && latency_policies()[p] == "binpack") continue;
        for (int cpu_only : {0, 1}) {
          b->Args({static_cast<std::int64_t>(p), 5000, alloc, cpu_only, learned, 0});
          if (learned == 1 && cpu_only == 0) {
            for (int newpod : {1, 2, 3})
              b->Args({static_cast<std::int64_t>(p), 5000, alloc, cpu_only, learned, newpod});
          }
        }
      }
    }
  }
}

}  // namespace

BENCHMARK(BM_PrioritizeLatency)
    ->Apply(latency_policy_grid)
    ->Apply([](benchmark::internal::Benchmark* b) { gb::as_distribution(b, kLatencyRequests); })
    ->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_FilterLatency)
    ->ArgNames({"nodes", "alloc%"})
    ->ArgsProduct({{5000}, {0, 50, 90}})
    ->Apply([](benchmark::internal::Benchmark* b) { gb::as_distribution(b, kLatencyRequests); })
    ->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_RankScores)
    ->ArgNames({"infeasible%", "tied%", "levels"})
    ->Args({0, 0, 1})
    ->Args({5, 25, 9})
    ->Args({50, 0, 1})
    ->Args({50, 50, 12})
    ->Args({20, 100, 12})
    ->Args({0, 90, 1})
    ->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_Filter)->Apply(size_grid)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_Prioritize)->Apply(policy_size_grid)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_PlaceOneNode)->Apply(policy_alloc_grid)->Unit(benchmark::kNanosecond);
BENCHMARK(BM_Bind)->Apply(policy_size_grid)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_FilterRequest)->Apply(size_grid)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_PrioritizeRequest)->Apply(size_grid)->Unit(benchmark::kMicrosecond);

BENCHMARK(BM_FilterRequest)
    ->Name("BM_FilterRequestLatency")
    ->Apply(size_grid)
    ->Apply([](benchmark::internal::Benchmark* b) { gb::as_distribution(b, kLatencyRequests); })
    ->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_PrioritizeRequest)
    ->Name("BM_PrioritizeRequestLatency")
    ->Apply(size_grid)
    ->Apply([](benchmark::internal::Benchmark* b) { gb::as_distribution(b, kLatencyRequests); })
    ->Unit(benchmark::kMicrosecond);

BENCHMARK(BM_FilterRequestDefaultOffer)
    ->Name("BM_FilterRequestDefaultOfferLatency")
    ->Apply(size_grid)
    ->Apply([](benchmark::internal::Benchmark* b) { gb::as_distribution(b, kLatencyRequests); })
    ->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_PrioritizeRequestDefaultOffer)
    ->Name("BM_PrioritizeRequestDefaultOfferLatency")
    ->Apply(size_grid)
    ->Apply([](benchmark::internal::Benchmark* b) { gb::as_distribution(b, kLatencyRequests); })
    ->Unit(benchmark::kMicrosecond);

BENCHMARK_MAIN();
