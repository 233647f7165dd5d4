// The cost of a /metrics scrape (MetricRegistry::render with the model's gauges) and of the
// counters on the request path. The model snapshot is synthetic: `nodes` GPU nodes of 8 GPUs with
// ~40-character names, as cloud providers name them; taking the snapshot (model_gauges) is not
// included.
//
//   build/bench/metrics_bench --benchmark_filter=Render

#include <benchmark/benchmark.h>

#include <string>

#include "cluster_generator.h"
#include "gpushare/http/request_metrics.h"
#include "gpushare/metrics/metric_registry.h"
#include "gpushare/metrics/model_metrics.h"
#include "gpushare/metrics/scheduling_metrics.h"

namespace gpushare::bench {
namespace {

metrics::ModelGauges synthetic_gauges(int nodes, int gpus_per_node) {
  metrics::ModelGauges gauges;
  for (int n = 0; n < nodes; ++n) {
    metrics::NodeGauge& node = gauges.nodes.emplace_back();
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

// The registry with the components' families, as a running extender has them.
struct Exported {
  metrics::MetricRegistry registry;
  http::RequestMetrics requests{registry};
  metrics::SchedulingMetrics scheduling{registry};

  Exported() {
    for (const char* verb : {"filter", "prioritize", "bind", "preempt", "inspect"}) {
      requests.observe_request(verb, 200, 0.0003);
      requests.observe_request(verb, 400, 0.0001);
    }
    for (const char* kind :
         {"insufficient_gpu_memory", "exceeds_gpu_capacity", "no_gpus", "misconfigured"}) {
      scheduling.count_filter_rejection(kind);
    }
    scheduling.count_bind("success");
  }
};

void BM_Render(benchmark::State& state) {
  const auto gauges = synthetic_gauges(static_cast<int>(state.range(0)), 8);
  Exported metrics;
  std::size_t bytes = 0;
  for (auto _ : state) {
    const std::string text =
        metrics.registry.render([&gauges](std::vector<prometheus::MetricFamily>& out) {
          metrics::collect_model(out, gauges);
        });
    bytes = text.size();
    benchmark::DoNotOptimize(text.data());
  }
  state.counters["bytes"] = static_cast<double>(bytes);
}
BENCHMARK(BM_Render)->Arg(100)->Arg(5000)->Unit(benchmark::kMillisecond);

void BM_ObserveRequest(benchmark::State& state) {
  Exported metrics;
  for (auto _ : state) metrics.requests.observe_request("filter", 200, 0.0003);
}
BENCHMARK(BM_ObserveRequest)->Threads(1)->Threads(2);

void BM_CountFilterRejection(benchmark::State& state) {
  Exported metrics;
  for (auto _ : state) metrics.scheduling.count_filter_rejection("insufficient_gpu_memory");
}
BENCHMARK(BM_CountFilterRejection);

}  // namespace
}  // namespace gpushare::bench

BENCHMARK_MAIN();
