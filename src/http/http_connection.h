#pragma once
// The connection layer under the HTTP server (private to src/http): how a connection's
// bytes reach httplib, with the limits httplib 0.11 does not enforce itself. Connections wait for
// their requests in a reactor (connection_reactor.h) and hold a worker thread only while a
// request of theirs is answered.
//
// httplib 0.11.4 (Debian 12), checked in its source: set_payload_max_length applies only to a
// Content-Length body, and even then the whole announced body is read (skip_content_with_length)
// before the 413 goes out; chunked bodies and decompressed (gzip, deflate, br) bodies are not
// limited at all; header lines are capped at 8 KiB each but their number is not, and every line
// is buffered whole before its length is checked. So gpushare serves each connection itself
// (Server::process_and_close_socket, a virtual httplib calls for every accepted socket) and hands
// httplib a stream that enforces:
//
//   * the header block (request line and headers) is at most max_header_bytes: 431 and close;
//   * a Content-Length above max_request_bytes gets 413 at once, without reading the body, and the
//     connection closes;
//   * a chunked body may not bring more than max_request_bytes plus a framing allowance off the
//     wire: httplib's read fails, the reply is 413, the connection closes;
//   * handlers read bodies through read_limited_body, which stops at max_request_bytes of
//     *decoded* body (after Content-Encoding): 413, close; and charges the decoded body to the
//     body budget as it grows (connection_reactor.h): 503, close, when others hold the rest.
//
// The stream also keeps bytes that arrived after one request for the next (pipelining), which
// httplib's per-request socket stream dropped.

#include <openssl/ssl.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "connection_rules.h"
#include "sigpipe_suppressed.h"

namespace httplib {
class Server;
class ContentReader;
struct Request;
struct Response;
}  // namespace httplib

namespace gpushare::http {
class ConnectionThreadPool;
}

namespace gpushare::http::detail {

// An httplib server (TLS when cert_file is not empty) whose connections are served as above,
// their requests answered on `pool`'s threads. The server's listen loop ends by shutting down
// the reactor and then `pool`.
std::unique_ptr<httplib::Server> make_server(const Limits& limits,
                                             std::shared_ptr<ConnectionThreadPool> pool,
                                             const std::string& cert_file,
                                             const std::string& key_file);

struct ConnectionStats {
  std::size_t open = 0;                // accepted, not yet closed
  std::size_t waiting_for_thread = 0;  // a request buffered, every worker busy
  std::size_t limit = 0;               // max_connections
  std::size_t body_bytes = 0;          // request bodies buffered or being answered
  std::uint64_t bodies_in_place = 0;   // handed to handlers as the connection buffered them
  std::uint64_t bodies_read = 0;       // read into a new string (ReactorStats)
};
ConnectionStats connection_stats(const httplib::Server& server);
// After bind: a listen backlog of SOMAXCONN instead of httplib's 5.
void raise_listen_backlog(httplib::Server& server);

// For handlers, on the thread serving the request. Reads the request body through `reader`,
// decoded, up to max_request_bytes, charging it to --max-buffered-body-bytes as it grows. On
// failure sets res.status (413 too large; 503 with Retry-After when the budget is spent by other
// bodies; else what httplib said or 400), asks for the connection to close, and returns nullopt.
// The body has `spare_capacity` bytes to spare when its Content-Length was announced, so a decoder
// that needs room after the text (simdjson's padding) does not copy a 40 MB body again.
std::optional<std::string> read_limited_body(const httplib::Request& req, httplib::Response& res,
                                             const httplib::ContentReader& reader,
                                             std::size_t max_request_bytes,
                                             std::size_t spare_capacity = 0);

// The connection will close after this response (the rest of its body was not read).
void close_after_response();
bool closing_after_response();
// True when the request's body broke the limit while httplib read it (the reply must be 413).
bool body_over_limit();

}  // namespace gpushare::http::detail
