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
#include <utility>

#include "connection_reactor.h"
#include "gpushare/http/connection_thread_pool.h"
#include "gpushare/http/process_resources.h"
#include "gpushare/wire/wire_types.h"

namespace gpushare::http::detail {
namespace {

using std::chrono::milliseconds;

static_assert(kBufferedBodySpare >= wire::kRequestBodyPadding);

class RequestStream;

// What the handlers of the request being served may learn or ask about its connection.
struct ConnectionState {
  bool close_after_response = false;
  bool body_over_limit = false;
  // Where the request's body is charged as it is decoded (read_limited_body).
  Reactor* reactor = nullptr;
  Connection* connection = nullptr;
  RequestStream* stream = nullptr;  // the request's bytes, for read_limited_body
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

milliseconds remaining(Clock::time_point deadline) {
  return std::max(milliseconds(0),
                  std::chrono::duration_cast<milliseconds>(deadline - Clock::now()));
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
  // The socket is non-blocking (the reactor's): try first, and wait only for what would block
  // (a poll before every call was two more system calls per request).
  ssize_t read_some(char* data, std::size_t size, milliseconds timeout) override {
    return retry(POLLIN, timeout, [&] { return ::recv(fd_, data, size, 0); });
  }
  ssize_t write_some(const char* data, std::size_t size, milliseconds timeout) override {
    return retry(POLLOUT, timeout, [&] { return ::send(fd_, data, size, MSG_NOSIGNAL); });
  }
  bool wait_readable(milliseconds timeout) override { return poll_for(fd_, POLLIN, timeout) > 0; }
  void shutdown_write() override { ::shutdown(fd_, SHUT_WR); }
  int socket() const override { return fd_; }

 private:
  template <typename Call>
  ssize_t retry(short events, milliseconds timeout, const Call& call) {
    const auto deadline = Clock::now() + timeout;
    for (;;) {
      const ssize_t n = call();
      if (n >= 0) return n;
      if (errno == EINTR) continue;
      if (errno != EAGAIN && errno != EWOULDBLOCK) return -1;
      if (poll_for(fd_, events, remaining(deadline)) <= 0) return -1;
    }
  }

  int fd_;
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
  // Partial writes are enabled (the reactor's SSL mode); a write that would block is retried.
  ssize_t write_some(const char* data, std::size_t size, milliseconds timeout) override {
    const auto deadline = Clock::now() + timeout;
    const int chunk = static_cast<int>(std::min<std::size_t>(size, 1 << 30));
    for (;;) {
      int n = 0;
      {
        SigpipeSuppressed no_sigpipe;
        n = SSL_write(ssl_, data, chunk);
      }
      if (n > 0) return n;
      const int error = SSL_get_error(ssl_, n);
      const short wanted = error == SSL_ERROR_WANT_WRITE  ? POLLOUT
                           : error == SSL_ERROR_WANT_READ ? POLLIN
                                                          : 0;
      if (wanted == 0 || poll_for(fd_, wanted, remaining(deadline)) <= 0) return -1;
    }
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
  int fd_;
  SSL* ssl_;
  bool shut_down_ = false;
};

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

// One end of the connection's address, looked up once per connection.
void cached_address(std::optional<Address>& cache, int fd, bool peer, std::string& ip, int& port) {
  if (!cache) {
    cache.emplace();
    address_of(fd, peer, cache->ip, cache->port);
  }
  if (cache->ip.empty()) return;  // the lookup failed: the caller's values stand, as before
  ip = cache->ip;
  port = cache->port;
}

// The stream httplib reads one request at a time from. The reactor hands a connection over with
// a whole request in its buffer (the body too, when a Content-Length announced it); further
// requests that arrived with it (pipelining) are served from the buffer as well. Only a chunked
// body is read from the socket here, within the body deadline.
class RequestStream final : public httplib::Stream {
 public:
  enum class Start { kRequest, kIncomplete, kHeaderTooLarge, kBodyTooLarge };

  RequestStream(Transport& transport, Connection& connection, const Limits& limits,
                ConnectionState& state, milliseconds read_timeout, milliseconds write_timeout)
      : transport_(transport),
        connection_(connection),
        buffer_(connection.buffer),
        limits_(limits),
        state_(state),
        read_timeout_(read_timeout),
        write_timeout_(write_timeout) {}
  ~RequestStream() override { consume(); }

  // The next request's header block, if the buffer holds all of it.
  Start begin_request() {
    consume();
    header_left_ = 0;
    body_left_ = 0;
    framing_ = Framing::Kind::kNone;
    const auto header = header_block_length(buffer_);
    if (!header)
      return buffer_.size() >= limits_.max_header_bytes ? Start::kHeaderTooLarge
                                                        : Start::kIncomplete;
    if (*header > limits_.max_header_bytes) return Start::kHeaderTooLarge;
    header_left_ = *header;
    return frame_body();
  }

  // After httplib answered: skips what is left of a Content-Length body it did not read. False
  // when the connection must close (a chunked body's end is not known here; a failed read).
  bool finish_request() {
    if (broken_) return false;
    if (framing_ == Framing::Kind::kChunked) return false;
    while (body_left_ > 0) {
      char sink[16 * 1024];
      if (read(sink, std::min(sizeof sink, body_left_)) <= 0) return false;
    }
    consume();
    // A 40 MB body leaves a 40 MB buffer behind: give it back before the connection idles.
    if (buffer_.capacity() > 1024 * 1024) buffer_.shrink_to_fit();
    return true;
  }

  // The body of the request being served, when the reactor buffered all of it (Content-Length)
  // and nothing follows it: the buffer becomes the body, its header block dropped, so a 40 MB
  // body is not held twice (buffer and copy) while it is answered. nullopt otherwise (chunked,
  // read from the socket after "100 Continue", pipelined requests behind it).
  std::optional<std::string> take_buffered_body(std::size_t max_bytes) {
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

  bool is_readable() const override {
    return offset_ < buffer_.size() || transport_.wait_readable(body_timeout());
  }
  bool is_writable() const override {
    return poll_for(transport_.socket(), POLLOUT, write_timeout_) > 0;
  }

  ssize_t read(char* data, std::size_t size) override {
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

  ssize_t write(const char* data, std::size_t size) override {
    return transport_.write_some(data, size, write_timeout_);
  }
  // httplib asks for both on every request: looked up once per connection, not with two
  // system calls per request.
  void get_remote_ip_and_port(std::string& ip, int& port) const override {
    cached_address(connection_.remote_address, transport_.socket(), true, ip, port);
  }
  void get_local_ip_and_port(std::string& ip, int& port) const override {
    cached_address(connection_.local_address, transport_.socket(), false, ip, port);
  }
  socket_t socket() const override { return transport_.socket(); }

  // The header block of the request being served (for refusals' log lines).
  std::string_view request_line() const {
    const std::string_view block =
        std::string_view(buffer_).substr(offset_, limits_.max_header_bytes);
    return block.substr(0, std::min(block.find('\r'), std::size_t{200}));
  }

 private:
  // What is left of the body's time, within the read time-out.
  milliseconds body_timeout() const {
    return std::min(read_timeout_, remaining(connection_.body_deadline));
  }

  // Drops what httplib has read from the buffer.
  void consume() {
    buffer_.erase(0, offset_);
    offset_ = 0;
  }

  ssize_t take_buffered(char* data, std::size_t size, std::size_t& budget) {
    const std::size_t n = std::min(size, buffer_.size() - offset_);
    std::memcpy(data, buffer_.data() + offset_, n);
    offset_ += n;
    budget -= n;
    return static_cast<ssize_t>(n);
  }

  // Sets the body's budget from its framing, as httplib will read it.
  Start frame_body() {
    const Framing framing = parse_framing(std::string_view(buffer_).substr(offset_, header_left_));
    framing_ = framing.kind;
    if (framing.kind == Framing::Kind::kChunked) {
      // Where a chunked body ends is httplib's business; not knowing whether it read to the end,
      // the connection carries no further request (the reply says so).
      state_.close_after_response = true;
      // Room for chunk-size lines and the trailer around max_request_bytes of data; the decoded
      // size is held to max_request_bytes exactly by read_limited_body.
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

  Transport& transport_;
  Connection& connection_;
  std::string& buffer_;  // the connection's: received, from offset_ on not yet handed to httplib
  const Limits& limits_;
  ConnectionState& state_;
  milliseconds read_timeout_;
  milliseconds write_timeout_;
  std::size_t offset_ = 0;
  std::size_t header_left_ = 0;  // header-block bytes httplib has yet to read
  std::size_t body_left_ = 0;    // body bytes httplib may still read for this request
  Framing::Kind framing_ = Framing::Kind::kNone;
  bool broken_ = false;
};

// Answers a refused request ourselves (httplib never sees it) and closes politely: our FIN goes
// out after the reply, then what the client is still sending is read and dropped for a moment,
// so that closing with unread data (a TCP reset) does not destroy the reply before it is read.
void refuse(Transport& transport, int status, std::string_view reason, std::string_view message) {
  const std::string body = wire::encode_error(message);
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

constexpr std::size_t kLargeBody = 1024 * 1024;

// What every LimitedServer has, whatever its httplib base.
class ReactorOwner {
 public:
  virtual ~ReactorOwner() = default;
  virtual ConnectionStats connection_stats() const = 0;
  virtual void raise_listen_backlog() = 0;
};

// httplib's Server (or SSLServer) with its per-connection loop replaced by ours: httplib's
// accept thread hands each socket to the reactor (its task queue runs that hand-over inline), and
// a worker of `pool` serves a connection once the reactor has a request of it buffered.
template <typename Base>
class LimitedServer final : public Base, public ReactorOwner {
 public:
  template <typename... Args>
  explicit LimitedServer(Limits limits, std::shared_ptr<ConnectionThreadPool> pool, Args&&... args)
      : Base(std::forward<Args>(args)...), limits_(limits), pool_(std::move(pool)) {
    SSL_CTX* tls = nullptr;
    if constexpr (std::is_base_of_v<httplib::SSLServer, Base>) tls = this->ssl_context();
    reactor_ =
        std::make_unique<Reactor>(limits_, tls, [this](std::shared_ptr<Connection> connection) {
          pool_->enqueue([this, connection] { serve(connection); });
        });
    this->new_task_queue = [this] { return new InlineQueue(*this); };
  }
  ~LimitedServer() override { reactor_.reset(); }

  ConnectionStats connection_stats() const override {
    const ReactorStats reactor = reactor_->stats();
    const ConnectionPoolStats pool = pool_->stats();
    return {reactor.open,
            pool.waiting,
            limits_.max_connections,
            reactor.body_bytes,
            reactor.bodies_in_place,
            reactor.bodies_read};
  }

  // httplib 0.11 listens with a backlog of 5 (CPPHTTPLIB_LISTEN_BACKLOG, compiled into the
  // library): 64 clients connecting at once overflowed it. listen() again on the bound socket
  // only changes the backlog.
  void raise_listen_backlog() override {
    const socket_t sock = this->svr_sock_;
    if (sock != INVALID_SOCKET) ::listen(sock, SOMAXCONN);
  }

 private:
  // httplib's accept loop enqueues every accepted socket here: the reactor takes it at once.
  class InlineQueue final : public httplib::TaskQueue {
   public:
    explicit InlineQueue(LimitedServer& server) : server_(server) {}
    void enqueue(std::function<void()> task) override { task(); }
    void shutdown() override {
      server_.reactor_->shutdown();
      server_.pool_->shutdown();
    }

   private:
    LimitedServer& server_;
  };

  bool process_and_close_socket(socket_t sock) override {
    // The reactor owns the socket from here; it waits while --max-connections are open.
    reactor_->add(sock, [this] { return this->svr_sock_ == INVALID_SOCKET; });
    return true;
  }

  // Whatever escapes httplib's own handling (an allocation failing while it writes a reply)
  // closes this connection only, and its counts are returned.
  bool serve_guarded(Connection& connection, Transport& transport,
                     const std::function<void(httplib::Request&)>& setup) {
    try {
      return serve(connection, transport, setup);
    } catch (const std::exception& e) {
      spdlog::error("http: a request from {} failed: {}", connection.peer_ip, e.what());
    } catch (...) {
      spdlog::error("http: a request from {} failed", connection.peer_ip);
    }
    return false;
  }

  // On a worker: answers the requests the connection has buffered, then hands it back to the
  // reactor to wait for more, or closes it.
  void serve(const std::shared_ptr<Connection>& connection) {
    bool keep = false;
    if (connection->ssl) {
      TlsTransport transport(connection->fd, connection->ssl.get());
      keep = serve_guarded(*connection, transport,
                           [ssl = connection->ssl.get()](httplib::Request& req) { req.ssl = ssl; });
      if (!keep) transport.shutdown_write();  // close_notify, as httplib does
    } else {
      PlainTransport transport(connection->fd);
      keep = serve_guarded(*connection, transport, nullptr);
    }
    const std::size_t charge = connection->body_charge;
    reactor_->release_body(*connection);
    // The body and its reply are freed by now; the heap they grew is returned once no other
    // large body is in flight.
    if (charge >= kLargeBody && reactor_->stats().body_bytes == 0) release_free_memory();
    if (keep) {
      reactor_->resume(connection);
    } else {
      ::shutdown(connection->fd, SHUT_RDWR);
      reactor_->close(connection);
    }
  }

  // httplib's keep-alive loop (process_server_socket_core) over the buffered requests, with the
  // refusals above. True when the connection waits for its next request.
  bool serve(Connection& connection, Transport& transport,
             const std::function<void(httplib::Request&)>& setup) {
    ConnectionState state;
    CurrentConnection current(state);
    RequestStream stream(transport, connection, limits_, state, read_timeout(),
                         to_milliseconds(this->write_timeout_sec_, this->write_timeout_usec_));
    for (bool first = true;; first = false) {
      // A request handed over is answered even when stopping; the ones behind it are not.
      if (!first && (this->svr_sock_ == INVALID_SOCKET || reactor_->stopping())) return false;
      state = ConnectionState{};
      state.reactor = reactor_.get();
      state.connection = &connection;
      state.stream = &stream;
      const auto start = stream.begin_request();
      if (start == RequestStream::Start::kIncomplete) return true;  // wait for the rest
      if (start != RequestStream::Start::kRequest) {
        const bool headers = start == RequestStream::Start::kHeaderTooLarge;
        if (const auto admitted = refusal_log_.admit(); admitted.log) {
          std::string remote;
          int port = 0;
          stream.get_remote_ip_and_port(remote, port);
          spdlog::warn("refused a request from {}: {} (\"{}\"){}", remote,
                       headers
                           ? fmt::format("header block over {} bytes", limits_.max_header_bytes)
                           : fmt::format("Content-Length over {} bytes", limits_.max_request_bytes),
                       stream.request_line(), held_back_note(admitted));
        }
        if (headers) {
          refuse(transport, 431, "Request Header Fields Too Large",
                 fmt::format("request header block too large: larger than {} bytes",
                             limits_.max_header_bytes));
        } else {
          refuse(transport, 413, "Payload Too Large",
                 fmt::format("request body too large: larger than {} bytes (--max-request-bytes)",
                             limits_.max_request_bytes));
        }
        linger(transport);
        return false;
      }
      ++connection.requests_served;
      bool connection_closed = false;
      const bool last = connection.requests_served >= this->keep_alive_max_count_;
      const bool served = this->process_request(stream, last, connection_closed, setup);
      reactor_->release_chunked(connection);
      if (state.close_after_response) {
        if (served) linger(transport);
        return false;
      }
      if (!served || connection_closed || !stream.finish_request()) return false;
    }
  }

  milliseconds read_timeout() const {
    return to_milliseconds(this->read_timeout_sec_, this->read_timeout_usec_);
  }

  Limits limits_;
  std::shared_ptr<ConnectionThreadPool> pool_;
  std::unique_ptr<Reactor> reactor_;
  logging::LogThrottle refusal_log_;  // 431s and 413s: any client can cause them at will
};

}  // namespace

std::unique_ptr<httplib::Server> make_server(const Limits& limits,
                                             std::shared_ptr<ConnectionThreadPool> pool,
                                             const std::string& cert_file,
                                             const std::string& key_file) {
  if (!cert_file.empty()) {
    return std::make_unique<LimitedServer<httplib::SSLServer>>(limits, std::move(pool),
                                                               cert_file.c_str(), key_file.c_str());
  }
  return std::make_unique<LimitedServer<httplib::Server>>(limits, std::move(pool));
}

ConnectionStats connection_stats(const httplib::Server& server) {
  const auto* owner = dynamic_cast<const ReactorOwner*>(&server);
  return owner != nullptr ? owner->connection_stats() : ConnectionStats{};
}

void raise_listen_backlog(httplib::Server& server) {
  if (auto* owner = dynamic_cast<ReactorOwner*>(&server)) owner->raise_listen_backlog();
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
                                             std::size_t max_request_bytes,
                                             std::size_t spare_capacity) {
  if (req.is_multipart_form_data()) {
    // httplib would call a multipart receiver we do not give it; no verb takes forms anyway.
    res.status = 415;
    close_after_response();
    return std::nullopt;
  }
  // Unencoded and buffered whole by the reactor (as kube-scheduler's bodies are): taken as it
  // is, already charged to the budget at its announced size.
  if (!req.has_header("Content-Encoding") && current_connection != nullptr &&
      current_connection->stream != nullptr) {
    if (std::optional<std::string> whole =
            current_connection->stream->take_buffered_body(max_request_bytes)) {
      if (current_connection->reactor != nullptr) current_connection->reactor->count_body(true);
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
    if (current_connection != nullptr && current_connection->reactor != nullptr &&
        !current_connection->reactor->charge_body(*current_connection->connection,
                                                  body.size() + size)) {
      over_budget = true;
      return false;
    }
    body.append(data, size);
    return true;
  });
  if (complete) {
    if (current_connection != nullptr && current_connection->reactor != nullptr)
      current_connection->reactor->count_body(false);
    return body;
  }
  // The rest of the body is unread (or its framing broken): this connection cannot go on.
  close_after_response();
  if (over_budget) {
    res.status = 503;
    res.set_header("Retry-After", "1");
  } else if (too_large || body_over_limit()) {
    res.status = 413;
  } else if (res.status < 400) {
    res.status = 400;  // else what httplib said: 415 for an unknown Content-Encoding
  }
  return std::nullopt;
}

}  // namespace gpushare::http::detail
