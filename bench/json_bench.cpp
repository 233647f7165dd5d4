// JSON decode and encode of the extender's wire types, and the filter request with full Node
// objects (nodeCacheCapable: false).
//
//  BM_DecodeNodeNames/<nodes>        ExtenderArgs with NodeNames, as the server decodes it
//  BM_DecodeNodes/<nodes>            ExtenderArgs with full Node objects (~6 KB each)
//  BM_EncodeFilterResult/<nodes>     a filter reply: half the nodes pass, half fail with reasons
//  BM_EncodePriorities/<nodes>       a prioritize reply
//  BM_FilterNodesRequest/<nodes>/<alloc%>  body with full Nodes -> decode -> filter -> reply
//  BM_FilterNodesRequestLatency            the same as single-request repetitions (p50..max)

#include "bench_util.h"

namespace gb = gpushare::bench;

namespace {

const gpushare::kube::ResourceNames kNames{};

void BM_DecodeNodeNames(benchmark::State& state) {
  const std::string& body =
      gb::request_body(static_cast<int>(state.range(0)), gb::BodyForm::kNodeNames);
  for (auto _ : state) {
    auto args = gb::decode_request(body, kNames);
    benchmark::DoNotOptimize(args);
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) *
                          static_cast<std::int64_t>(body.size()));
}

void BM_DecodeNodes(benchmark::State& state) {
  const std::string& body =
      gb::request_body(static_cast<int>(state.range(0)), gb::BodyForm::kNodes);
  for (auto _ : state) {
    auto args = gb::decode_request(body, kNames);
    benchmark::DoNotOptimize(args);
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) *
                          static_cast<std::int64_t>(body.size()));
  state.counters["body_MB"] = static_cast<double>(body.size()) / 1e6;
}

gpushare::wire::FilterResult half_failed(int nodes) {
  gpushare::wire::FilterResult result;
  for (int i = 0; i < nodes; ++i) {
    if (i % 2 == 0) {
      result.node_names.push_back(gb::node_name(i));
    } else {
      result.failed[gb::node_name(i)] = fmt::format(
          "insufficient aliyun.com/gpu-mem on any single GPU: largest free {} of requested 4",
          i % 4);
    }
  }
  return result;
}

void BM_EncodeFilterResult(benchmark::State& state) {
  const gpushare::wire::FilterResult result = half_failed(static_cast<int>(state.range(0)));
  std::size_t bytes = 0;
  for (auto _ : state) {
    std::string text = gpushare::wire::encode_filter_result(result);
    bytes = text.size();
    benchmark::DoNotOptimize(text);
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * bytes));
}

void BM_EncodePriorities(benchmark::State& state) {
  gpushare::wire::HostPriorityList priorities;
  for (int i = 0; i < state.range(0); ++i) priorities.push_back(gb::node_name(i), i % 11);
  std::size_t bytes = 0;
  for (auto _ : state) {
    std::string text = gpushare::wire::encode_priorities(priorities);
    bytes = text.size();
    benchmark::DoNotOptimize(text);
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * bytes));
}

void BM_FilterNodesRequest(benchmark::State& state) {
  const int nodes = static_cast<int>(state.range(0));
  auto& harness = gb::cached_harness(gb::shape_of(nodes, static_cast<int>(state.range(1))));
  const std::string& body = gb::request_body(nodes, gb::BodyForm::kNodes);
  std::size_t reply_bytes = 0;
  for (auto _ : state) {
    std::string reply = gb::handle_filter(*harness.service, body);
    reply_bytes = reply.size();
    benchmark::DoNotOptimize(reply);
  }
  state.counters["req_MB"] = static_cast<double>(body.size()) / 1e6;
  state.counters["reply_MB"] = static_cast<double>(reply_bytes) / 1e6;
}

}  // namespace

BENCHMARK(BM_DecodeNodeNames)
    ->ArgName("nodes")
    ->Arg(1000)
    ->Arg(5000)
    ->Arg(10000)
    ->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_DecodeNodes)
    ->ArgName("nodes")
    ->Arg(1000)
    ->Arg(5000)
    ->Arg(10000)
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_EncodeFilterResult)
    ->ArgName("nodes")
    ->Arg(1000)
    ->Arg(5000)
    ->Arg(10000)
    ->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_EncodePriorities)
    ->ArgName("nodes")
    ->Arg(1000)
    ->Arg(5000)
    ->Arg(10000)
    ->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_FilterNodesRequest)
    ->ArgNames({"nodes", "alloc%"})
    ->Args({1000, 50})
    ->Args({5000, 0})
    ->Args({5000, 50})
    ->Args({5000, 90})
    ->Args({10000, 50})
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_FilterNodesRequest)
    ->Name("BM_FilterNodesRequestLatency")
    ->ArgNames({"nodes", "alloc%"})
    ->Args({5000, 50})
    ->Apply([](benchmark::internal::Benchmark* b) { gb::as_distribution(b, 100); })
    ->Unit(benchmark::kMillisecond);

BENCHMARK_MAIN();
