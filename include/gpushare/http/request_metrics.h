#pragma once
// The HTTP server's metrics: requests by verb and status, their latency, connections, readiness.

#include <cstddef>
#include <string_view>

#include "gpushare/metrics/metric_registry.h"

namespace gpushare::http {

class RequestMetrics {
 public:
  explicit RequestMetrics(metrics::MetricRegistry& registry);

  // One finished HTTP request on an extender verb (filter, prioritize, bind, preempt, inspect...).
  void observe_request(std::string_view verb, int status, double seconds);
  // What /readyz says (synced and, with --leader-elect, the caught-up leader); set per scrape.
  void set_ready(bool ready);
  struct HttpConnections {
    std::size_t served = 0;   // open connections
    std::size_t waiting = 0;  // a request buffered, waiting for a thread (all --http-threads busy)
    std::size_t limit = 0;    // --max-connections
    std::size_t body_bytes = 0;  // request-body bytes charged to --max-buffered-body-bytes
  };
  // Set per scrape.
  void set_http_connections(HttpConnections connections);
  // Bytes the request parsers keep between requests (request_parser_bytes); set per scrape.
  void set_parser_bytes(std::size_t bytes);

 private:
  metrics::Series<prometheus::Counter> requests_;
  metrics::Series<prometheus::Histogram> latency_;
  prometheus::Gauge& ready_;
  prometheus::Gauge& http_served_;
  prometheus::Gauge& http_waiting_;
  prometheus::Gauge& http_limit_;
  prometheus::Gauge& http_body_bytes_;
  prometheus::Gauge& http_parser_bytes_;
};

}  // namespace gpushare::http
