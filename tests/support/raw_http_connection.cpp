#include "support/raw_http_connection.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <stdexcept>

namespace gpushare::testing {

using Clock = std::chrono::steady_clock;

RawHttpConnection::RawHttpConnection(std::uint16_t port) {
  fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(port);
  ::inet_pton(AF_INET, "127.0.0.1", &address.sin_addr);
  if (::connect(fd_, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
    ::close(fd_);
    throw std::runtime_error("connect to 127.0.0.1:" + std::to_string(port) + " failed");
  }
}

RawHttpConnection::~RawHttpConnection() {
  if (fd_ >= 0) ::close(fd_);
}

void RawHttpConnection::send_request(std::string_view method, std::string_view target,
                                     const std::map<std::string, std::string>& headers,
                                     std::string_view body) {
  std::string request =
      std::string(method) + " " + std::string(target) + " HTTP/1.1\r\nHost: 127.0.0.1\r\n";
  for (const auto& [key, value] : headers) request += key + ": " + value + "\r\n";
  if (!body.empty() || method == "POST" || method == "PUT" || method == "PATCH") {
    request += "Content-Length: " + std::to_string(body.size()) + "\r\n";
  }
  request += "\r\n";
  request += body;
  std::size_t sent = 0;
  while (sent < request.size()) {
    const ssize_t n = ::send(fd_, request.data() + sent, request.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) throw std::runtime_error("send failed");
    sent += static_cast<std::size_t>(n);
  }
}

bool RawHttpConnection::send_raw(std::string_view bytes, std::chrono::milliseconds timeout) {
  std::size_t sent = 0;
  while (sent < bytes.size()) {
    pollfd entry{fd_, POLLOUT, 0};
    if (::poll(&entry, 1, static_cast<int>(timeout.count())) <= 0) return false;
    const ssize_t n =
        ::send(fd_, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) continue;
    if (n <= 0) return false;
    sent += static_cast<std::size_t>(n);
  }
  return true;
}

RawHttpConnection::Fill RawHttpConnection::fill(Clock::time_point deadline) {
  const auto remaining =
      std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
  if (remaining.count() <= 0) return Fill::Timeout;
  pollfd entry{fd_, POLLIN, 0};
  const int ready = ::poll(&entry, 1, static_cast<int>(remaining.count()));
  if (ready == 0) return Fill::Timeout;
  char data[8192];
  const ssize_t n = ::recv(fd_, data, sizeof data, 0);
  if (n == 0) return Fill::Eof;
  if (n < 0) return errno == ECONNRESET ? Fill::Reset : Fill::Eof;
  buffer_.append(data, static_cast<std::size_t>(n));
  return Fill::Data;
}

std::optional<std::string> RawHttpConnection::read_line(Clock::time_point deadline, Fill& why) {
  for (;;) {
    if (const auto end = buffer_.find("\r\n"); end != std::string::npos) {
      std::string line = buffer_.substr(0, end);
      buffer_.erase(0, end + 2);
      return line;
    }
    why = fill(deadline);
    if (why != Fill::Data) return std::nullopt;
  }
}

std::optional<RawHttpConnection::Head> RawHttpConnection::read_head(
    std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  Fill why = Fill::Data;
  const auto status_line = read_line(deadline, why);
  if (!status_line || status_line->size() < 12) return std::nullopt;
  Head head;
  head.status = std::stoi(status_line->substr(9, 3));
  for (;;) {
    const auto line = read_line(deadline, why);
    if (!line) return std::nullopt;
    if (line->empty()) break;
    const auto colon = line->find(':');
    if (colon == std::string::npos) continue;
    std::string key = line->substr(0, colon);
    std::transform(key.begin(), key.end(), key.begin(),
                   [](unsigned char c) { return std::tolower(c); });
    std::string value = line->substr(colon + 1);
    value.erase(0, value.find_first_not_of(' '));
    head.headers[key] = value;
  }
  return head;
}

RawHttpConnection::ChunkStatus RawHttpConnection::read_chunk(std::string& data,
                                                             std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  Fill why = Fill::Data;
  auto failed = [&] { return why == Fill::Timeout ? ChunkStatus::Timeout : ChunkStatus::Abrupt; };
  const auto size_line = read_line(deadline, why);
  if (!size_line) return failed();
  const std::size_t size = std::stoul(*size_line, nullptr, 16);
  if (size == 0) {
    const auto trailer_end = read_line(deadline, why);
    return trailer_end ? ChunkStatus::CleanEnd : failed();
  }
  while (buffer_.size() < size + 2) {
    why = fill(deadline);
    if (why != Fill::Data) return failed();
  }
  data = buffer_.substr(0, size);
  buffer_.erase(0, size + 2);
  return ChunkStatus::Chunk;
}

std::optional<std::string> RawHttpConnection::read_body(const Head& head,
                                                        std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  if (auto it = head.headers.find("content-length"); it != head.headers.end()) {
    const std::size_t length = std::stoul(it->second);
    while (buffer_.size() < length) {
      if (fill(deadline) != Fill::Data) return std::nullopt;
    }
    std::string body = buffer_.substr(0, length);
    buffer_.erase(0, length);
    return body;
  }
  std::string body;
  for (;;) {
    std::string chunk;
    const auto status = read_chunk(
        chunk, std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()));
    if (status == ChunkStatus::CleanEnd) return body;
    if (status != ChunkStatus::Chunk) return std::nullopt;
    body += chunk;
  }
}

void RawHttpConnection::reset() {
  if (fd_ < 0) return;
  const linger abort{1, 0};  // close at once, with RST
  ::setsockopt(fd_, SOL_SOCKET, SO_LINGER, &abort, sizeof abort);
  ::close(fd_);
  fd_ = -1;
}

bool RawHttpConnection::closed_by_peer(std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  for (;;) {
    const Fill why = fill(deadline);
    if (why == Fill::Eof || why == Fill::Reset) return true;
    if (why == Fill::Timeout) return false;
  }
}

}  // namespace gpushare::testing
