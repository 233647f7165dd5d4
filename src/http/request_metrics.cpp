#include "gpushare/http/request_metrics.h"

#include <string>

namespace gpushare::http {

RequestMetrics::RequestMetrics(metrics::MetricRegistry& registry)
    : requests_(registry.add(prometheus::BuildCounter(), "gpushare_requests_total",
                             "Extender HTTP requests by verb and status code."),
                {"verb", "code"}),
      latency_(registry.add(prometheus::BuildHistogram(), "gpushare_request_duration_seconds",
                            "Extender HTTP request latency by verb."),
               {"verb"}),
      ready_(registry
                 .add(prometheus::BuildGauge(), "gpushare_ready",
                      "1 if this replica answers /readyz with 200: synced and, with "
                      "--leader-elect, the leader.")
                 .Add({})),
      http_served_(registry
                       .add(prometheus::BuildGauge(), "gpushare_http_connections",
                            "Open HTTP connections, idle ones included.")
                       .Add({})),
      http_waiting_(registry
                        .add(prometheus::BuildGauge(), "gpushare_http_connections_waiting",
                             "HTTP connections with a whole request buffered, waiting for a "
                             "thread because --http-threads are all answering.")
                        .Add({})),
      http_limit_(registry
                      .add(prometheus::BuildGauge(), "gpushare_http_connection_limit",
                           "--max-connections: most open HTTP connections.")
                      .Add({})),
      http_body_bytes_(registry
                           .add(prometheus::BuildGauge(), "gpushare_http_body_bytes",
                                "Request-body bytes buffered or being answered, charged to "
                                "--max-buffered-body-bytes.")
                           .Add({})),
      http_parser_bytes_(registry
                             .add(prometheus::BuildGauge(), "gpushare_http_parser_bytes",
                                  "Bytes the request-body JSON parsers keep between requests.")
                             .Add({})) {
  requests_.keep_label_order(registry);
}

void RequestMetrics::observe_request(std::string_view verb, int status, double seconds) {
  requests_.at({verb, std::to_string(status)}).Increment();
  latency_.at({verb}).Observe(seconds);
}

void RequestMetrics::set_ready(bool ready) {
  ready_.Set(ready ? 1 : 0);
}

void RequestMetrics::set_http_connections(HttpConnections connections) {
  http_served_.Set(static_cast<double>(connections.served));
  http_waiting_.Set(static_cast<double>(connections.waiting));
  http_limit_.Set(static_cast<double>(connections.limit));
  http_body_bytes_.Set(static_cast<double>(connections.body_bytes));
}

void RequestMetrics::set_parser_bytes(std::size_t bytes) {
  http_parser_bytes_.Set(static_cast<double>(bytes));
}

}  // namespace gpushare::http
