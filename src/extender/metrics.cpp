#include "gpushare/extender/metrics.h"

#include <fmt/format.h>
#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/metric_family.h>
#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>

#include <algorithm>
#include <mutex>
#include <optional>
#include <set>
#include <sstream>
#include <type_traits>
#include <utility>

#include "gpushare/version.h"

namespace gpushare::extender {

namespace {

using prometheus::ClientMetric;
using prometheus::MetricFamily;
using prometheus::MetricType;

// The series of one family by label values, so that the request path finds its counter with one
// map lookup (no allocation for short values) instead of prometheus::Family::Add, which hashes a
// std::map of labels and constructs a metric each call. Series are never removed, so the cached
// pointers stay valid for the family's lifetime.
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

  // Labels of more than one name are written in the order given here.
  void declare_order(std::map<std::string, std::vector<std::string>, std::less<>>& orders) const {
    if (label_names_.size() > 1) orders.emplace(family_.GetName(), label_names_);
  }

 private:
  prometheus::Family<T>& family_;
  const std::vector<std::string> label_names_;
  std::mutex mutex_;
  std::map<std::string, T*, std::less<>> cache_;  // guarded by mutex_
};

constexpr std::string_view kUnitNote =
    "in units of the shared resource (aliyun.com/gpu-mem: GiB with the device plugin's default "
    "--memory-unit)";

// Families built at scrape time from values held elsewhere (the model snapshot, the elector's
// counts): they exist for one scrape only, so series of a node that went are gone.
class ScrapeFamilies {
 public:
  explicit ScrapeFamilies(std::vector<MetricFamily>& out) : out_(out) {}

  ScrapeFamilies& family(std::string name, MetricType type, std::string help) {
    MetricFamily& family = out_.emplace_back();
    family.name = std::move(name);
    family.help = std::move(help);
    family.type = type;
    return *this;
  }
  ScrapeFamilies& sample(double value, std::vector<ClientMetric::Label> labels = {}) {
    MetricFamily& family = out_.back();
    ClientMetric& metric = family.metric.emplace_back();
    metric.label = std::move(labels);
    (family.type == MetricType::Counter ? metric.counter.value : metric.gauge.value) = value;
    return *this;
  }
  ScrapeFamilies& reserve(std::size_t samples) {
    out_.back().metric.reserve(samples);
    return *this;
  }

