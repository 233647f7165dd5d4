#include "http_connection.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <httplib.h>
#include <netinet/in.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <poll.h>
#include <signal.h>
#include <spdlog/spdlog.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <functional>
#include <string_view>
#include <type_traits>

#include "gpushare/extender/wire_types.h"

namespace gpushare::extender::http_connection {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

// What the handlers of the request being served may learn or ask about its connection.
struct ConnectionState {
  bool close_after_response = false;
  bool body_over_limit = false;
};
thread_local ConnectionState* current_connection = nullptr;

class CurrentConnection {
 public:
  explicit CurrentConnection(ConnectionState& state) { current_connection = &state; }
  ~CurrentConnection() { current_connection = nullptr; }
  CurrentConnection(const CurrentConnection&) = delete;
  CurrentConnection& operator=(const CurrentConnection&) = delete;
};

int poll_for(int fd, short events, milliseconds timeout) {
  pollfd entry{fd, events, 0};
  for (;;) {
    const int ready =
        ::poll(&entry, 1, static_cast<int>(std::max<milliseconds::rep>(0, timeout.count())));
    if (ready >= 0 || errno != EINTR) return ready;
  }
}

milliseconds to_milliseconds(time_t seconds, time_t microseconds) {
  return milliseconds(seconds * 1000 + microseconds / 1000);
}

// The bytes of one connection, plain or TLS.
class Transport {
 public:
  virtual ~Transport() = default;
  // Waits up to `timeout` for data. >0: bytes read; 0: the peer closed; -1: error or time-out.
  virtual ssize_t read_some(char* data, std::size_t size, milliseconds timeout) = 0;
  // Bytes written (possibly fewer than size), or -1.
  virtual ssize_t write_some(const char* data, std::size_t size, milliseconds timeout) = 0;
  // Data can be read without waiting, or arrives within `timeout`.
  virtual bool wait_readable(milliseconds timeout) = 0;
  // Ends our side (TLS close_notify, then FIN); reads still work.
  virtual void shutdown_write() = 0;
  virtual int socket() const = 0;
};

class PlainTransport final : public Transport {
 public:
  explicit PlainTransport(int fd) : fd_(fd) {}
  ssize_t read_some(char* data, std::size_t size, milliseconds timeout) override {
    if (poll_for(fd_, POLLIN, timeout) <= 0) return -1;
    for (;;) {
      const ssize_t n = ::recv(fd_, data, size, 0);
      if (n >= 0 || errno != EINTR) return n < 0 ? -1 : n;
    }
  }
  ssize_t write_some(const char* data, std::size_t size, milliseconds timeout) override {
    if (poll_for(fd_, POLLOUT, timeout) <= 0) return -1;
    for (;;) {
      const ssize_t n = ::send(fd_, data, size, MSG_NOSIGNAL);
      if (n >= 0 || errno != EINTR) return n < 0 ? -1 : n;
    }
  }
  bool wait_readable(milliseconds timeout) override { return poll_for(fd_, POLLIN, timeout) > 0; }
  void shutdown_write() override { ::shutdown(fd_, SHUT_WR); }
  int socket() const override { return fd_; }

 private:
  int fd_;
};

struct SslFree {
  void operator()(SSL* ssl) const { SSL_free(ssl); }
};
using SslHandle = std::unique_ptr<SSL, SslFree>;

// OpenSSL writes to the socket itself, without MSG_NOSIGNAL: a peer that reset the connection
// would raise SIGPIPE and end the process. Blocks it around a write and swallows one raised.
class SigpipeSuppressed {
 public:
  SigpipeSuppressed() {
    sigset_t pipe;
    sigemptyset(&pipe);
    sigaddset(&pipe, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe, &previous_);
  }
  ~SigpipeSuppressed() {
    sigset_t pipe;
    sigemptyset(&pipe);
    sigaddset(&pipe, SIGPIPE);
    const timespec no_wait{0, 0};
    while (sigtimedwait(&pipe, nullptr, &no_wait) > 0) {
    }
    pthread_sigmask(SIG_SETMASK, &previous_, nullptr);
  }
  SigpipeSuppressed(const SigpipeSuppressed&) = delete;
  SigpipeSuppressed& operator=(const SigpipeSuppressed&) = delete;

