#pragma once
// How a route reads its request's body (private to src/http): handed to the routes by the
// server, so they never reach into the connection layer under them.

#include <cstddef>
#include <optional>
#include <string>

namespace httplib {
class ContentReader;
struct Request;
struct Response;
}  // namespace httplib

namespace gpushare::http::detail {

// Reads request bodies up to max_request_bytes of *decoded* body (after Content-Encoding),
// charging each to --max-buffered-body-bytes as it grows. Called on the thread serving the
// request; a value, cheap to copy, safe to share between threads.
class BodyReader {
 public:
  explicit BodyReader(std::size_t max_request_bytes) : max_request_bytes_(max_request_bytes) {}

  // The body, read through `reader`. On failure sets res.status (413 too large; 503 with
  // Retry-After when the budget is spent by other bodies; 415 for a multipart form; else what
  // httplib said or 400), asks for the connection to close, and returns nullopt. The body has
  // `spare_capacity` bytes to spare when it came whole or its Content-Length was announced, so a
  // decoder that needs room after the text (simdjson's padding) does not copy it again.
  std::optional<std::string> operator()(const httplib::Request& req, httplib::Response& res,
                                        const httplib::ContentReader& reader,
                                        std::size_t spare_capacity = 0) const;

  std::size_t max_request_bytes() const { return max_request_bytes_; }

 private:
  std::size_t max_request_bytes_;
};

}  // namespace gpushare::http::detail
