#include "gpushare/http/http_server.h"

#include <fmt/format.h>
#include <httplib.h>
#include <spdlog/spdlog.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <optional>
#include <ranges>
#include <thread>
#include <utility>

#include "body_reader.h"
#include "gpushare/http/connection_thread_pool.h"
#include "gpushare/http/listen_error.h"
#include "gpushare/http/process_resources.h"
#include "gpushare/http/web_ui.h"
#include "gpushare/metrics/model_metrics.h"
#include "gpushare/version.h"
#include "gpushare/wire/filter_reply.h"
#include "gpushare/wire/wire_decode.h"
#include "gpushare/wire/wire_encode.h"
#include "limited_server.h"

namespace gpushare::http {

// A body the reactor buffered whole is decoded in place.
static_assert(detail::kBufferedBodySpare >= wire::kRequestBodyPadding);
using kube::Json;
namespace {

constexpr const char* kJson = "application/json";
constexpr const char* kMetricsType = "text/plain; version=0.0.4";
constexpr std::string_view kPrefix = "/gpushare-scheduler";

std::string route(std::string_view verb) {
  return fmt::format("{}/{}", kPrefix, verb);
}

// What kube-scheduler calls (not /inspect, which people and the web view read).
bool is_scheduling_verb(std::string_view path) {
  if (!path.starts_with(kPrefix) || path.size() <= kPrefix.size() || path[kPrefix.size()] != '/')
    return false;
  const std::string_view verb = path.substr(kPrefix.size() + 1);
  return verb == "filter" || verb == "prioritize" || verb == "bind" || verb == "preempt";
}

std::string plain_error(std::string_view message) {
  return wire::encode_error(message);
}

std::string filter_error(std::string_view message) {
  wire::FilterResult result;
  result.error = std::string(message);
  return wire::encode_filter_result(result);
}

// An Accept-Encoding value without its br codings.
std::string without_brotli(std::string_view accept_encoding) {
  std::string kept;
  for (const auto part : std::views::split(accept_encoding, ',')) {
    std::string_view coding(part.begin(), part.end());
    coding.remove_prefix(std::min(coding.find_first_not_of(' '), coding.size()));
    if (coding.starts_with("br")) continue;
    if (!kept.empty()) kept += ", ";
    kept += coding;
  }
  return kept;
}

// The Error text of a refused request body (and of httplib's other refusals).
std::string body_refusal(int status, std::size_t max_request_bytes) {
  switch (status) {
    case 413:
      return fmt::format("request body too large: larger than {} bytes (--max-request-bytes)",
                         max_request_bytes);
    case 415:
      return "unsupported Content-Type or Content-Encoding of the request body";
    case 400:
      return "malformed request body (framing or Content-Encoding)";
    case 503:
      return "request bodies in memory are at --max-buffered-body-bytes; retry later";
    default:
      return fmt::format("HTTP {}", status);
  }
}

// set_content without its copy of the body.
void set_json(httplib::Response& res, std::string body) {
  res.body = std::move(body);
  res.set_header("Content-Type", kJson);
}

// A filter reply echoing full Node objects, written from the request body's texts in chunks of
// at most 256 KiB (one copy of the reply's size is never made).
void set_filter_reply(httplib::Response& res, wire::FilterResult result) {
  auto reply = std::make_shared<const wire::FilterReply>(std::move(result));
  res.set_content_provider(
      reply->size(), kJson,
      [reply](std::size_t offset, std::size_t length, httplib::DataSink& sink) {
        std::string chunk(std::min<std::size_t>(length, 256 * 1024), '\0');
        const std::size_t copied = reply->copy(offset, chunk);
        return copied > 0 && sink.write(chunk.data(), copied);
      });
}

std::size_t connection_thread_limit(int requested) {
  return requested > 0 ? static_cast<std::size_t>(requested) : kDefaultHttpThreads;
}

// Empties a tree bottom-up. nlohmann's destructor (noexcept) allocates a stack as large as a
// container's children to free it without recursion: for a tree of 8 000 nodes under memory
// pressure that allocation failed and ended the process. Children emptied first, each container
// is then cleared without allocating.
void dismantle(Json& tree) {
  if (tree.is_array()) {
    for (Json& child : tree) dismantle(child);
    tree.get_ref<Json::array_t&>().clear();
  } else if (tree.is_object()) {
    for (auto& [key, child] : tree.get_ref<Json::object_t&>()) dismantle(child);
    tree.get_ref<Json::object_t&>().clear();
  }
}

// More requests wait for an /inspect rendering than may (each holds a worker).
void refuse_inspect_waiting(httplib::Response& res) {
  res.status = 503;
  res.set_header("Retry-After", "1");
  res.set_content(
      wire::encode_error("too many /inspect requests waiting for its reply; retry later"), kJson);
}

// Dismantles a tree on leaving its scope, whether its rendering succeeded or threw.
struct DismantleOnExit {
  Json& tree;
  ~DismantleOnExit() { dismantle(tree); }
};

bool accepts_gzip(const httplib::Request& req) {
  return req.get_header_value("Accept-Encoding").find("gzip") != std::string::npos;
}

// A shared rendering as the reply, gzip-compressed (once per rendering) for the clients that
// accept it, written without copying it.
void set_shared_reply(const httplib::Request& req, httplib::Response& res,
                      const SharedRendering::Reply& reply, const char* content_type) {
  res.set_header("Vary", "Accept-Encoding");
  std::string_view body = reply->identity();
  if (accepts_gzip(req) && !reply->gzip().empty()) {
    res.set_header("Content-Encoding", "gzip");
    body = reply->gzip();
  }
  res.set_content_provider(
      body.size(), content_type,
      [reply, body](std::size_t offset, std::size_t length, httplib::DataSink& sink) {
        return sink.write(body.data() + offset, std::min(length, body.size() - offset));
      });
}

}  // namespace

HttpServer::HttpServer(service::SchedulingService& service, service::ModelStore& store,
                       metrics::MetricRegistry& metrics, service::RejectionLog& rejections,
                       HttpServerOptions options)
    : service_(service),
      store_(store),
      registry_(metrics),
      metrics_(metrics),
      rejections_(rejections),
      options_(std::move(options)),
      connections_(std::make_shared<ConnectionThreadPool>(
          std::min<std::size_t>(4, connection_thread_limit(options_.threads)),
          connection_thread_limit(options_.threads))),
      access_(options_.access),
      // Requests waiting for a rendering hold a worker each: a quarter of them at most.
      inspect_(std::max<std::size_t>(1, connection_thread_limit(options_.threads) / 4),
               options_.inspect_max_age),
      metrics_rendering_(std::max<std::size_t>(1, connection_thread_limit(options_.threads) / 4),
                         std::chrono::milliseconds(0)),
      node_inspect_(std::max<std::size_t>(1, connection_thread_limit(options_.threads) / 4),
                    options_.inspect_max_age) {
  // httplib's connection loop, with the request limits it lacks (limited_server.h); the
  // refusals it answers itself carry the same error body as the routes'.
  detail::Limits limits;
  static_cast<ConnectionLimits&>(limits) = options_.connections;
  limits.error_body = [](std::string_view message) { return wire::encode_error(message); };
  // Slow chunked uploads may hold at most a quarter of the workers (connection_rules.h).
  limits.max_chunked_bodies =
      std::max<std::size_t>(1, connection_thread_limit(options_.threads) / 4);
  if (access_.restricts()) {
    limits.refused_early = [this](std::string_view path, std::string_view peer_ip, const SSL* ssl) {
      return is_scheduling_verb(path) && access_.refusal(peer_ip, ssl).has_value();
    };
  }
  server_ = detail::make_server(limits, connections_, options_.tls_cert_file,
                                options_.tls_private_key_file);
  if (server_->is_valid()) access_error_ = access_.configure(*server_);
  install_routes();
}

HttpServer::~HttpServer() {
  stop();
}

bool HttpServer::is_running() const {
  return server_->is_running();
}

int HttpServer::bind(const std::string& host, int port) {
  if (!server_->is_valid()) {
    spdlog::error("cannot serve TLS: certificate {} or key {} unreadable or invalid",
                  options_.tls_cert_file, options_.tls_private_key_file);
    return -1;
  }
  if (!access_error_.empty()) {
    spdlog::error("cannot serve: {}", access_error_);
    return -1;
  }
  errno = 0;  // httplib keeps the failing socket call's errno; a resolver failure leaves it 0
  const int bound =
      port == 0 ? server_->bind_to_any_port(host) : (server_->bind_to_port(host, port) ? port : -1);
  if (bound < 0) {
    spdlog::error("{}", listen_failure_message(host, port, errno));
    return -1;
  }
  detail::raise_listen_backlog(*server_);
  return bound;
}

void HttpServer::serve() {
  server_->listen_after_bind();
}

bool HttpServer::stop() {
  {
    std::lock_guard lock(binds_mutex_);
    stopping_ = true;
  }
  if (server_) server_->stop();
  std::unique_lock lock(binds_mutex_);
  if (binds_in_flight_ == 0) return true;
  spdlog::info("waiting up to {} ms for {} binds in flight", options_.shutdown_grace.count(),
               binds_in_flight_);
  if (binds_done_.wait_for(lock, options_.shutdown_grace, [this] { return binds_in_flight_ == 0; }))
    return true;
  spdlog::warn("{} binds still in flight after {} ms", binds_in_flight_,
               options_.shutdown_grace.count());
  return false;
}

HttpServer::BodyCounts HttpServer::request_bodies() const {
  const detail::ConnectionStats stats = detail::connection_stats(*server_);
  return {stats.bodies_in_place, stats.bodies_read};
}

int HttpServer::binds_in_flight() const {
  std::lock_guard lock(binds_mutex_);
  return binds_in_flight_;
}

bool HttpServer::begin_bind() {
  std::lock_guard lock(binds_mutex_);
  if (stopping_) return false;
  ++binds_in_flight_;
  return true;
}

void HttpServer::end_bind() {
  std::lock_guard lock(binds_mutex_);
  if (--binds_in_flight_ == 0) binds_done_.notify_all();
}

// Before the body is read: a refused client costs no more than its headers, and the connection
// closes after the 403 (the body is left unread).
bool HttpServer::refuse_client(const httplib::Request& req, httplib::Response& res) {
  const auto why = access_.refusal(req.remote_addr, req.ssl);
  if (!why) return false;
  access_.log_refusal(req.remote_addr, req.path, *why);
  res.status = 403;
  res.set_content(wire::encode_error(fmt::format("forbidden: {}", *why)), kJson);
  detail::close_after_response();
  metrics_.observe_request(req.path.substr(kPrefix.size() + 1), 403, 0);
  return true;
}

std::string HttpServer::render_metrics() {
  metrics_.set_ready(options_.not_ready_reason().empty());
  const detail::ConnectionStats connections = detail::connection_stats(*server_);
  metrics_.set_http_connections({connections.open, connections.waiting_for_thread,
                                 connections.limit, connections.body_bytes});
  const wire::RequestParserBytes parsers = wire::request_parser_bytes();
  metrics_.set_parser_bytes(parsers.small + parsers.large);
  // Copy the model's gauges under the shared lock; format after releasing it.
  const metrics::ModelGauges gauges = store_.read(
      [](const core::ClusterModel& model, const core::PlacementPolicy&,
         const core::ReservationLedger& ledger) { return metrics::model_gauges(model, ledger); });
  return registry_.render([&gauges](std::vector<prometheus::MetricFamily>& out) {
    metrics::collect_model(out, gauges);
  });
}

std::vector<service::ConfigWarning> HttpServer::config_warnings() const {
  return options_.config_warnings ? options_.config_warnings()
                                  : std::vector<service::ConfigWarning>{};
}

std::string HttpServer::render_inspect() {
  inspect::Document document =
      store_.read([&](const core::ClusterModel& model, const core::PlacementPolicy& policy) {
        return inspect::Document::cluster(model, &policy);
      });
  Json& body = document.json();
  const DismantleOnExit dismantled{body};
  std::optional<Json> consolidation;
  if (options_.consolidation)
    consolidation = Json::parse(options_.consolidation(), nullptr, /*allow_exceptions=*/false);
  document.add(
      {options_.pod_phase, rejections_.recent(), config_warnings(), std::move(consolidation)});
  return body.dump(-1, ' ', false, Json::error_handler_t::replace);
}

// One node's /inspect reply; empty when the model does not know the node.
std::string HttpServer::render_inspect_node(const std::string& node) {
  auto document = store_.read([&](const core::ClusterModel& model, const core::PlacementPolicy&) {
    return inspect::Document::node(model, node);
  });
  if (!document) return {};
  Json& body = document->json();
  const DismantleOnExit dismantled{body};
  document->add({options_.pod_phase, std::nullopt, config_warnings(), std::nullopt});
  return body.dump(-1, ' ', false, Json::error_handler_t::replace);
}

void HttpServer::install_routes() {
  configure_transport();
  install_scheduling_routes();
  install_read_routes();
  install_web_ui(*server_);
  install_request_hooks();
}

void HttpServer::configure_transport() {
  server_->set_payload_max_length(options_.connections.max_request_bytes);
  // kube-scheduler keeps connections alive; httplib's default of 5 requests each would churn.
  server_->set_keep_alive_max_count(100000);  // the idle time-out is the reactor's
  // httplib writes a reply's headers and body separately; with Nagle's algorithm the body then
  // waits for the client's delayed ACK whenever the reply is small, as it is for the nodes
  // kube-scheduler offers by default (bench/http/run.sh measures it).
  server_->set_tcp_nodelay(true);
  // httplib's default also sets SO_REUSEPORT, under which a second process on our port (a
  // leftover replica, a typo in --listen) would silently share our connections instead of
  // failing to start. SO_REUSEADDR alone still allows an immediate restart.
  server_->set_socket_options([](socket_t sock) {
    int yes = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
  });
  server_->set_read_timeout(30);
  server_->set_write_timeout(30);
}

// Wraps a route with timing, metrics, and the error contract: bad input gets 400 and a JSON body
// with Error; anything unexpected gets 500. The model is never touched on error because decoding
// finishes before the service is called. A request with a body (the POST verbs) has it read
// first, decoded and within --max-request-bytes (413 and close beyond).
void HttpServer::answer(const std::string& verb, RouteBody body_fn, ErrorBody error_body,
                        const httplib::Request& req, httplib::Response& res,
                        const detail::BodyReader* read_body, const httplib::ContentReader* reader) {
  const auto start = std::chrono::steady_clock::now();
  try {
    std::optional<std::string> body = std::string();
    if (read_body != nullptr && reader != nullptr)
      body = (*read_body)(req, res, *reader, wire::kRequestBodyPadding);
    if (body) {
      (this->*body_fn)(req, *body, res);
    } else {
      if (const auto admitted = bad_request_log_.admit(); admitted.log) {
        spdlog::warn("{}: refused the body of a request from {} (HTTP {}){}", verb, req.remote_addr,
                     res.status, held_back_note(admitted));
      }
      res.set_content(error_body(body_refusal(res.status, options_.connections.max_request_bytes)),
                      kJson);
    }
  } catch (const kube::BadInput& e) {
    if (const auto admitted = bad_request_log_.admit(); admitted.log) {
      spdlog::warn("{}: bad request from {}: {}{}", verb, req.remote_addr, e.what(),
                   held_back_note(admitted));
    }
    res.status = 400;
    res.set_content(error_body(e.what()), kJson);
  } catch (const std::bad_alloc&) {
    // Out of memory (or address space): this request is refused, the others go on. The
    // client may retry; the model was not touched (decoding precedes the service).
    if (const auto admitted = out_of_memory_log_.admit(); admitted.log) {
      spdlog::error("{}: out of memory answering a request from {}; answered 503{}", verb,
                    req.remote_addr, held_back_note(admitted));
    }
    res.status = 503;
    res.set_header("Retry-After", "1");
    res.set_content(error_body("out of memory; retry later"), kJson);
    rearm_allocation_reserve();
  } catch (const std::exception& e) {
    spdlog::error("{}: internal error: {}", verb, e.what());
    res.status = 500;
    res.set_content(error_body(fmt::format("internal error: {}", e.what())), kJson);
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const int status = res.status == -1 ? 200 : res.status;  // httplib fills in 200 afterwards
  metrics_.observe_request(verb, status, seconds);
  SPDLOG_DEBUG("{} {} -> {} in {:.3f} ms", req.method, req.path, status, seconds * 1e3);
}

// Every body is read by a content-reader handler (the verbs, and the catch-alls below), so none
// is buffered without the decoded-size limit.
void HttpServer::post_route(const std::string& path, std::string verb, RouteBody body_fn,
                            ErrorBody error_body) {
  server_->Post(path, [this, verb = std::move(verb), body_fn, error_body,
                       read_body = detail::BodyReader(options_.connections.max_request_bytes)](
                          const httplib::Request& req, httplib::Response& res,
                          const httplib::ContentReader& reader) {
    answer(verb, body_fn, error_body, req, res, &read_body, &reader);
  });
}

void HttpServer::get_route(const std::string& path, std::string verb, RouteBody body_fn,
                           ErrorBody error_body) {
  server_->Get(path, [this, verb = std::move(verb), body_fn, error_body](
                         const httplib::Request& req, httplib::Response& res) {
    answer(verb, body_fn, error_body, req, res, nullptr, nullptr);
  });
}

void HttpServer::install_scheduling_routes() {
  post_route(route("filter"), "filter", &HttpServer::route_filter, filter_error);
  post_route(route("prioritize"), "prioritize", &HttpServer::route_prioritize, plain_error);
  post_route(route("bind"), "bind", &HttpServer::route_bind, plain_error);
  post_route(route("preempt"), "preempt", &HttpServer::route_preempt, plain_error);
  // Any other request with a body: read it within the limit (or refuse it), then 404. Without
  // these, httplib would buffer such a body itself, decompressed and without a limit.
  auto unknown_with_body = [read_body = detail::BodyReader(options_.connections.max_request_bytes)](
                               const httplib::Request& req, httplib::Response& res,
                               const httplib::ContentReader& reader) {
    if (read_body(req, res, reader)) res.status = 404;
  };
  server_->Post(".*", unknown_with_body);
  server_->Put(".*", unknown_with_body);
  server_->Patch(".*", unknown_with_body);
  server_->Delete(".*", unknown_with_body);
}

void HttpServer::route_filter(const httplib::Request&, std::string& body, httplib::Response& res) {
  // The body becomes the source of the survivors' texts, the reply is moved in: with full Node
  // objects each is as large as the request, and the reply is written from the body's texts
  // instead of being built whole.
  wire::ExtenderArgs args =
      wire::decode_extender_args_body(std::move(body), service_.config().names);
  wire::FilterResult result = service_.filter(std::move(args));
  if (result.node_texts) {
    set_filter_reply(res, std::move(result));
  } else {
    set_json(res, wire::encode_filter_result(result));
  }
}

void HttpServer::route_prioritize(const httplib::Request&, std::string& body,
                                  httplib::Response& res) {
  wire::ExtenderArgs args =
      wire::decode_extender_args_body(std::move(body), service_.config().names);
  set_json(res, wire::encode_priorities(service_.prioritize(std::move(args))));
}

void HttpServer::route_bind(const httplib::Request&, std::string& body, httplib::Response& res) {
  const wire::BindingArgs args = wire::decode_binding_args(body);
  if (!begin_bind()) {
    res.status = 503;  // kube-scheduler retries; the next leader binds it
    res.set_content(wire::encode_binding_result("gpushare-extender is shutting down"), kJson);
    return;
  }
  struct Done {
    HttpServer* server;
    ~Done() { server->end_bind(); }
  } done{this};
  const service::BindReply reply = service_.bind(args);
  // The Go original answers a failed bind with 500; kube-scheduler treats any non-200 as failure
  // and requeues the pod.
  if (!reply.error.empty()) res.status = 500;
  res.set_content(wire::encode_binding_result(reply.error), kJson);
}

void HttpServer::route_preempt(const httplib::Request&, std::string& body, httplib::Response& res) {
  const wire::PreemptionArgs args = wire::decode_preemption_args(body, service_.config().names);
  res.set_content(wire::encode_preemption_result(service_.preempt(args)), kJson);
}

void HttpServer::install_read_routes() {
  get_route(route("inspect"), "inspect", &HttpServer::route_inspect, plain_error);
  get_route(route("inspect/([^/]+)"), "inspect", &HttpServer::route_inspect_node, plain_error);
  get_route(route("consolidation"), "consolidation", &HttpServer::route_consolidation, plain_error);

  server_->Get("/version", [](const httplib::Request&, httplib::Response& res) {
    res.set_content(gpushare::version_string() + "\n", "text/plain");
  });
  server_->Get("/healthz", [](const httplib::Request&, httplib::Response& res) {
    res.set_content("ok\n", "text/plain");
  });
  server_->Get("/readyz", [this](const httplib::Request&, httplib::Response& res) {
    const std::string reason = options_.not_ready_reason();
    if (reason.empty()) {
      res.set_content("ok\n", "text/plain");
    } else {
      res.status = 503;
      res.set_content(fmt::format("not ready: {}\n", reason), "text/plain");
    }
  });
  server_->Get("/metrics", [this](const httplib::Request& req, httplib::Response& res) {
    // Per-node and per-GPU series: megabytes with thousands of nodes. One rendering at a time,
    // shared by the scrapes that arrived before it began.
    const SharedRendering::Reply reply =
        metrics_rendering_.get({}, [this] { return render_metrics(); });
    if (!reply) {
      res.status = 503;
      res.set_header("Retry-After", "1");
      res.set_content("too many /metrics requests waiting; retry later\n", "text/plain");
      return;
    }
    set_shared_reply(req, res, reply, kMetricsType);
  });
}

void HttpServer::route_inspect(const httplib::Request& req, std::string&, httplib::Response& res) {
  const RenderKey key{store_.generation(), rejections_.added(), {}};
  const SharedRendering::Reply reply = inspect_.get(key, [this] { return render_inspect(); });
  if (!reply) return refuse_inspect_waiting(res);
  set_shared_reply(req, res, reply, kJson);
}

void HttpServer::route_inspect_node(const httplib::Request& req, std::string&,
                                    httplib::Response& res) {
  const std::string node = req.matches[1];
  const RenderKey key{store_.generation(), rejections_.added(), node};
  const SharedRendering::Reply reply =
      node_inspect_.get(key, [&] { return render_inspect_node(node); });
  if (!reply) return refuse_inspect_waiting(res);
  if (reply->identity().empty()) {
    res.status = 404;
    res.set_content(wire::encode_error(fmt::format("node {} is not known", node)), kJson);
    return;
  }
  set_shared_reply(req, res, reply, kJson);
}

void HttpServer::route_consolidation(const httplib::Request&, std::string&,
                                     httplib::Response& res) {
  if (!options_.consolidation) {
    res.status = 404;
    res.set_content(wire::encode_error("consolidation is off: start the extender with "
                                       "--consolidate plan (or evict), live mode"),
                    kJson);
    return;
  }
  set_json(res, options_.consolidation());
}

void HttpServer::install_request_hooks() {
  server_->set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
    return before_routing(req, res) ? httplib::Server::HandlerResponse::Handled
                                    : httplib::Server::HandlerResponse::Unhandled;
  });