 private:
  sigset_t previous_{};
};

class TlsTransport final : public Transport {
 public:
  TlsTransport(int fd, SSL* ssl) : fd_(fd), ssl_(ssl) {}
  ssize_t read_some(char* data, std::size_t size, milliseconds timeout) override {
    const auto deadline = Clock::now() + timeout;
    const int chunk = static_cast<int>(std::min<std::size_t>(size, 1 << 30));
    for (;;) {
      if (SSL_pending(ssl_) <= 0 && poll_for(fd_, POLLIN, remaining(deadline)) <= 0) return -1;
      const int n = SSL_read(ssl_, data, chunk);
      if (n > 0) return n;
      const int error = SSL_get_error(ssl_, n);
      if (error == SSL_ERROR_ZERO_RETURN) return 0;
      // Handshake messages or a partial record: wait for more.
      if (error != SSL_ERROR_WANT_READ || Clock::now() >= deadline) return -1;
    }
  }
  ssize_t write_some(const char* data, std::size_t size, milliseconds timeout) override {
    if (poll_for(fd_, POLLOUT, timeout) <= 0) return -1;
    SigpipeSuppressed no_sigpipe;
    const int n = SSL_write(ssl_, data, static_cast<int>(std::min<std::size_t>(size, 1 << 30)));
    return n > 0 ? n : -1;
  }
  bool wait_readable(milliseconds timeout) override {
    return SSL_pending(ssl_) > 0 || poll_for(fd_, POLLIN, timeout) > 0;
  }
  void shutdown_write() override {
    if (shut_down_) return;
    shut_down_ = true;
    {
      SigpipeSuppressed no_sigpipe;
      SSL_shutdown(ssl_);
    }
    ::shutdown(fd_, SHUT_WR);
  }
  int socket() const override { return fd_; }

 private:
  static milliseconds remaining(Clock::time_point deadline) {
    return std::max(milliseconds(0),
                    std::chrono::duration_cast<milliseconds>(deadline - Clock::now()));
  }
  int fd_;
  SSL* ssl_;
  bool shut_down_ = false;
};

// TLS handshake within `timeout` (non-blocking, like httplib), then back to a blocking socket.
SslHandle accept_tls(int fd, SSL_CTX* context, milliseconds timeout) {
  SslHandle ssl(SSL_new(context));
  if (!ssl || SSL_set_fd(ssl.get(), fd) != 1) return nullptr;
  const int flags = ::fcntl(fd, F_GETFL);
  ::fcntl(fd, F_SETFL, flags | O_NONBLOCK);
  const auto deadline = Clock::now() + timeout;
  bool accepted = false;
  for (;;) {
    const int result = SSL_accept(ssl.get());
    if (result == 1) {
      accepted = true;
      break;
    }
    const int error = SSL_get_error(ssl.get(), result);
    const auto left = std::chrono::duration_cast<milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) break;
    if (error == SSL_ERROR_WANT_READ && poll_for(fd, POLLIN, left) > 0) continue;
    if (error == SSL_ERROR_WANT_WRITE && poll_for(fd, POLLOUT, left) > 0) continue;
    break;
  }
  ::fcntl(fd, F_SETFL, flags);
  ERR_clear_error();  // a failed handshake leaves errors on this thread's queue
  return accepted ? std::move(ssl) : nullptr;
}

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

bool iequals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

std::string_view trim(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t' || text.back() == '\r'))
    text.remove_suffix(1);
  return text;
}

// The stream httplib reads one connection's requests from. Between requests it holds bytes that
// already arrived (the next pipelined request); during a request it hands httplib the header
// block, then at most what the request's framing allows of its body.
class RequestStream final : public httplib::Stream {
 public:
  enum class Start { kRequest, kClosed, kHeaderTooLarge, kBodyTooLarge };

  RequestStream(Transport& transport, const Limits& limits, ConnectionState& state,
                milliseconds read_timeout, milliseconds write_timeout)
      : transport_(transport),
        limits_(limits),
        state_(state),
        read_timeout_(read_timeout),
        write_timeout_(write_timeout) {}

