#pragma once
// What one HTTP connection and one request may cost the extender: the --max-request-bytes,
// --max-connections*, --http-*-timeout and --max-buffered-body-bytes flags. One struct from the
// flags (Options) through HttpServerOptions to the connection layer that enforces it
// (src/http/connection_rules.h), so a new limit is added in one place.

#include <chrono>
#include <cstddef>

namespace gpushare::http {

inline constexpr std::size_t kDefaultMaxConnections = 4096;
inline constexpr std::size_t kDefaultMaxConnectionsPerClient = 512;

struct ConnectionLimits {
  // A request body larger than this (as announced, as received, or as decompressed) gets 413
  // and its connection closes.
  std::size_t max_request_bytes = 64 * 1024 * 1024;
  // The request line and headers together; larger gets 431 and the connection closes.
  std::size_t max_header_bytes = 64 * 1024;
  // Open connections in total (beyond: new ones wait in the listen backlog) and per client IP
  // (beyond: 503 and close).
  std::size_t max_connections = kDefaultMaxConnections;
  std::size_t max_connections_per_client = kDefaultMaxConnectionsPerClient;
  // A request's header block must arrive within header_timeout of its first byte (or of the
  // connection's acceptance), its body within body_timeout of the header block; else 408 and
  // close. An idle keep-alive connection closes after keep_alive_timeout.
  std::chrono::milliseconds header_timeout{10000};
  std::chrono::milliseconds body_timeout{60000};
  std::chrono::milliseconds keep_alive_timeout{90000};
  // After answering a keep-alive request, its worker waits this long for the connection's next
  // request and answers it too when it arrives whole (header block and Content-Length body)
  // within that time, its body admitted by the budget; else, and while other connections wait
  // for a worker, the connection goes back to the reactor with what has arrived. Back-to-back
  // requests then cost no hand-over; a slow client holds a worker at most this long per request
  // it completes. 0: always back to the reactor. No flag: the tests lengthen it.
  std::chrono::milliseconds keep_alive_linger{2};
  // Request bodies buffered at once; a body beyond it waits unread (one is always admitted).
  std::size_t body_budget_bytes = 64 * 1024 * 1024;
  // Free heap goes back to the system once no request has ended for this long
  // (IdleHeapRelease, process_resources.h).
  std::chrono::milliseconds heap_release_idle{5000};
};

}  // namespace gpushare::http
