#include "gpushare/extender/metrics.h"

#include <algorithm>

#include <fmt/format.h>

#include "gpushare/version.h"

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
void Metrics::count_reservation_end(core::ReservationOutcome outcome, std::string_view evidence) {
  if (outcome == core::ReservationOutcome::kConfirmed) increment(reservations_ended_, {"confirmed", std::string(evidence)});
  if (outcome == core::ReservationOutcome::kReleased) increment(reservations_ended_, {"released", std::string(evidence)});
}
void Metrics::set_sync_failing(std::string_view resource, std::int64_t seconds) {
  std::lock_guard lock(mutex_);
  sync_failing_.insert_or_assign(std::string(resource), seconds);
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

namespace {

// Label values as the text format wants them: backslash, double quote and newline escaped.
std::string escape_label(std::string_view value) {
  std::string out;
  out.reserve(value.size());
  for (char c : value) {
    switch (c) {
      case '\\': out += "\\\\"; break;
      case '"': out += "\\\""; break;
      case '\n': out += "\\n"; break;
      default: out += c;
    }
  }
  return out;
}

void family(std::string& out, std::string_view name, std::string_view type, std::string_view help) {
  out += fmt::format("# HELP {} {}\n# TYPE {} {}\n", name, help, name, type);
}

constexpr std::string_view kUnitNote =
    "in units of the shared resource (aliyun.com/gpu-mem: GiB with the device plugin's default "
    "--memory-unit)";

void render_model(std::string& out, const ModelGauges& model) {
  family(out, "gpushare_nodes", "gauge", "GPU nodes in the model.");
  out += fmt::format("gpushare_nodes {}\n", model.nodes.size());
  std::size_t misconfigured = 0;
  std::size_t healthy = 0;
  std::size_t unhealthy = 0;
  for (const auto& node : model.nodes) {
    misconfigured += node.misconfigured ? 1 : 0;
    for (const auto& gpu : node.gpus) (gpu.healthy ? healthy : unhealthy) += 1;
  }
  family(out, "gpushare_misconfigured_nodes", "gauge",
         "GPU nodes whose GPU resources are inconsistent (they take no pods; see /inspect).");
  out += fmt::format("gpushare_misconfigured_nodes {}\n", misconfigured);
  family(out, "gpushare_gpus", "gauge", "GPUs in the model, by health.");
  out += fmt::format("gpushare_gpus{{healthy=\"true\"}} {}\ngpushare_gpus{{healthy=\"false\"}} {}\n",
                     healthy, unhealthy);
  family(out, "gpushare_pods", "gauge", "Pods holding GPU memory, assumed ones included.");
  out += fmt::format("gpushare_pods {}\n", model.pods);
  family(out, "gpushare_assumed_pods", "gauge",
         "Pods bound by the extender that the API server has not yet shown bound.");
  out += fmt::format("gpushare_assumed_pods {}\n", model.assumed_pods);
  family(out, "gpushare_reservations", "gauge",
         "Bind reservations by state: binding (call in flight), accepted (waiting to see the pod bound), "
         "unresolved (the call had no answer; the pod is being read back).");
  out += fmt::format("gpushare_reservations{{state=\"binding\"}} {}\ngpushare_reservations{{state=\"accepted\"}} {}\n"
                     "gpushare_reservations{{state=\"unresolved\"}} {}\n",
                     model.reservations_binding, model.reservations_accepted, model.reservations_unresolved);

  family(out, "gpushare_cluster_gpu_memory_capacity", "gauge",
         fmt::format("GPU memory of all GPU nodes, {}.", kUnitNote));
  out += fmt::format("gpushare_cluster_gpu_memory_capacity {}\n", model.capacity);
  family(out, "gpushare_cluster_gpu_memory_allocated", "gauge",
         fmt::format("GPU memory allocated to pods on all GPU nodes, {}.", kUnitNote));
  out += fmt::format("gpushare_cluster_gpu_memory_allocated {}\n", model.allocated);

  family(out, "gpushare_node_gpu_memory_capacity", "gauge",
         fmt::format("GPU memory of a node, {}.", kUnitNote));
  for (const auto& node : model.nodes) {
    out += fmt::format("gpushare_node_gpu_memory_capacity{{node=\"{}\"}} {}\n", escape_label(node.name),
                       node.capacity);
  }
  family(out, "gpushare_node_gpu_memory_allocated", "gauge",
         fmt::format("GPU memory allocated on a node, pods without a GPU index included, {}.", kUnitNote));
  for (const auto& node : model.nodes) {
    out += fmt::format("gpushare_node_gpu_memory_allocated{{node=\"{}\"}} {}\n", escape_label(node.name),
                       node.allocated);
  }
  family(out, "gpushare_node_unschedulable", "gauge", "1 if the node is cordoned.");
  for (const auto& node : model.nodes) {
    out += fmt::format("gpushare_node_unschedulable{{node=\"{}\"}} {}\n", escape_label(node.name),
                       node.unschedulable ? 1 : 0);
  }

  family(out, "gpushare_gpu_memory_capacity", "gauge", fmt::format("Memory of one GPU, {}.", kUnitNote));
  for (const auto& node : model.nodes) {
    for (const auto& gpu : node.gpus) {
      out += fmt::format("gpushare_gpu_memory_capacity{{node=\"{}\",gpu=\"{}\"}} {}\n",
                         escape_label(node.name), gpu.index, gpu.capacity);
    }
  }
  family(out, "gpushare_gpu_memory_allocated", "gauge",
         fmt::format("Memory of one GPU allocated to pods, {}.", kUnitNote));
  for (const auto& node : model.nodes) {
    for (const auto& gpu : node.gpus) {
      out += fmt::format("gpushare_gpu_memory_allocated{{node=\"{}\",gpu=\"{}\"}} {}\n",
                         escape_label(node.name), gpu.index, gpu.allocated);
    }
  }
  family(out, "gpushare_gpu_healthy", "gauge",
         "1 if the GPU takes new pods, 0 if listed in its node's unhealthy-gpu ConfigMap.");
  for (const auto& node : model.nodes) {
    for (const auto& gpu : node.gpus) {
      out += fmt::format("gpushare_gpu_healthy{{node=\"{}\",gpu=\"{}\"}} {}\n", escape_label(node.name),
                         gpu.index, gpu.healthy ? 1 : 0);
    }
  }
}

}  // namespace

std::string Metrics::render(const ModelGauges* model) const {
  std::string out;
  auto counter = [&](const Counter& c, std::string_view name, std::string_view help,
                     std::vector<std::string_view> label_names) {
    family(out, name, "counter", help);
    for (const auto& [labels, value] : c.values) {
      std::string rendered;
      for (std::size_t i = 0; i < labels.size() && i < label_names.size(); ++i) {
        rendered += fmt::format("{}{}=\"{}\"", i ? "," : "", label_names[i], escape_label(labels[i]));
      }
      out += fmt::format("{}{{{}}} {}\n", name, rendered, value);
    }
  };
  family(out, "gpushare_build_info", "gauge", "Always 1; the labels name the running build.");
  out += fmt::format("gpushare_build_info{{version=\"{}\",commit=\"{}\"}} 1\n",
                     escape_label(version()), escape_label(git_commit()));
  {
    std::lock_guard lock(mutex_);
    counter(requests_, "gpushare_requests_total", "Extender HTTP requests by verb and status code.",
            {"verb", "code"});
    family(out, "gpushare_request_duration_seconds", "histogram",
           "Extender HTTP request latency by verb.");
    for (const auto& [verb, histogram] : latency_) {
      histogram.render(out, "gpushare_request_duration_seconds",
                       fmt::format("verb=\"{}\"", escape_label(verb)));
    }
    counter(filter_rejections_, "gpushare_filter_rejections_total",
            "Nodes rejected by filter, by reason.", {"reason"});
    counter(binds_, "gpushare_binds_total", "Bind calls by outcome.", {"outcome"});
    counter(watch_restarts_, "gpushare_watch_restarts_total", "API-server watches restarted.",
            {"resource"});
    counter(relists_, "gpushare_relists_total", "Full relists from the API server.", {"resource"});
    counter(reservations_ended_, "gpushare_reservations_ended_total",
            "Bind reservations ended, by outcome (confirmed, released) and the evidence that ended them.",
            {"outcome", "evidence"});
    if (!sync_failing_.empty()) {
      family(out, "gpushare_sync_failing_seconds", "gauge",
             "Seconds the list/watch of a resource has been failing without a success (0: in step).");
      for (const auto& [resource, seconds] : sync_failing_) {
        out += fmt::format("gpushare_sync_failing_seconds{{resource=\"{}\"}} {}\n", escape_label(resource), seconds);
      }
    }
    family(out, "gpushare_config_warnings", "gauge",
           "Mistakes standing in objects the extender reads (unhealthy-gpu ConfigMaps), by kind; "
           "/inspect's configWarnings names them.");
    for (const auto& [kind, count] : config_warnings_) {
      out += fmt::format("gpushare_config_warnings{{kind=\"{}\"}} {}\n", escape_label(kind), count);
    }
  }
  family(out, "gpushare_last_sync_timestamp_seconds", "gauge",
         "Unix time of the last complete sync with the API server (0: none yet, or standalone).");
  out += fmt::format("gpushare_last_sync_timestamp_seconds {}\n", last_sync_seconds_.load());
  family(out, "gpushare_ready", "gauge",
         "1 if this replica answers /readyz with 200: synced and, with --leader-elect, the leader.");
  out += fmt::format("gpushare_ready {}\n", ready_.load() ? 1 : 0);
  if (const auto election = leader_election()) {
    family(out, "gpushare_leader", "gauge", "1 while this replica holds the leader-election Lease.");
    out += fmt::format("gpushare_leader {}\n", election->leader ? 1 : 0);
    family(out, "gpushare_leader_acquisitions_total", "counter", "Times this replica became the leader.");
    out += fmt::format("gpushare_leader_acquisitions_total {}\n", election->acquisitions);
    family(out, "gpushare_leader_lost_total", "counter",
           "Times this replica stopped leading because no renewal succeeded within the renew deadline.");
    out += fmt::format("gpushare_leader_lost_total {}\n", election->lost);
    family(out, "gpushare_leader_failed_attempts_total", "counter",
           "Lease acquire or renew attempts that did not succeed (held by another replica, conflicts, API errors).");
    out += fmt::format("gpushare_leader_failed_attempts_total {}\n", election->failed_attempts);
  }
  family(out, "gpushare_http_connections", "gauge",
         "Open HTTP connections, idle ones included.");
  out += fmt::format("gpushare_http_connections {}\n", http_served_.load());
  family(out, "gpushare_http_connections_waiting", "gauge",
         "HTTP connections with a whole request buffered, waiting for a thread because --http-threads are all answering.");
  out += fmt::format("gpushare_http_connections_waiting {}\n", http_waiting_.load());
  family(out, "gpushare_http_connection_limit", "gauge", "--max-connections: most open HTTP connections.");
  out += fmt::format("gpushare_http_connection_limit {}\n", http_limit_.load());
  if (model != nullptr) render_model(out, *model);
  return out;
}

void Metrics::set_config_warnings(std::map<std::string, std::size_t> by_kind) {
  std::lock_guard lock(mutex_);
  config_warnings_ = std::move(by_kind);
}

void Metrics::set_leader_election(LeaderElection state) {
  std::lock_guard lock(mutex_);
  leader_election_ = state;
}

std::optional<Metrics::LeaderElection> Metrics::leader_election() const {
  std::lock_guard lock(mutex_);
  return leader_election_;
}

}  // namespace gpushare::extender