  // Waits up to `keep_alive` for the next request and reads its header block.
  Start begin_request(milliseconds keep_alive) {
    buffer_.erase(0, offset_);
    offset_ = 0;
    header_left_ = 0;
    body_left_ = 0;
    framing_ = Framing::kNone;
    std::size_t searched = 0;
    for (bool first = true;; first = false) {
      // The header block ends at the first line that is just CRLF (httplib's read_headers).
      if (const auto end = buffer_.find("\n\r\n", searched > 2 ? searched - 2 : 0);
          end != std::string::npos && end + 3 <= limits_.max_header_bytes) {
        header_left_ = end + 3;
        break;
      }
      searched = buffer_.size();
      if (buffer_.size() >= limits_.max_header_bytes) return Start::kHeaderTooLarge;
      char chunk[16 * 1024];
      const std::size_t want =
          std::min(sizeof chunk, limits_.max_header_bytes + 4 - buffer_.size());
      const ssize_t n =
          transport_.read_some(chunk, want, first && buffer_.empty() ? keep_alive : read_timeout_);
      if (n <= 0) return Start::kClosed;  // closed, broken or silent: nothing to answer
      buffer_.append(chunk, static_cast<std::size_t>(n));
    }
    return frame_body();
  }

  // After httplib answered: skips what is left of a Content-Length body it did not read. False
  // when the connection must close (a chunked body's end is not known here; a failed read).
  bool finish_request() {
    if (broken_) return false;
    if (framing_ == Framing::kChunked) return false;
    while (body_left_ > 0) {
      char sink[16 * 1024];
      if (read(sink, std::min(sizeof sink, body_left_)) <= 0) return false;
    }
    return true;
  }

  bool is_readable() const override {
    return offset_ < buffer_.size() || transport_.wait_readable(read_timeout_);
  }
  bool is_writable() const override {
    return poll_for(transport_.socket(), POLLOUT, write_timeout_) > 0;
  }

  ssize_t read(char* data, std::size_t size) override {
    if (size == 0) return 0;
    if (header_left_ > 0) return take_buffered(data, std::min(size, header_left_), header_left_);
    if (body_left_ == 0) {
      if (framing_ != Framing::kChunked) return 0;  // this request's body is complete (or absent)
      // A chunked body that keeps coming past the limit (or framing that never ends).
      state_.body_over_limit = true;
      state_.close_after_response = true;
      return -1;
    }
    const std::size_t want = std::min(size, body_left_);
    if (offset_ < buffer_.size()) return take_buffered(data, want, body_left_);
    const ssize_t n = transport_.read_some(data, want, read_timeout_);
    if (n <= 0) {
      broken_ = true;
      state_.close_after_response = true;
      return -1;
    }
    body_left_ -= static_cast<std::size_t>(n);
    return n;
  }

  ssize_t write(const char* data, std::size_t size) override {
    return transport_.write_some(data, size, write_timeout_);
  }
  void get_remote_ip_and_port(std::string& ip, int& port) const override {
    address_of(transport_.socket(), true, ip, port);
  }
  void get_local_ip_and_port(std::string& ip, int& port) const override {
    address_of(transport_.socket(), false, ip, port);
  }
  socket_t socket() const override { return transport_.socket(); }

  // The header block of the request being served (for refusals' log lines).
  std::string_view request_line() const {
    const std::string_view block(buffer_.data(),
                                 std::min(buffer_.size(), limits_.max_header_bytes));
    return block.substr(0, std::min(block.find('\r'), std::size_t{200}));
  }

 private:
  enum class Framing { kNone, kLength, kChunked };

  ssize_t take_buffered(char* data, std::size_t size, std::size_t& budget) {
    const std::size_t n = std::min(size, buffer_.size() - offset_);
    std::memcpy(data, buffer_.data() + offset_, n);
    offset_ += n;
    budget -= n;
    return static_cast<ssize_t>(n);
  }

