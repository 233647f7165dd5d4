#pragma once
// The extender's HTTP(S) endpoint: routes of product-spec.md mapped onto SchedulingService.

#include <atomic>
#include <functional>
#include <memory>
#include <string>

#include "gpushare/extender/metrics.h"
#include "gpushare/extender/model_store.h"
#include "gpushare/extender/rejection_log.h"
#include "gpushare/extender/scheduling_service.h"

namespace httplib {
class Server;
}

namespace gpushare::extender {

struct HttpServerOptions {
  std::size_t max_request_bytes = 64 * 1024 * 1024;
  int threads = 0;  // 0 = automatic
  std::string tls_cert_file;
  std::string tls_private_key_file;
  std::string policy_name;
  // Readiness: empty string = ready, else why not (first sync pending, not the leader...).
  std::function<std::string()> not_ready_reason = [] { return std::string(); };
};

class HttpServer {
 public:
  HttpServer(SchedulingService& service, ModelStore& store, Metrics& metrics,
             RejectionLog& rejections, HttpServerOptions options);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Binds the socket; port 0 picks a free one. Returns the port, or -1 with an error logged.
  int bind(const std::string& host, int port);
  // Serves until stop(); blocks.
  void serve();
  // Stops accepting, lets in-flight requests finish; safe from any thread.
  void stop();
  bool is_running() const;

 private:
  void install_routes();

  SchedulingService& service_;
  ModelStore& store_;
  Metrics& metrics_;
  RejectionLog& rejections_;
  HttpServerOptions options_;
  std::unique_ptr<httplib::Server> server_;
};

}  // namespace gpushare::extender