  // Whatever httplib itself rejects (unknown path, oversized body, bad request line) still
  // gets a JSON Error body so kube-scheduler's logs and curl users see why.
  server_->set_error_handler([max = options_.connections.max_request_bytes](
                                 const httplib::Request& req, httplib::Response& res) {
    // httplib answers 400 when its read of a body fails; when the stream stopped it at the
    // limit, say so.
    if (detail::body_over_limit()) res.status = 413;
    if (!res.body.empty()) return;
    const std::string message = res.status == 404
                                    ? fmt::format("no such endpoint: {} {}", req.method, req.path)
                                    : body_refusal(res.status, max);
    res.set_content(wire::encode_error(message), kJson);
  });
  // A connection whose request body was not read to its end cannot carry another request:
  // tell the client it closes (it does, after this reply).
  server_->set_post_routing_handler([](const httplib::Request&, httplib::Response& res) {
    if (detail::closing_after_response()) res.set_header("Connection", "close");
  });
}

// httplib (0.11) compresses with brotli at its slowest quality whenever a client accepts br, as
// every browser does: seconds of CPU per MB of /inspect or /metrics, on every refresh of the
// web view. Offer such clients gzip (or nothing) instead.
// The scheduling verbs are not compressed at all: kube-scheduler's Go client asks for gzip
// on every call, and compressing a filter reply costs more CPU than answering the filter
// (docs/benchmarks.md) to save bytes on a cluster network.
bool HttpServer::before_routing(const httplib::Request& req, httplib::Response& res) {
  const bool scheduling_verb = is_scheduling_verb(req.path);
  if (scheduling_verb && refuse_client(req, res)) return true;
  // Byte ranges are ignored (the whole reply, 200): httplib builds a multi-range reply in
  // memory, a copy of the body per range, and a Range header may list hundreds.
  const_cast<httplib::Request&>(req).ranges.clear();
  // httplib reads a PRI request's body itself (no content-reader route can take it), whole
  // and decompressed, without --max-request-bytes: refused before it does.
  if (req.method == "PRI") {
    res.status = 405;
    res.set_content(wire::encode_error("method PRI is not allowed"), kJson);
    detail::close_after_response();
    return true;
  }
  auto [first, last] = req.headers.equal_range("Accept-Encoding");
  for (auto it = first; it != last; ++it) {
    // Handlers get a const view of the server's own (non-const) request object.
    if (scheduling_verb) {
      const_cast<std::string&>(it->second) = "identity";
      continue;
    }
    if (it->second.find("br") == std::string::npos) continue;
    const_cast<std::string&>(it->second) = without_brotli(it->second);
  }
  return false;
}

}  // namespace gpushare::http