  // Reads the framing headers the way httplib will (first Transfer-Encoding "chunked" wins over
  // Content-Length; no length means no body) and sets the body's budget.
  Start frame_body() {
    std::string_view block(buffer_.data(), header_left_);
    block.remove_prefix(std::min(block.find('\n') + 1, block.size()));  // the request line
    std::optional<std::string_view> content_length;
    std::optional<std::string_view> transfer_encoding;
    while (!block.empty()) {
      const std::size_t eol = block.find('\n');
      std::string_view line = block.substr(0, eol);
      block.remove_prefix(eol == std::string_view::npos ? block.size() : eol + 1);
      const std::size_t colon = line.find(':');
      if (colon == std::string_view::npos) continue;
      const std::string_view name = trim(line.substr(0, colon));
      const std::string_view value = trim(line.substr(colon + 1));
      if (iequals(name, "Content-Length") && !content_length) content_length = value;
      if (iequals(name, "Transfer-Encoding") && !transfer_encoding) transfer_encoding = value;
    }
    if (transfer_encoding && iequals(*transfer_encoding, "chunked")) {
      framing_ = Framing::kChunked;
      // Where a chunked body ends is httplib's business; not knowing whether it read to the end,
      // the connection carries no further request (the reply says so).
      state_.close_after_response = true;
      // Room for chunk-size lines and the trailer around max_body_bytes of data; the decoded
      // size is held to max_body_bytes exactly by read_limited_body.
      body_left_ =
          limits_.max_body_bytes + std::max<std::size_t>(64 * 1024, limits_.max_body_bytes / 16);
      return Start::kRequest;
    }
    if (content_length) {
      // As httplib reads it (strtoull): "-1" wraps to a huge value and is refused like one.
      const std::string text(*content_length);
      const unsigned long long length = std::strtoull(text.c_str(), nullptr, 10);
      if (length > limits_.max_body_bytes) return Start::kBodyTooLarge;
      framing_ = Framing::kLength;
      body_left_ = static_cast<std::size_t>(length);
    }
    return Start::kRequest;
  }

  Transport& transport_;
  const Limits& limits_;
  ConnectionState& state_;
  milliseconds read_timeout_;
  milliseconds write_timeout_;
  std::string buffer_;  // received, from offset_ on not yet handed to httplib
  std::size_t offset_ = 0;
  std::size_t header_left_ = 0;  // header-block bytes httplib has yet to read
  std::size_t body_left_ = 0;    // body bytes httplib may still read for this request
  Framing framing_ = Framing::kNone;
  bool broken_ = false;
};

// Answers a refused request ourselves (httplib never sees it) and closes politely: our FIN goes
// out after the reply, then what the client is still sending is read and dropped for a moment,
// so that closing with unread data (a TCP reset) does not destroy the reply before it is read.
void refuse(Transport& transport, int status, std::string_view reason, std::string_view message) {
  const std::string body = encode_error(message);
  const std::string reply = fmt::format(
      "HTTP/1.1 {} {}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: "
      "close\r\n\r\n{}",
      status, reason, body.size(), body);
  std::size_t sent = 0;
  while (sent < reply.size()) {
    const ssize_t n =
        transport.write_some(reply.data() + sent, reply.size() - sent, milliseconds(5000));
    if (n <= 0) return;
    sent += static_cast<std::size_t>(n);
  }
}

void linger(Transport& transport) {
  transport.shutdown_write();
  // At most a second and 4 MiB: enough for a client that stops sending when it sees the reply.
  constexpr std::size_t kMaxDrainBytes = 4 * 1024 * 1024;
  const auto deadline = Clock::now() + milliseconds(1000);
  std::size_t drained = 0;
  char sink[16 * 1024];
  while (drained < kMaxDrainBytes) {
    const auto left = std::chrono::duration_cast<milliseconds>(deadline - Clock::now());
    if (left.count() <= 0 || poll_for(transport.socket(), POLLIN, left) <= 0) return;
    const ssize_t n = ::recv(transport.socket(), sink, sizeof sink, 0);
    if (n <= 0) return;
    drained += static_cast<std::size_t>(n);
  }
}

// httplib's Server (or SSLServer) with its per-connection loop replaced by ours.
template <typename Base>
class LimitedServer final : public Base {
 public:
  template <typename... Args>
  explicit LimitedServer(Limits limits, Args&&... args)
      : Base(std::forward<Args>(args)...), limits_(limits) {}

 private:
  bool process_and_close_socket(socket_t sock) override {
    bool served = false;
    if constexpr (std::is_base_of_v<httplib::SSLServer, Base>) {
      if (SslHandle ssl = accept_tls(sock, this->ssl_context(), read_timeout())) {
        TlsTransport transport(sock, ssl.get());
        served = serve(transport, [ssl = ssl.get()](httplib::Request& req) { req.ssl = ssl; });
        if (served) transport.shutdown_write();  // close_notify, as httplib does after success
      }
    } else {
      PlainTransport transport(sock);
      served = serve(transport, nullptr);
    }
    ::shutdown(sock, SHUT_RDWR);
    ::close(sock);
    return served;
  }

