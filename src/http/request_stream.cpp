#include "request_stream.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cstring>
#include <utility>

namespace gpushare::http::detail {

using std::chrono::milliseconds;

namespace {

thread_local ConnectionState* current = nullptr;

void address_of(int fd, bool peer, std::string& ip, int& port) {
  sockaddr_storage address{};
  socklen_t length = sizeof address;
  const int result = peer ? ::getpeername(fd, reinterpret_cast<sockaddr*>(&address), &length)
                          : ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length);
  if (result != 0) return;
  char text[INET6_ADDRSTRLEN] = {};
  if (address.ss_family == AF_INET) {
    const auto* v4 = reinterpret_cast<const sockaddr_in*>(&address);
    ::inet_ntop(AF_INET, &v4->sin_addr, text, sizeof text);
    port = ntohs(v4->sin_port);
  } else if (address.ss_family == AF_INET6) {
    const auto* v6 = reinterpret_cast<const sockaddr_in6*>(&address);
    ::inet_ntop(AF_INET6, &v6->sin6_addr, text, sizeof text);
    port = ntohs(v6->sin6_port);
  }
  ip = text;
}

// One end of the connection's address, looked up once per connection. When the lookup fails,
// the caller's values stand.
void cached_address(std::optional<Address>& cache, int fd, bool peer, std::string& ip, int& port) {
  if (!cache) {
    cache.emplace();
    address_of(fd, peer, cache->ip, cache->port);
  }
  if (cache->ip.empty()) return;
  ip = cache->ip;
  port = cache->port;
}

}  // namespace

ConnectionState* current_connection() {
  return current;
}

CurrentConnection::CurrentConnection(ConnectionState& state) {
  current = &state;
}
CurrentConnection::~CurrentConnection() {
  current = nullptr;
}

RequestStream::RequestStream(Transport& transport, Connection& connection, const Limits& limits,
                             ConnectionState& state, milliseconds read_timeout,
                             milliseconds write_timeout)
    : transport_(transport),
      connection_(connection),
      buffer_(connection.buffer),
      limits_(limits),
      state_(state),
      read_timeout_(read_timeout),
      write_timeout_(write_timeout) {}

RequestStream::~RequestStream() {
  consume();
}

RequestStream::Start RequestStream::begin_request() {
  consume();
  reply_started_ = false;
  header_left_ = 0;
  body_left_ = 0;
  framing_ = Framing::Kind::kNone;
  const auto header = header_block_length(buffer_);
  if (!header)
    return buffer_.size() >= limits_.max_header_bytes ? Start::kHeaderTooLarge : Start::kIncomplete;
  if (*header > limits_.max_header_bytes) return Start::kHeaderTooLarge;
  header_left_ = *header;
  return frame_body();
}

bool RequestStream::finish_request() {
  if (broken_) return false;
  if (framing_ == Framing::Kind::kChunked) return false;
  while (body_left_ > 0) {
    char sink[16 * 1024];
    if (read(sink, std::min(sizeof sink, body_left_)) <= 0) return false;
  }
  consume();
  // A large body leaves a buffer as large behind: give it back before the connection idles.
  if (buffer_.capacity() > 1024 * 1024) buffer_.shrink_to_fit();
  return true;
}

bool RequestStream::flush() {
  while (!held_.empty()) {
    const ssize_t n = transport_.write_some(held_.data(), held_.size(), write_timeout_);
    if (n <= 0) {
      held_.clear();
      broken_ = true;
      return false;
    }
    held_.erase(0, static_cast<std::size_t>(n));
  }
  return true;
}

bool RequestStream::read_next_request(Clock::time_point deadline, std::size_t& length) {
  consume();
  length = 0;
  for (;;) {
    // As the reactor reads: up to a header block's limit, then no further than the body's end.
    std::size_t want = limits_.max_header_bytes + 4;
    if (const auto header = header_block_length(buffer_)) {
      if (*header > limits_.max_header_bytes) return false;
      const Framing framing = parse_framing(std::string_view(buffer_).substr(0, *header));
      if (framing.kind == Framing::Kind::kChunked || framing.expect_continue ||
          framing.length > limits_.max_request_bytes) {
        return false;
      }
      length = static_cast<std::size_t>(framing.length);
      want = *header + length;
      if (buffer_.size() >= want) return true;
      // Once, so that the body is read in place and a handler may take it (kBufferedBodySpare).
      buffer_.reserve(want + kBufferedBodySpare);
    } else if (buffer_.size() >= limits_.max_header_bytes) {
      return false;
    }
    const std::size_t old = buffer_.size();
    const std::size_t chunk =
        header_block_length(buffer_) ? want - old : std::min<std::size_t>(want - old, 16 * 1024);
    buffer_.resize(old + chunk);
    const ssize_t n = transport_.read_some(buffer_.data() + old, chunk, remaining(deadline));
    buffer_.resize(old + static_cast<std::size_t>(std::max<ssize_t>(n, 0)));
    if (n <= 0) return false;  // late, closed or broken: the reactor sees which
  }
}