 private:
  std::vector<MetricFamily>& out_;
};

void collect_model(std::vector<MetricFamily>& out, const ModelGauges& model) {
  ScrapeFamilies f(out);
  std::size_t misconfigured = 0;
  std::size_t healthy = 0;
  std::size_t unhealthy = 0;
  std::size_t gpus = 0;
  for (const auto& node : model.nodes) {
    misconfigured += node.misconfigured ? 1 : 0;
    for (const auto& gpu : node.gpus) (gpu.healthy ? healthy : unhealthy) += 1;
    gpus += node.gpus.size();
  }
  const auto gauge = MetricType::Gauge;
  f.family("gpushare_nodes", gauge, "GPU nodes in the model.")
      .sample(static_cast<double>(model.nodes.size()));
  f.family("gpushare_misconfigured_nodes", gauge,
           "GPU nodes whose GPU resources are inconsistent (they take no pods; see /inspect).")
      .sample(static_cast<double>(misconfigured));
  f.family("gpushare_gpus", gauge, "GPUs in the model, by health.")
      .sample(static_cast<double>(healthy), {{"healthy", "true"}})
      .sample(static_cast<double>(unhealthy), {{"healthy", "false"}});
  f.family("gpushare_pods", gauge, "Pods holding GPU memory, assumed ones included.")
      .sample(static_cast<double>(model.pods));
  f.family("gpushare_assumed_pods", gauge,
           "Pods bound by the extender that the API server has not yet shown bound.")
      .sample(static_cast<double>(model.assumed_pods));
  f.family("gpushare_reservations", gauge,
           "Bind reservations by state: binding (call in flight), accepted (waiting to see the pod "
           "bound), "
           "unresolved (the call had no answer; the pod is being read back).")
      .sample(static_cast<double>(model.reservations_binding), {{"state", "binding"}})
      .sample(static_cast<double>(model.reservations_accepted), {{"state", "accepted"}})
      .sample(static_cast<double>(model.reservations_unresolved), {{"state", "unresolved"}});
  f.family("gpushare_cluster_gpu_memory_capacity", gauge,
           fmt::format("GPU memory of all GPU nodes, {}.", kUnitNote))
      .sample(static_cast<double>(model.capacity));
  f.family("gpushare_cluster_gpu_memory_allocated", gauge,
           fmt::format("GPU memory allocated to pods on all GPU nodes, {}.", kUnitNote))
      .sample(static_cast<double>(model.allocated));

  auto per_node = [&](std::string name, std::string help, auto value) {
    f.family(std::move(name), gauge, std::move(help)).reserve(model.nodes.size());
    for (const auto& node : model.nodes)
      f.sample(static_cast<double>(value(node)), {{"node", node.name}});
  };
  per_node("gpushare_node_gpu_memory_capacity", fmt::format("GPU memory of a node, {}.", kUnitNote),
           [](const NodeGauge& node) { return node.capacity; });
  per_node("gpushare_node_gpu_memory_allocated",
           fmt::format("GPU memory allocated on a node, pods without a GPU index included, {}.",
                       kUnitNote),
           [](const NodeGauge& node) { return node.allocated; });
  per_node("gpushare_node_unschedulable", "1 if the node is cordoned.",
           [](const NodeGauge& node) { return node.unschedulable ? 1 : 0; });

  auto per_gpu = [&](std::string name, std::string help, auto value) {
    f.family(std::move(name), gauge, std::move(help)).reserve(gpus);
    for (const auto& node : model.nodes) {
      for (const auto& gpu : node.gpus) {
        f.sample(static_cast<double>(value(gpu)),
                 {{"node", node.name}, {"gpu", std::to_string(gpu.index)}});
      }
    }
  };
  per_gpu("gpushare_gpu_memory_capacity", fmt::format("Memory of one GPU, {}.", kUnitNote),
          [](const GpuGauge& gpu) { return gpu.capacity; });
  per_gpu("gpushare_gpu_memory_allocated",
          fmt::format("Memory of one GPU allocated to pods, {}.", kUnitNote),
          [](const GpuGauge& gpu) { return gpu.allocated; });
  per_gpu("gpushare_gpu_healthy",
          "1 if the GPU takes new pods, 0 if listed in its node's unhealthy-gpu ConfigMap.",
          [](const GpuGauge& gpu) { return gpu.healthy ? 1 : 0; });
}

void collect_leader_election(std::vector<MetricFamily>& out,
                             const Metrics::LeaderElection& election) {
  ScrapeFamilies f(out);
  // Counters the elector keeps; prometheus::Counter cannot be set, so they are copied per scrape.
  f.family("gpushare_leader", MetricType::Gauge,
           "1 while this replica holds the leader-election Lease.")
      .sample(election.leader ? 1 : 0);
  f.family("gpushare_leader_acquisitions_total", MetricType::Counter,
           "Times this replica became the leader.")
      .sample(static_cast<double>(election.acquisitions));
  f.family(
       "gpushare_leader_lost_total", MetricType::Counter,
       "Times this replica stopped leading because no renewal succeeded within the renew deadline.")
      .sample(static_cast<double>(election.lost));
  f.family("gpushare_leader_failed_attempts_total", MetricType::Counter,
           "Lease acquire or renew attempts that did not succeed (held by another replica, "
           "conflicts, API errors).")
      .sample(static_cast<double>(election.failed_attempts));
}

}  // namespace

struct Metrics::State {
  // The registry first: the families below live in it.
  std::shared_ptr<prometheus::Registry> registry = std::make_shared<prometheus::Registry>();
  // Every family added below, for the scrape to write those without series yet (prometheus-cpp
  // leaves them out; the hand-written exposition had them, and probes and tests look for them).
  std::vector<MetricFamily> declared;
  // Label names in the order they were always written (prometheus-cpp sorts them), for families
  // with more than one: text matching by people and tests keeps working.
  std::map<std::string, std::vector<std::string>, std::less<>> label_order;

  template <typename T>
  prometheus::Family<T>& add(prometheus::detail::Builder<T> builder, const std::string& name,
                             const std::string& help, bool written_when_empty = true) {
    auto& family = builder.Name(name).Help(help).Register(*registry);
    if (written_when_empty) remember(family, help);
    return family;
  }
  template <typename T>
  void remember(const prometheus::Family<T>& family, const std::string& help) {
    MetricFamily& entry = declared.emplace_back();
    entry.name = family.GetName();
    entry.help = help;
    entry.type = T::metric_type;
  }

