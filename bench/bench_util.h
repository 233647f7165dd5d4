#pragma once
// Shared pieces of the Google Benchmark executables: argument grids, latency percentiles, and
// the request path exactly as http_server.cpp runs it (decode, service, encode).

#include <benchmark/benchmark.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "cluster_generator.h"
#include "gpushare/wire/wire_decode.h"
#include "gpushare/wire/wire_encode.h"

namespace gpushare::bench {

inline constexpr int kNodeCounts[] = {1000, 5000, 10000};
inline constexpr int kAllocatedPercents[] = {0, 50, 90};

inline ClusterShape shape_of(int nodes, int allocated_percent) {
  ClusterShape shape;
  shape.nodes = nodes;
  shape.allocated = allocated_percent / 100.0;
  return shape;
}

// Percentile of per-repetition times. Used with ->Iterations(1)->Repetitions(n), so each value
// is one request: the distribution, not a mean of means.
inline double percentile(const std::vector<double>& values, double p) {
  if (values.empty()) return 0;
  std::vector<double> sorted(values);
  std::sort(sorted.begin(), sorted.end());
  const double rank = p / 100.0 * static_cast<double>(sorted.size() - 1);
  const auto lo = static_cast<std::size_t>(std::floor(rank));
  const auto hi = static_cast<std::size_t>(std::ceil(rank));
  return sorted[lo] + (sorted[hi] - sorted[lo]) * (rank - static_cast<double>(lo));
}

// Adds p50/p90/p99/max rows to a repeated single-iteration benchmark.
// GPUSHARE_BENCH_REQUESTS caps the repetitions: a few requests are enough under callgrind.
// GPUSHARE_BENCH_EACH_REQUEST reports every request too (bench/least_of_rounds.py reads them).
inline benchmark::internal::Benchmark* as_distribution(benchmark::internal::Benchmark* b,
                                                       int requests) {
  if (const char* cap = std::getenv("GPUSHARE_BENCH_REQUESTS"); cap != nullptr) {
    requests = std::clamp(std::atoi(cap), 1, requests);
  }
  return b->Iterations(1)
      ->Repetitions(requests)
      ->ReportAggregatesOnly(std::getenv("GPUSHARE_BENCH_EACH_REQUEST") == nullptr)
      ->ComputeStatistics("p50", [](const std::vector<double>& v) { return percentile(v, 50); })
      ->ComputeStatistics("p90", [](const std::vector<double>& v) { return percentile(v, 90); })
      ->ComputeStatistics("p99", [](const std::vector<double>& v) { return percentile(v, 99); })
      ->ComputeStatistics("max", [](const std::vector<double>& v) { return percentile(v, 100); });
}

// kube-scheduler's default number of nodes offered to extenders in a cluster of `nodes`:
// max(100, nodes x (50 - nodes/125, at least 5) / 100), e.g. 420 of 1 000, 500 of 5 000 or 10 000.
inline int default_offered(int nodes) {
  const int percent = std::max(5, 50 - nodes / 125);
  return std::min(nodes, std::max(100, nodes * percent / 100));
}

// Request bodies per (nodes, form, pod request, nodes offered), built once per process.
enum class BodyForm { kNodeNames, kNodes };
inline const std::string& request_body(int nodes, BodyForm form, core::Units pod_request = 4,
                                       int offered = -1) {
  static std::map<std::tuple<int, BodyForm, core::Units, int>, std::string> bodies;
  auto key = std::tuple{nodes, form, pod_request, offered};
  auto it = bodies.find(key);
  if (it == bodies.end()) {
    ClusterShape shape;
    shape.nodes = nodes;
    const Json pod = default_pending_pod(pod_request);
    it = bodies
             .emplace(key, form == BodyForm::kNodeNames ? args_with_names(shape, pod, offered)
                                                        : args_with_nodes(shape, pod, offered))
             .first;
  }
  return it->second;
}

// What the filter and prioritize routes do with a request body (see http_server.cpp).
inline wire::ExtenderArgs decode_request(std::string_view body, const kube::ResourceNames& names) {
  return wire::decode_extender_args_body(body, names);
}

// Not inlined, so profilers (callgrind --toggle-collect) can isolate one request.
[[gnu::noinline]] inline std::string handle_filter(service::SchedulingService& service,
                                                   std::string_view body) {
  wire::ExtenderArgs args = decode_request(body, service.config().names);
  return wire::encode_filter_result(service.filter(std::move(args)));
}

[[gnu::noinline]] inline std::string handle_prioritize(service::SchedulingService& service,
                                                       std::string_view body) {
  const wire::ExtenderArgs args = decode_request(body, service.config().names);
  return wire::encode_priorities(service.prioritize(args));
}

}  // namespace gpushare::bench
