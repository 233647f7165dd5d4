#include "body_reader.h"

#include <httplib.h>

#include <algorithm>
#include <cstdlib>

#include "request_stream.h"

namespace gpushare::http::detail {

std::optional<std::string> BodyReader::operator()(const httplib::Request& req,
                                                  httplib::Response& res,
                                                  const httplib::ContentReader& reader,
                                                  std::size_t spare_capacity) const {
  const std::size_t max_request_bytes = max_request_bytes_;
  ConnectionState* const current = current_connection();
  if (req.is_multipart_form_data()) {
    // httplib would call a multipart receiver we do not give it; no verb takes forms anyway.
    res.status = 415;
    if (current != nullptr) current->close_after_response = true;
    return std::nullopt;
  }
  // Unencoded and buffered whole by the reactor (as kube-scheduler's bodies are): taken as it
  // is, already charged to the budget at its announced size.
  if (!req.has_header("Content-Encoding") && current != nullptr && current->stream != nullptr) {
    if (std::optional<std::string> whole = current->stream->take_buffered_body(max_request_bytes)) {
      if (current->reactor != nullptr) current->reactor->count_body(true);
      if (whole->capacity() < whole->size() + spare_capacity)
        whole->reserve(whole->size() + spare_capacity);
      return whole;
    }
  }
  std::string body;
  if (req.has_header("Content-Length")) {
    // Checked against the limit before the request reached us; one allocation for big filters.
    body.reserve(std::min<std::size_t>(
                     max_request_bytes,
                     std::strtoull(req.get_header_value("Content-Length").c_str(), nullptr, 10)) +
                 spare_capacity);
  }
  bool too_large = false;
  bool over_budget = false;
  // The receiver sees the body decoded (chunked framing removed, gzip/deflate/br inflated).
  const bool complete = reader([&](const char* data, std::size_t size) {
    if (size > max_request_bytes - body.size()) {
      too_large = true;
      return false;
    }
    // Charged before it is stored: a chunked body (no size announced) and a decoded one (larger
    // than announced) count against --max-buffered-body-bytes as they grow.
    if (current != nullptr && current->reactor != nullptr &&
        !current->reactor->charge_body(*current->connection, body.size() + size)) {
      over_budget = true;
      return false;
    }
    body.append(data, size);
    return true;
  });
  if (complete) {
    if (current != nullptr && current->reactor != nullptr) current->reactor->count_body(false);
    return body;
  }
  // The rest of the body is unread (or its framing broken): this connection cannot go on.
  if (current != nullptr) current->close_after_response = true;
  if (over_budget) {
    res.status = 503;
    res.set_header("Retry-After", "1");
  } else if (too_large || (current != nullptr && current->body_over_limit)) {
    res.status = 413;
  } else if (res.status < 400) {
    res.status = 400;  // else what httplib said: 415 for an unknown Content-Encoding
  }
  return std::nullopt;
}

}  // namespace gpushare::http::detail