  Series<prometheus::Counter> requests{add(prometheus::BuildCounter(), "gpushare_requests_total",
                                           "Extender HTTP requests by verb and status code."),
                                       {"verb", "code"}};
  Series<prometheus::Histogram> latency{
      add(prometheus::BuildHistogram(), "gpushare_request_duration_seconds",
          "Extender HTTP request latency by verb."),
      {"verb"}};
  Series<prometheus::Counter> filter_rejections{
      add(prometheus::BuildCounter(), "gpushare_filter_rejections_total",
          "Nodes rejected by filter, by reason."),
      {"reason"}};
  Series<prometheus::Counter> binds{
      add(prometheus::BuildCounter(), "gpushare_binds_total", "Bind calls by outcome."),
      {"outcome"}};
  Series<prometheus::Counter> watch_restarts{
      add(prometheus::BuildCounter(), "gpushare_watch_restarts_total",
          "API-server watches restarted."),
      {"resource"}};
  Series<prometheus::Counter> relists{add(prometheus::BuildCounter(), "gpushare_relists_total",
                                          "Full relists from the API server."),
                                      {"resource"}};
  Series<prometheus::Counter> reservations_ended{
      add(prometheus::BuildCounter(), "gpushare_reservations_ended_total",
          "Bind reservations ended, by outcome (confirmed, released) and the evidence that ended "
          "them."),
      {"outcome", "evidence"}};
  // Live mode only: absent until the sync sets it, as before.
  Series<prometheus::Gauge> sync_failing{
      add(prometheus::BuildGauge(), "gpushare_sync_failing_seconds",
          "Seconds the list/watch of a resource has been failing without a success (0: in step).",
          /*written_when_empty=*/false),
      {"resource"}};

  prometheus::Family<prometheus::Gauge>& config_warnings =
      add(prometheus::BuildGauge(), "gpushare_config_warnings",
          "Mistakes standing in objects the extender reads (unhealthy-gpu ConfigMaps), by kind; "
          "/inspect's configWarnings names them.");
  prometheus::Gauge& last_sync =
      add(prometheus::BuildGauge(), "gpushare_last_sync_timestamp_seconds",
          "Unix time of the last complete sync with the API server (0: none yet, or standalone).")
          .Add({});
  prometheus::Gauge& ready = add(prometheus::BuildGauge(), "gpushare_ready",
                                 "1 if this replica answers /readyz with 200: synced and, with "
                                 "--leader-elect, the leader.")
                                 .Add({});
  prometheus::Gauge& http_served =
      add(prometheus::BuildGauge(), "gpushare_http_connections",
          "Open HTTP connections, idle ones included.")
          .Add({});
  prometheus::Gauge& http_waiting =
      add(prometheus::BuildGauge(), "gpushare_http_connections_waiting",
          "HTTP connections with a whole request buffered, waiting for a thread because --http-threads are all answering.")
          .Add({});
  prometheus::Gauge& http_limit = add(prometheus::BuildGauge(), "gpushare_http_connection_limit",
                                      "--max-connections: most open HTTP connections.")
                                      .Add({});

  std::mutex mutex;  // guards the two below
  std::map<std::string, prometheus::Gauge*> config_warning_series;
  std::optional<LeaderElection> leader_election;

  State() {
    // Known label values start at 0, so that increase() and the alerts on it see the first event.
    for (std::string_view resource : {"nodes", "pods", "configmaps"}) {
      watch_restarts.at({resource});
      relists.at({resource});
    }
    for (std::string_view outcome : {"confirmed", "released"}) {
      for (std::string_view evidence : {"bind_call", "watch", "list", "read_back"}) {
        reservations_ended.at({outcome, evidence});
      }
    }
    add(prometheus::BuildGauge(), "gpushare_build_info",
        "Always 1; the labels name the running build.")
        .Add({{"version", std::string(version())}, {"commit", std::string(git_commit())}})
        .Set(1);
    label_order.emplace("gpushare_build_info", std::vector<std::string>{"version", "commit"});
    for (const auto* series : {&requests, &reservations_ended}) series->declare_order(label_order);
  }

  // The registry's families, the declared ones without series included, labels in their order.
  std::vector<MetricFamily> collect() const {
    std::vector<MetricFamily> families = registry->Collect();
    std::set<std::string, std::less<>> present;
    for (MetricFamily& family : families) {
      present.insert(family.name);
      const auto order = label_order.find(family.name);
      if (order == label_order.end()) continue;
      auto rank = [&](const ClientMetric::Label& label) {
        return std::find(order->second.begin(), order->second.end(), label.name) -
               order->second.begin();
      };
      for (ClientMetric& metric : family.metric) {
        std::stable_sort(metric.label.begin(), metric.label.end(),
                         [&](const auto& a, const auto& b) { return rank(a) < rank(b); });
      }
    }
    for (const MetricFamily& family : declared) {
      if (!present.contains(family.name)) families.push_back(family);
    }
    return families;
  }
};

Metrics::Metrics() : state_(std::make_unique<State>()) {
  set_config_warnings(ConfigWarnings().count_by_kind());
}
Metrics::~Metrics() = default;

prometheus::Registry& Metrics::registry() {
  return *state_->registry;
}

void Metrics::observe_request(std::string_view verb, int status, double seconds) {
  state_->requests.at({verb, std::to_string(status)}).Increment();
  state_->latency.at({verb}).Observe(seconds);
}

