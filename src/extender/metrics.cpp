#include "gpushare/extender/metrics.h"

#include <fmt/format.h>

namespace gpushare::extender {

void Histogram::observe(double seconds) {
  for (std::size_t i = 0; i < kBuckets.size(); ++i) {
    if (seconds <= kBuckets[i]) buckets_[i].fetch_add(1, std::memory_order_relaxed);
  }
  count_.fetch_add(1, std::memory_order_relaxed);
  sum_micros_.fetch_add(static_cast<std::uint64_t>(seconds * 1e6), std::memory_order_relaxed);
}

void Histogram::render(std::string& out, std::string_view name, std::string_view labels) const {
  const std::string sep = labels.empty() ? "" : ",";
  for (std::size_t i = 0; i < kBuckets.size(); ++i) {
    out += fmt::format("{}_bucket{{{}{}le=\"{}\"}} {}\n", name, labels, sep, kBuckets[i],
                       buckets_[i].load(std::memory_order_relaxed));
  }
  const auto count = count_.load(std::memory_order_relaxed);
  out += fmt::format("{}_bucket{{{}{}le=\"+Inf\"}} {}\n", name, labels, sep, count);
  out += fmt::format("{}_sum{{{}}} {}\n", name, labels,
                     static_cast<double>(sum_micros_.load(std::memory_order_relaxed)) / 1e6);
  out += fmt::format("{}_count{{{}}} {}\n", name, labels, count);
}

void Metrics::increment(Counter& counter, LabelKey labels) {
  std::lock_guard lock(mutex_);
  ++counter.values[std::move(labels)];
}

void Metrics::observe_request(std::string_view verb, int status, double seconds) {
  increment(requests_, {std::string(verb), std::to_string(status)});
  Histogram* histogram = nullptr;
  {
    std::lock_guard lock(mutex_);
    auto it = latency_.find(verb);
    if (it == latency_.end()) it = latency_.try_emplace(std::string(verb)).first;
    histogram = &it->second;
  }
  histogram->observe(seconds);
}

void Metrics::count_filter_rejection(std::string_view kind) {
  increment(filter_rejections_, {std::string(kind)});
}
void Metrics::count_bind(std::string_view outcome) { increment(binds_, {std::string(outcome)}); }
void Metrics::count_watch_restart(std::string_view resource) {
  increment(watch_restarts_, {std::string(resource)});
}
void Metrics::count_relist(std::string_view resource) { increment(relists_, {std::string(resource)}); }

std::string Metrics::render() const {
  std::string out;
  auto counter = [&](const Counter& c, std::string_view name, std::string_view help,
                     std::vector<std::string_view> label_names) {
    out += fmt::format("# HELP {} {}\n# TYPE {} counter\n", name, help, name);
    for (const auto& [labels, value] : c.values) {
      std::string rendered;
      for (std::size_t i = 0; i < labels.size() && i < label_names.size(); ++i) {
        rendered += fmt::format("{}{}=\"{}\"", i ? "," : "", label_names[i], labels[i]);
      }
      out += fmt::format("{}{{{}}} {}\n", name, rendered, value);
    }
  };
  std::lock_guard lock(mutex_);
  counter(requests_, "gpushare_requests_total", "Extender HTTP requests by verb and status code.",
          {"verb", "code"});
  out += "# HELP gpushare_request_duration_seconds Extender HTTP request latency by verb.\n"
         "# TYPE gpushare_request_duration_seconds histogram\n";
  for (const auto& [verb, histogram] : latency_) {
    histogram.render(out, "gpushare_request_duration_seconds", fmt::format("verb=\"{}\"", verb));
  }
  counter(filter_rejections_, "gpushare_filter_rejections_total",
          "Nodes rejected by filter, by reason.", {"reason"});
  counter(binds_, "gpushare_binds_total", "Bind calls by outcome.", {"outcome"});
  counter(watch_restarts_, "gpushare_watch_restarts_total", "API-server watches restarted.",
          {"resource"});
  counter(relists_, "gpushare_relists_total", "Full relists from the API server.", {"resource"});
  out += fmt::format(
      "# HELP gpushare_last_sync_timestamp_seconds Unix time of the last complete sync.\n"
      "# TYPE gpushare_last_sync_timestamp_seconds gauge\n"
      "gpushare_last_sync_timestamp_seconds {}\n",
      last_sync_seconds_.load());
  return out;
}

}  // namespace gpushare::extender
