#include "gpushare/apiclient/watch_framer.h"

#include <fmt/format.h>

namespace gpushare::apiclient {
namespace {

bool is_json_whitespace(char c) {
  return c == ' ' || c == '\n' || c == '\r' || c == '\t';
}

}  // namespace

WatchFramer::WatchFramer(std::size_t max_value_bytes) : max_value_bytes_(max_value_bytes) {}

void WatchFramer::feed(std::string_view chunk, std::vector<std::string>& out) {
  if (failed_) throw FramingError("watch framer used after an error");
  std::size_t segment_start = 0;  // where the current value's bytes in this chunk begin

  auto check_size = [&](std::size_t pending_in_chunk) {
    if (buffer_.size() + pending_in_chunk > max_value_bytes_) {
      failed_ = true;
      throw FramingError(
          fmt::format("watch event larger than the limit of {} bytes", max_value_bytes_));
    }
  };

  std::size_t i = 0;
  while (i < chunk.size()) {
    if (!in_value_) {
      const char c = chunk[i];
      if (is_json_whitespace(c)) {
        ++i;
        continue;
      }
      if (c != '{' && c != '[' && c != '"') {
        failed_ = true;
        throw FramingError(
            fmt::format("unexpected byte 0x{:02x} between watch events (expected a JSON object)",
                        static_cast<unsigned char>(c)));
      }
      in_value_ = true;
      value_end_.reset();
      segment_start = i;
    }
    if (!value_end_.scan(chunk, i)) break;
    const std::size_t length = i - segment_start;
    check_size(length);
    buffer_.append(chunk.substr(segment_start, length));
    out.push_back(std::move(buffer_));
    buffer_.clear();
    in_value_ = false;
  }

  if (in_value_) {
    const std::size_t length = chunk.size() - segment_start;
    check_size(length);
    buffer_.append(chunk.substr(segment_start, length));
  }
}

}  // namespace gpushare::apiclient