std::optional<std::string> RequestStream::take_buffered_body(std::size_t max_bytes) {
  if (framing_ != Framing::Kind::kLength || header_left_ > 0 || body_left_ == 0 ||
      body_left_ > max_bytes || buffer_.size() - offset_ != body_left_) {
    return std::nullopt;
  }
  buffer_.erase(0, offset_);
  std::string body = std::exchange(buffer_, std::string());
  offset_ = 0;
  body_left_ = 0;
  return body;
}

bool RequestStream::is_readable() const {
  return offset_ < buffer_.size() || transport_.wait_readable(body_timeout());
}

bool RequestStream::is_writable() const {
  return poll_for(transport_.socket(), POLLOUT, write_timeout_) > 0;
}

ssize_t RequestStream::read(char* data, std::size_t size) {
  if (size == 0) return 0;
  if (header_left_ > 0) return take_buffered(data, std::min(size, header_left_), header_left_);
  if (body_left_ == 0) {
    if (framing_ != Framing::Kind::kChunked)
      return 0;  // this request's body is complete (or absent)
    // A chunked body that keeps coming past the limit (or framing that never ends).
    state_.body_over_limit = true;
    state_.close_after_response = true;
    return -1;
  }
  const std::size_t want = std::min(size, body_left_);
  if (offset_ < buffer_.size()) return take_buffered(data, want, body_left_);
  const ssize_t n = transport_.read_some(data, want, body_timeout());
  if (n <= 0) {
    broken_ = true;
    state_.close_after_response = true;
    return -1;
  }
  body_left_ -= static_cast<std::size_t>(n);
  return n;
}

ssize_t RequestStream::write(const char* data, std::size_t size) {
  const std::string_view text(data, size);
  // "HTTP/1.1 100 Continue" goes out at once: the client waits for it before sending the body.
  const bool informational = text.size() > 9 && text.starts_with("HTTP/") && text[9] == '1';
  if (!reply_started_ && !informational) {
    reply_started_ = true;
    constexpr std::size_t kMaxHeldHeader = 16 * 1024;
    if (size <= kMaxHeldHeader && text.starts_with("HTTP/") && text.ends_with("\r\n\r\n")) {
      held_.assign(text);
      return static_cast<ssize_t>(size);
    }
  }
  if (held_.empty()) return transport_.write_some(data, size, write_timeout_);
  const ssize_t n = transport_.write_some(held_, data, size, write_timeout_);
  if (n < 0) return n;
  const auto written = static_cast<std::size_t>(n);
  if (written < held_.size()) {
    held_.erase(0, written);
    return 0;  // none of `data` yet; httplib writes it again
  }
  const std::size_t of_data = written - held_.size();
  held_.clear();
  return static_cast<ssize_t>(of_data);
}

void RequestStream::get_remote_ip_and_port(std::string& ip, int& port) const {
  cached_address(connection_.remote_address, transport_.socket(), true, ip, port);
}

void RequestStream::get_local_ip_and_port(std::string& ip, int& port) const {
  cached_address(connection_.local_address, transport_.socket(), false, ip, port);
}

socket_t RequestStream::socket() const {
  return transport_.socket();
}

std::string_view RequestStream::request_line() const {
  const std::string_view block =
      std::string_view(buffer_).substr(offset_, limits_.max_header_bytes);
  return block.substr(0, std::min(block.find('\r'), std::size_t{200}));
}

milliseconds RequestStream::body_timeout() const {
  return std::min(read_timeout_, remaining(connection_.body_deadline));
}

void RequestStream::consume() {
  buffer_.erase(0, offset_);
  offset_ = 0;
}

ssize_t RequestStream::take_buffered(char* data, std::size_t size, std::size_t& budget) {
  const std::size_t n = std::min(size, buffer_.size() - offset_);
  std::memcpy(data, buffer_.data() + offset_, n);
  offset_ += n;
  budget -= n;
  return static_cast<ssize_t>(n);
}

RequestStream::Start RequestStream::frame_body() {
  const Framing framing = parse_framing(std::string_view(buffer_).substr(offset_, header_left_));
  framing_ = framing.kind;
  if (framing.kind == Framing::Kind::kChunked) {
    // Where a chunked body ends is httplib's business; not knowing whether it read to the end,
    // the connection carries no further request (the reply says so).
    state_.close_after_response = true;
    // Room for chunk-size lines and the trailer around max_request_bytes of data; the decoded
    // size is held to max_request_bytes exactly by BodyReader.
    body_left_ = limits_.max_request_bytes +
                 std::max<std::size_t>(64 * 1024, limits_.max_request_bytes / 16);
    return Start::kRequest;
  }
  if (framing.kind == Framing::Kind::kLength) {
    if (framing.length > limits_.max_request_bytes) return Start::kBodyTooLarge;
    body_left_ = static_cast<std::size_t>(framing.length);
  }
  return Start::kRequest;
}

}  // namespace gpushare::http::detail
