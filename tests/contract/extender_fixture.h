#pragma once
// A real gpushare HTTP server on an ephemeral port over a standalone cluster, for contract tests.

#include <httplib.h>

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <thread>

#include "gpushare/core/placement_policy.h"
#include "gpushare/core/policy_registry.h"
#include "gpushare/http/http_server.h"
#include "gpushare/service/scheduling_service.h"
#include "gpushare/standalone/standalone_cluster.h"
#include "gpushare/sync/sync_metrics.h"

namespace gpushare::testing {

using kube::Json;

inline Json node_object(const std::string& name, int gpus, long long memory_total,
                        const std::string& model = "Tesla-T4") {
  Json capacity = Json::object();
  if (memory_total >= 0) capacity["aliyun.com/gpu-mem"] = std::to_string(memory_total);
  if (gpus >= 0) capacity["aliyun.com/gpu-count"] = std::to_string(gpus);
  capacity["cpu"] = "32";
  return {{"apiVersion", "v1"},
          {"kind", "Node"},
          {"metadata", {{"name", name}, {"labels", {{"nvidia.com/gpu.product", model}}}}},
          {"status", {{"capacity", capacity}, {"allocatable", capacity}}}};
}

inline Json pod_object(const std::string& name, const std::string& uid, long long request,
                       const std::string& node = "", int gpu = -1,
                       const std::string& phase = "Running") {
  Json pod = {
      {"apiVersion", "v1"},
      {"kind", "Pod"},
      {"metadata", {{"name", name}, {"namespace", "default"}, {"uid", uid}}},
      {"spec",
       {{"containers",
         Json::array(
             {{{"name", "main"},
               {"resources", {{"limits", {{"aliyun.com/gpu-mem", std::to_string(request)}}}}}}})}}},
      {"status", {{"phase", node.empty() ? "Pending" : phase}}}};
  if (request <= 0) pod["spec"]["containers"][0]["resources"] = Json::object();
  if (!node.empty()) pod["spec"]["nodeName"] = node;
  if (gpu >= 0) {
    pod["metadata"]["annotations"] = {{"ALIYUN_COM_GPU_MEM_IDX", std::to_string(gpu)},
                                      {"ALIYUN_COM_GPU_MEM_POD", std::to_string(request)}};
  }
  return pod;
}

inline Json cluster_list(const std::vector<Json>& items) {
  return {{"apiVersion", "v1"}, {"kind", "List"}, {"items", items}};
}

class ExtenderUnderTest {
 public:
  explicit ExtenderUnderTest(const Json& cluster, std::string policy = "binpack",
                             std::size_t max_request_bytes = 1 << 20, int http_threads = 0,
                             const std::function<void(http::HttpServerOptions&)>& tweak = nullptr)
      : ExtenderUnderTest(cluster, server_options(max_request_bytes, http_threads, tweak),
                          "127.0.0.1", std::move(policy)) {}
  // Any server options (TLS, client access...), on `host` and a free port; port() is -1 if the
  // server could not bind (no such address here, a bad certificate).
  ExtenderUnderTest(const Json& cluster, http::HttpServerOptions options,
                    const std::string& host = "127.0.0.1", std::string_view policy = "binpack")
      : standalone_(cluster, kube::ResourceNames{}), store_(core::make_policy(policy)) {
    store_.write(
        [&](core::ClusterModel& model, core::PlacementPolicy&) { standalone_.populate(model); });
    service::ServiceConfig config;
    config.now_ns = [this] { return ++fake_clock_ns_; };
    service_ = std::make_unique<service::SchedulingService>(store_, standalone_, metrics_,
                                                            rejections_, config);
    options.pod_phase = standalone_.pod_phases();
    server_ = std::make_unique<http::HttpServer>(*service_, store_, metrics_, rejections_, options);
    port_ = server_->bind(host, 0);
    if (port_ < 0) return;
    thread_ = std::jthread([this] { server_->serve(); });
    while (!server_->is_running()) std::this_thread::yield();
  }
  ~ExtenderUnderTest() {
    server_->stop();
    if (thread_.joinable()) thread_.join();
  }

  static http::HttpServerOptions server_options(
      std::size_t max_request_bytes = 1 << 20, int http_threads = 0,
      const std::function<void(http::HttpServerOptions&)>& tweak = nullptr) {
    http::HttpServerOptions options;
    options.connections.max_request_bytes = max_request_bytes;
    options.threads = http_threads;
    if (tweak) tweak(options);
    return options;
  }

  int port() const { return port_; }
  httplib::Client client() const {
    httplib::Client client("127.0.0.1", port_);
    client.set_read_timeout(30);
    return client;
  }
  // POSTs a JSON body to /gpushare-scheduler/<verb>; returns status and parsed body.
  std::pair<int, Json> post(const std::string& verb, const std::string& body) const {
    auto result = client().Post("/gpushare-scheduler/" + verb, body, "application/json");
    if (!result) return {-1, nullptr};
    return {result->status, Json::parse(result->body, nullptr, false)};
  }
  std::pair<int, Json> post(const std::string& verb, const Json& body) const {
    return post(verb, body.dump());
  }
  // Prioritize's score of each of `nodes` for `pod`, by node name (empty on a failed request).
  std::map<std::string, int> prioritize_scores(const Json& pod,
                                               const std::vector<std::string>& nodes) const {
    const auto [status, reply] =
        post("prioritize", Json{{"Pod", pod}, {"Nodes", nullptr}, {"NodeNames", nodes}});
    std::map<std::string, int> result;
    if (status != 200 || !reply.is_array()) return result;
    for (const auto& entry : reply) result[entry["Host"]] = entry["Score"];
    return result;
  }
  Json inspect() const {
    auto result = client().Get("/gpushare-scheduler/inspect");
    return Json::parse(result->body);
  }

  service::ModelStore& store() { return store_; }
  standalone::StandaloneCluster& cluster() { return standalone_; }
  metrics::MetricRegistry& metrics() { return metrics_; }
  http::HttpServer& server() { return *server_; }

 private:
  standalone::StandaloneCluster standalone_;
  service::ModelStore store_;
  metrics::MetricRegistry metrics_;
  // As the extender's main has it in standalone mode: the sync's families at 0.
  sync::SyncMetrics sync_metrics_{metrics_};
  service::RejectionLog rejections_;
  std::atomic<std::int64_t> fake_clock_ns_{1'700'000'000'000'000'000};
  std::unique_ptr<service::SchedulingService> service_;
  std::unique_ptr<http::HttpServer> server_;
  int port_ = -1;
  std::jthread thread_;
};

}  // namespace gpushare::testing
