#pragma once
// The extender's HTTP(S) endpoint: routes (docs/operations.md, "Endpoints") mapped onto
// SchedulingService.

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

#include "gpushare/http/client_access.h"
#include "gpushare/http/connection_limits.h"
#include "gpushare/http/request_metrics.h"
#include "gpushare/http/shared_rendering.h"
#include "gpushare/inspect/document.h"
#include "gpushare/logging/log_throttle.h"
#include "gpushare/metrics/metric_registry.h"
#include "gpushare/service/config_warnings.h"
#include "gpushare/service/model_store.h"
#include "gpushare/service/rejection_log.h"
#include "gpushare/service/scheduling_service.h"

namespace httplib {
class ContentReader;
class Server;
struct Request;
struct Response;
}  // namespace httplib

namespace gpushare::http {
namespace detail {
class BodyReader;
}

class ConnectionThreadPool;

// Requests answered at once. Connections waiting for a request hold no thread (they wait in the
// reactor, src/http/connection_reactor.h); --max-connections bounds those.
inline constexpr std::size_t kDefaultHttpThreads = 512;

struct HttpServerOptions {
  ConnectionLimits connections;
  int threads = 0;  // most requests answered at once; 0 = kDefaultHttpThreads
  std::string tls_cert_file;
  std::string tls_private_key_file;
  // Who may call the scheduling verbs (client_access.h): --allowed-clients, --tls-client-ca.
  ClientAccessOptions access;
  // Readiness: empty string = ready, else why not (first sync pending, not the leader...).
  std::function<std::string()> not_ready_reason = [] { return std::string(); };
  // /inspect: each pod's phase, and the configuration warnings standing (both optional).
  inspect::PodPhaseLookup pod_phase;
  std::function<std::vector<service::ConfigWarning>()> config_warnings;
  // /inspect's reply is rendered once and shared (shared_rendering.h) while the model and the
  // rejections are unchanged and it is at most this old (pod phases and configuration warnings
  // come from elsewhere: they show within this time).
  std::chrono::milliseconds inspect_max_age{1000};
  // GET /gpushare-scheduler/consolidation's JSON (live mode with --consolidate plan or evict);
  // unset, the endpoint answers 404 saying consolidation is off. Set, /inspect (and so the web
  // view) carries its "consolidation" section too.
  std::function<std::string()> consolidation;
  // How long stop() waits for binds in flight to finish.
  std::chrono::milliseconds shutdown_grace{20000};
};

class HttpServer {
 public:
  // /metrics serialises `metrics`; the server counts its requests there (request_metrics.h).
  HttpServer(service::SchedulingService& service, service::ModelStore& store,
             metrics::MetricRegistry& metrics, service::RejectionLog& rejections,
             HttpServerOptions options);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Binds the socket; port 0 picks a free one. Returns the port, or -1 with an error logged.
  int bind(const std::string& host, int port);
  // Serves until stop(); blocks.
  void serve();
  // Stops accepting (binds that arrive from now on are refused with 503) and waits up to
  // shutdown_grace for the binds in flight to finish. Returns false if some are still running.
  // Safe from any thread; serve() returns once every request in flight has been answered.
  bool stop();
  bool is_running() const;
  int binds_in_flight() const;
  // How /inspect's replies were made.
  SharedRendering::Stats inspect_renderings() const { return inspect_.stats(); }
  SharedRendering::Stats metrics_renderings() const { return metrics_rendering_.stats(); }
  SharedRendering::Stats node_inspect_renderings() const { return node_inspect_.stats(); }
  // Request bodies handed to handlers as the connection buffered them (no copy), and those read
  // into a new string (chunked, encoded, sent after "100 Continue").
  struct BodyCounts {
    std::uint64_t in_place = 0;
    std::uint64_t read = 0;
  };
  BodyCounts request_bodies() const;

 private:
  // A route's work once its request body has been read (empty for GET), and the Error body
  // it answers with when that work fails.
  using RouteBody = void (HttpServer::*)(const httplib::Request&, std::string&, httplib::Response&);
  using ErrorBody = std::string (*)(std::string_view);

  void install_routes();
  void configure_transport();
  void install_scheduling_routes();
  void install_read_routes();
  void install_request_hooks();
  void post_route(const std::string& path, std::string verb, RouteBody body_fn,
                  ErrorBody error_body);
  void get_route(const std::string& path, std::string verb, RouteBody body_fn,
                 ErrorBody error_body);
  // `read_body` and `reader` are both set for a request with a body, both null for one without.
  void answer(const std::string& verb, RouteBody body_fn, ErrorBody error_body,
              const httplib::Request& req, httplib::Response& res,
              const detail::BodyReader* read_body, const httplib::ContentReader* reader);
  // true when the request was answered here (refused client, PRI), before any route.
  bool before_routing(const httplib::Request& req, httplib::Response& res);
  void route_filter(const httplib::Request& req, std::string& body, httplib::Response& res);
  void route_prioritize(const httplib::Request& req, std::string& body, httplib::Response& res);
  void route_bind(const httplib::Request& req, std::string& body, httplib::Response& res);
  void route_preempt(const httplib::Request& req, std::string& body, httplib::Response& res);
  void route_inspect(const httplib::Request& req, std::string& body, httplib::Response& res);
  void route_inspect_node(const httplib::Request& req, std::string& body, httplib::Response& res);
  void route_consolidation(const httplib::Request& req, std::string& body, httplib::Response& res);
  std::string render_inspect();
  std::string render_inspect_node(const std::string& node);
  // The configuration warnings standing (options_.config_warnings), none when unset.
  std::vector<service::ConfigWarning> config_warnings() const;
  std::string render_metrics();
  bool refuse_client(const httplib::Request& req, httplib::Response& res);
  bool begin_bind();  // false once stopping
  void end_bind();

  service::SchedulingService& service_;
  service::ModelStore& store_;
  metrics::MetricRegistry& registry_;
  RequestMetrics metrics_;
  service::RejectionLog& rejections_;
  HttpServerOptions options_;
  std::shared_ptr<ConnectionThreadPool> connections_;  // outlives httplib's queue adaptor
  std::unique_ptr<httplib::Server> server_;
  ClientAccess access_;
  std::string access_error_;  // why the client CA could not be set up; bind() fails with it
  SharedRendering inspect_;
  SharedRendering metrics_rendering_;
  // /inspect/<node>: one node at a time (a node's pods are unbounded: 512 requests for a node
  // with thousands of pods each built their own tree), shared by the requests for that node.
  SharedRendering node_inspect_;
  logging::LogThrottle out_of_memory_log_;  // a request refused for want of memory
  logging::LogThrottle
      bad_request_log_;  // 400s and refused bodies: any client can cause them at will

  mutable std::mutex binds_mutex_;
  std::condition_variable binds_done_;
  int binds_in_flight_ = 0;
  bool stopping_ = false;
};

}  // namespace gpushare::http
