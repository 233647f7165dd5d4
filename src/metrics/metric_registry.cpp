#include "gpushare/metrics/metric_registry.h"

#include <prometheus/text_serializer.h>

#include <algorithm>
#include <set>
#include <sstream>

#include "gpushare/version.h"

namespace gpushare::metrics {

using prometheus::ClientMetric;
using prometheus::MetricFamily;

MetricRegistry::MetricRegistry() : registry_(std::make_shared<prometheus::Registry>()) {
  add(prometheus::BuildGauge(), "gpushare_build_info",
      "Always 1; the labels name the running build.")
      .Add({{"version", std::string(version())}, {"commit", std::string(git_commit())}})
      .Set(1);
  keep_label_order("gpushare_build_info", {"version", "commit"});
}

MetricRegistry::~MetricRegistry() = default;

void MetricRegistry::declare(const std::string& name, const std::string& help,
                             prometheus::MetricType type) {
  std::lock_guard lock(mutex_);
  for (const MetricFamily& family : declared_) {
    if (family.name == name) return;
  }
  MetricFamily& entry = declared_.emplace_back();
  entry.name = name;
  entry.help = help;
  entry.type = type;
}

void MetricRegistry::keep_label_order(std::string family, std::vector<std::string> label_names) {
  std::lock_guard lock(mutex_);
  label_order_.insert_or_assign(std::move(family), std::move(label_names));
}

void MetricRegistry::add_collector(ScrapeCollector collector) {
  std::lock_guard lock(mutex_);
  collectors_.push_back(std::move(collector));
}

std::string MetricRegistry::render(const ScrapeCollector& extra) const {
  std::vector<MetricFamily> families = registry_->Collect();
  std::vector<ScrapeCollector> collectors;
  {
    std::lock_guard lock(mutex_);
    std::set<std::string, std::less<>> present;
    for (MetricFamily& family : families) {
      present.insert(family.name);
      const auto order = label_order_.find(family.name);
      if (order == label_order_.end()) continue;
      auto rank = [&](const ClientMetric::Label& label) {
        return std::find(order->second.begin(), order->second.end(), label.name) -
               order->second.begin();
      };
      for (ClientMetric& metric : family.metric) {
        std::stable_sort(metric.label.begin(), metric.label.end(),
                         [&](const auto& a, const auto& b) { return rank(a) < rank(b); });
      }
    }
    for (const MetricFamily& family : declared_) {
      if (!present.contains(family.name)) families.push_back(family);
    }
    collectors = collectors_;
  }
  for (const ScrapeCollector& collect : collectors) collect(families);
  if (extra) extra(families);
  std::ostringstream out;
  prometheus::TextSerializer().Serialize(out, families);
  return std::move(out).str();
}

ScrapeFamilies& ScrapeFamilies::family(std::string name, prometheus::MetricType type,
                                       std::string help) {
  MetricFamily& family = out_.emplace_back();
  family.name = std::move(name);
  family.help = std::move(help);
  family.type = type;
  return *this;
}

ScrapeFamilies& ScrapeFamilies::sample(double value, std::vector<ClientMetric::Label> labels) {
  MetricFamily& family = out_.back();
  ClientMetric& metric = family.metric.emplace_back();
  metric.label = std::move(labels);
  (family.type == prometheus::MetricType::Counter ? metric.counter.value : metric.gauge.value) =
      value;
  return *this;
}

ScrapeFamilies& ScrapeFamilies::reserve(std::size_t samples) {
  out_.back().metric.reserve(samples);
  return *this;
}

}  // namespace gpushare::metrics
