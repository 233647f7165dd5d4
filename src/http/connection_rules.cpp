#include "connection_rules.h"

#include <fmt/format.h>

namespace gpushare::http::detail {

std::string refusal_reply(const Limits& limits, int status, std::string_view reason,
                          std::string_view message, std::string_view more_headers) {
  const std::string body = limits.error_body ? limits.error_body(message) : std::string(message);
  return fmt::format(
      "HTTP/1.1 {} {}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n{}Connection: "
      "close\r\n\r\n{}",
      status, reason, body.size(), more_headers, body);
}

}  // namespace gpushare::http::detail
