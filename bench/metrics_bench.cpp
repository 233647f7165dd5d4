// The cost of a /metrics scrape (Metrics::render with the model's gauges) and of the counters on
// the request path. The model snapshot is synthetic: `nodes` GPU nodes of 8 GPUs with ~40-character
// names, as cloud providers name them; taking the snapshot (model_gauges) is not included.
//
//   build/bench/metrics_bench --benchmark_filter=Render

#include <benchmark/benchmark.h>

#include <string>

#include "cluster_generator.h"
#include "gpushare/extender/metrics.h"

namespace gpushare::bench {
namespace {

extender::ModelGauges synthetic_gauges(int nodes, int gpus_per_node) {
  extender::ModelGauges gauges;
  for (int n = 0; n < nodes; ++n) {
    extender::NodeGauge& node = gauges.nodes.emplace_back();
    node.name = node_name(n);
    for (int g = 0; g < gpus_per_node; ++g) {
      const Units allocated = (n * 7 + g * 3) % 33;
      node.gpus.push_back({g, 32, allocated, (n + g) % 97 != 0});
      node.capacity += 32;
      node.allocated += allocated;
    }
    gauges.capacity += node.capacity;
    gauges.allocated += node.allocated;
  }
  gauges.pods = static_cast<std::size_t>(nodes) * 4;
  return gauges;
}

// Counters and histograms with the series a running extender has.
void drive(extender::Metrics& metrics) {
  for (const char* verb : {"filter", "prioritize", "bind", "preempt", "inspect"}) {
    metrics.observe_request(verb, 200, 0.0003);
    metrics.observe_request(verb, 400, 0.0001);
  }
  for (const char* kind :
       {"insufficient_gpu_memory", "exceeds_gpu_capacity", "no_gpus", "misconfigured"}) {
    metrics.count_filter_rejection(kind);
  }
  metrics.count_bind("success");
  metrics.set_sync_failing("pods", 0);
}

void BM_Render(benchmark::State& state) {
  const auto gauges = synthetic_gauges(static_cast<int>(state.range(0)), 8);
  extender::Metrics metrics;
  drive(metrics);
  std::size_t bytes = 0;
  for (auto _ : state) {
    const std::string text = metrics.render(&gauges);
    bytes = text.size();
    benchmark::DoNotOptimize(text.data());
  }
  state.counters["bytes"] = static_cast<double>(bytes);
}
BENCHMARK(BM_Render)->Arg(100)->Arg(5000)->Unit(benchmark::kMillisecond);

void BM_ObserveRequest(benchmark::State& state) {
  extender::Metrics metrics;
  drive(metrics);
  for (auto _ : state) metrics.observe_request("filter", 200, 0.0003);
}
BENCHMARK(BM_ObserveRequest)->Threads(1)->Threads(2);

void BM_CountFilterRejection(benchmark::State& state) {
  extender::Metrics metrics;
  drive(metrics);
  for (auto _ : state) metrics.count_filter_rejection("insufficient_gpu_memory");
}
BENCHMARK(BM_CountFilterRejection);

}  // namespace
}  // namespace gpushare::bench

BENCHMARK_MAIN();
