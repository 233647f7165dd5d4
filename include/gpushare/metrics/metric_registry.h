#pragma once
// The one Prometheus registry /metrics serialises, on prometheus-cpp. It holds no metric of its
// own but gpushare_build_info: each component defines and updates its families in its own file
// (request_metrics.h: the HTTP server; scheduling_metrics.h: filter, bind and the reservation
// ledger; src/sync/sync_metrics.h: list/watch; leader and model gauges at scrape time) on the
// registry it is given. Registering a family twice (two components, or one constructed twice)
// yields the same family. Thread-safe.

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/metric_family.h>
#include <prometheus/registry.h>

#include <array>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace gpushare::metrics {

// gpushare_request_duration_seconds' upper bounds (100 µs to 5 s); dashboards read these `le`s.
inline constexpr std::array<double, 14> kRequestDurationBuckets{
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 5};

// Families computed at scrape time from values kept elsewhere (the model, the elector's counts):
// they exist for one scrape only, so the series of a node that went are gone.
using ScrapeCollector = std::function<void(std::vector<prometheus::MetricFamily>&)>;

class MetricRegistry {
 public:
  MetricRegistry();
  ~MetricRegistry();
  MetricRegistry(const MetricRegistry&) = delete;
  MetricRegistry& operator=(const MetricRegistry&) = delete;

  // Registers (or finds) a family. `written_when_empty`: the scrape writes its HELP and TYPE
  // even before it has a series (prometheus-cpp leaves such families out; probes, alerts and
  // tests look for them).
  template <typename T>
  prometheus::Family<T>& add(prometheus::detail::Builder<T> builder, const std::string& name,
                             const std::string& help, bool written_when_empty = true) {
    auto& family = builder.Name(name).Help(help).Register(*registry_);
    if (written_when_empty) declare(name, help, T::metric_type);
    return family;
  }
  // Labels of a family written in this order (prometheus-cpp sorts them by name).
  void keep_label_order(std::string family, std::vector<std::string> label_names);
  // Called on every scrape, in the order added; must be safe from the serving threads.
  void add_collector(ScrapeCollector collector);

  // Prometheus text format (0.0.4): the registered families, then the collectors' and
  // `extra`'s (the model's gauges, built from a snapshot by the caller).
  std::string render(const ScrapeCollector& extra = nullptr) const;

  prometheus::Registry& prometheus() { return *registry_; }

 private:
  void declare(const std::string& name, const std::string& help, prometheus::MetricType type);

  std::shared_ptr<prometheus::Registry> registry_;
  mutable std::mutex mutex_;  // guards the three below
  std::vector<prometheus::MetricFamily> declared_;
  std::map<std::string, std::vector<std::string>, std::less<>> label_order_;
  std::vector<ScrapeCollector> collectors_;
};

// The series of one family by label values, so that a hot path finds its counter with one map
// lookup (no allocation for short values) instead of prometheus::Family::Add, which hashes a
// std::map of labels and constructs a metric each call. Series are never removed, so the cached
// pointers stay valid for the registry's lifetime.
template <typename T>
class Series {
 public:
  Series(prometheus::Family<T>& family, std::vector<std::string> label_names)
      : family_(family), label_names_(std::move(label_names)) {}

  T& at(std::initializer_list<std::string_view> values) {
    std::string key;
    for (std::string_view value : values) {
      key += value;
      key += '\0';  // our label values never hold NUL, so the joined key is unambiguous
    }
    std::lock_guard lock(mutex_);
    if (auto it = cache_.find(key); it != cache_.end()) return *it->second;
    prometheus::Labels labels;
    auto name = label_names_.begin();
    for (std::string_view value : values) labels.emplace(*name++, std::string(value));
    T* series = nullptr;
    if constexpr (std::is_same_v<T, prometheus::Histogram>) {
      series =
          &family_.Add(labels, prometheus::Histogram::BucketBoundaries(
                                   kRequestDurationBuckets.begin(), kRequestDurationBuckets.end()));
    } else {
      series = &family_.Add(labels);
    }
    cache_.emplace(std::move(key), series);
    return *series;
  }

  // Writes labels in the order given here when there are several.
  void keep_label_order(MetricRegistry& registry) const {
    if (label_names_.size() > 1) registry.keep_label_order(family_.GetName(), label_names_);
  }

 private:
  prometheus::Family<T>& family_;
  const std::vector<std::string> label_names_;
  std::mutex mutex_;
  std::map<std::string, T*, std::less<>> cache_;  // guarded by mutex_
};

// Builds families for a ScrapeCollector: family(...) then its samples.
class ScrapeFamilies {
 public:
  explicit ScrapeFamilies(std::vector<prometheus::MetricFamily>& out) : out_(out) {}
  ScrapeFamilies& family(std::string name, prometheus::MetricType type, std::string help);
  ScrapeFamilies& sample(double value, std::vector<prometheus::ClientMetric::Label> labels = {});
  ScrapeFamilies& reserve(std::size_t samples);

 private:
  std::vector<prometheus::MetricFamily>& out_;
};

}  // namespace gpushare::metrics