void Metrics::count_filter_rejection(std::string_view kind, std::uint64_t count) {
  state_->filter_rejections.at({kind}).Increment(static_cast<double>(count));
}
void Metrics::count_bind(std::string_view outcome) {
  state_->binds.at({outcome}).Increment();
}
void Metrics::count_watch_restart(std::string_view resource) {
  state_->watch_restarts.at({resource}).Increment();
}
void Metrics::count_relist(std::string_view resource) {
  state_->relists.at({resource}).Increment();
}
void Metrics::count_reservation_end(core::ReservationOutcome outcome, std::string_view evidence) {
  if (outcome == core::ReservationOutcome::kConfirmed)
    state_->reservations_ended.at({"confirmed", evidence}).Increment();
  if (outcome == core::ReservationOutcome::kReleased)
    state_->reservations_ended.at({"released", evidence}).Increment();
}
void Metrics::set_sync_failing(std::string_view resource, std::int64_t seconds) {
  state_->sync_failing.at({resource}).Set(static_cast<double>(seconds));
}
void Metrics::set_last_sync(std::int64_t unix_seconds) {
  state_->last_sync.Set(static_cast<double>(unix_seconds));
}
void Metrics::set_ready(bool ready) {
  state_->ready.Set(ready ? 1 : 0);
}
void Metrics::set_http_connections(HttpConnections connections) {
  state_->http_served.Set(static_cast<double>(connections.served));
  state_->http_waiting.Set(static_cast<double>(connections.waiting));
  state_->http_limit.Set(static_cast<double>(connections.limit));
}

void Metrics::set_config_warnings(std::map<std::string, std::size_t> by_kind) {
  std::lock_guard lock(state_->mutex);
  auto& series = state_->config_warning_series;
  for (auto it = series.begin(); it != series.end();) {  // a kind no longer reported has no series
    if (by_kind.contains(it->first)) {
      ++it;
    } else {
      state_->config_warnings.Remove(it->second);
      it = series.erase(it);
    }
  }
  for (const auto& [kind, count] : by_kind) {
    auto [it, added] = series.try_emplace(kind, nullptr);
    if (added) it->second = &state_->config_warnings.Add({{"kind", kind}});
    it->second->Set(static_cast<double>(count));
  }
}

void Metrics::set_leader_election(LeaderElection state) {
  std::lock_guard lock(state_->mutex);
  state_->leader_election = state;
}

std::string Metrics::render(const ModelGauges* model) const {
  std::vector<MetricFamily> families = state_->collect();
  std::optional<LeaderElection> election;
  {
    std::lock_guard lock(state_->mutex);
    election = state_->leader_election;
  }
  if (election) collect_leader_election(families, *election);
  if (model != nullptr) collect_model(families, *model);
  std::ostringstream out;
  prometheus::TextSerializer().Serialize(out, families);
  return std::move(out).str();
}

ModelGauges model_gauges(const core::ClusterModel& model, const core::ReservationLedger& ledger) {
  ModelGauges gauges = model_gauges(model);
  gauges.reservations_binding = ledger.count(core::ReservationState::kBinding);
  gauges.reservations_accepted = ledger.count(core::ReservationState::kAccepted);
  gauges.reservations_unresolved = ledger.count(core::ReservationState::kUnresolved);
  return gauges;
}

ModelGauges model_gauges(const core::ClusterModel& model) {
  ModelGauges gauges;
  gauges.pods = model.gpu_pod_count();  // the model also holds CPU-only pods, for scoring
  gauges.assumed_pods = model.assumed_count();
  gauges.capacity = model.total_capacity();
  gauges.allocated = model.total_used();
  for (const core::NodeState& node : model.nodes()) {
    const bool misconfigured = !node.spec().misconfiguration.empty();
    if (node.gpu_count() == 0 && !misconfigured) continue;  // CPU-only: no series
    NodeGauge& out = gauges.nodes.emplace_back();
    out.name = node.name();
    out.unschedulable = node.spec().unschedulable;
    out.misconfigured = misconfigured;
    out.capacity = node.total_capacity();
    out.allocated = node.total_used();
    out.gpus.reserve(node.gpus().size());
    for (std::size_t i = 0; i < node.gpus().size(); ++i) {
      const core::GpuState& gpu = node.gpus()[i];
      out.gpus.push_back({static_cast<int>(i), gpu.capacity, gpu.used, gpu.healthy});
    }
  }
  std::sort(gauges.nodes.begin(), gauges.nodes.end(),
            [](const NodeGauge& a, const NodeGauge& b) { return a.name < b.name; });
  return gauges;
}

}  // namespace gpushare::extender