  // httplib's keep-alive loop (process_server_socket_core), on one RequestStream for the whole
  // connection, with the refusals above.
  bool serve(Transport& transport, const std::function<void(httplib::Request&)>& setup) {
    ConnectionState state;
    CurrentConnection current(state);
    RequestStream stream(transport, limits_, state, read_timeout(),
                         to_milliseconds(this->write_timeout_sec_, this->write_timeout_usec_));
    const milliseconds keep_alive(this->keep_alive_timeout_sec_ * 1000);
    bool served = false;
    for (std::size_t left = this->keep_alive_max_count_;
         left > 0 && this->svr_sock_ != INVALID_SOCKET; --left) {
      state = ConnectionState{};
      const auto start = stream.begin_request(keep_alive);
      if (start == RequestStream::Start::kClosed) break;
      if (start != RequestStream::Start::kRequest) {
        const bool headers = start == RequestStream::Start::kHeaderTooLarge;
        std::string remote;
        int port = 0;
        stream.get_remote_ip_and_port(remote, port);
        spdlog::warn("refused a request from {}: {} (\"{}\")", remote,
                     headers ? fmt::format("header block over {} bytes", limits_.max_header_bytes)
                             : fmt::format("Content-Length over {} bytes", limits_.max_body_bytes),
                     stream.request_line());
        if (headers) {
          refuse(transport, 431, "Request Header Fields Too Large",
                 fmt::format("request header block too large: larger than {} bytes",
                             limits_.max_header_bytes));
        } else {
          refuse(transport, 413, "Payload Too Large",
                 fmt::format("request body too large: larger than {} bytes (--max-request-bytes)",
                             limits_.max_body_bytes));
        }
        linger(transport);
        return true;
      }
      bool connection_closed = false;
      served = this->process_request(stream, left == 1, connection_closed, setup);
      if (state.close_after_response) {
        if (served) linger(transport);
        break;
      }
      if (!served || connection_closed || !stream.finish_request()) break;
    }
    return served;
  }

  milliseconds read_timeout() const {
    return to_milliseconds(this->read_timeout_sec_, this->read_timeout_usec_);
  }

  Limits limits_;
};

}  // namespace

std::unique_ptr<httplib::Server> make_server(const Limits& limits, const std::string& cert_file,
                                             const std::string& key_file) {
  if (!cert_file.empty()) {
    return std::make_unique<LimitedServer<httplib::SSLServer>>(limits, cert_file.c_str(),
                                                               key_file.c_str());
  }
  return std::make_unique<LimitedServer<httplib::Server>>(limits);
}

void close_after_response() {
  if (current_connection != nullptr) current_connection->close_after_response = true;
}

bool closing_after_response() {
  return current_connection != nullptr && current_connection->close_after_response;
}

bool body_over_limit() {
  return current_connection != nullptr && current_connection->body_over_limit;
}

std::optional<std::string> read_limited_body(const httplib::Request& req, httplib::Response& res,
                                             const httplib::ContentReader& reader,
                                             std::size_t max_body_bytes) {
  if (req.is_multipart_form_data()) {
    // httplib would call a multipart receiver we do not give it; no verb takes forms anyway.
    res.status = 415;
    close_after_response();
    return std::nullopt;
  }
  std::string body;
  if (req.has_header("Content-Length")) {
    // Checked against the limit before the request reached us; one allocation for big filters.
    body.reserve(std::min<std::size_t>(
        max_body_bytes,
        std::strtoull(req.get_header_value("Content-Length").c_str(), nullptr, 10)));
  }
  bool too_large = false;
  // The receiver sees the body decoded (chunked framing removed, gzip/deflate/br inflated).
  const bool complete = reader([&](const char* data, std::size_t size) {
    if (size > max_body_bytes - body.size()) {
      too_large = true;
      return false;
    }
    body.append(data, size);
    return true;
  });
  if (complete) return body;
  // The rest of the body is unread (or its framing broken): this connection cannot go on.
  close_after_response();
  if (too_large || body_over_limit()) {
    res.status = 413;
  } else if (res.status < 400) {
    res.status = 400;  // else what httplib said: 415 for an unknown Content-Encoding
  }
  return std::nullopt;
}

}  // namespace gpushare::extender::http_connection
