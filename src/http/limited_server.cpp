#include "limited_server.h"

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
#include "request_stream.h"
#include "transport.h"

namespace gpushare::http::detail {
namespace {

using std::chrono::milliseconds;

milliseconds to_milliseconds(time_t seconds, time_t microseconds) {
  return milliseconds(seconds * 1000 + microseconds / 1000);
}

// Answers a refused request ourselves (httplib never sees it) and closes politely: our FIN goes
// out after the reply, then what the client is still sending is read and dropped for a moment,
// so that closing with unread data (a TCP reset) does not destroy the reply before it is read.
void refuse(Transport& transport, std::string_view reply) {
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
  // library), too few for kube-scheduler's and the probes' connections arriving at once.
  // listen() again on the bound socket only changes the backlog.
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
    release_request(*connection);
    if (keep) {
      reactor_->resume(connection);
    } else {
      ::shutdown(connection->fd, SHUT_RDWR);
      reactor_->close(connection);
    }
  }

  // After a request was answered: its body's budget is released (and a large body's heap).
  void release_request(Connection& connection) {
    const std::size_t charge = connection.body_charge;
    reactor_->release_body(connection);
    // The body and its reply are freed by now; the heap they grew is returned once no other
    // large body is in flight.
    if (charge >= kLargeBody && reactor_->stats().body_bytes == 0) release_free_memory();
    // Smaller bodies, and replies (/inspect, /metrics), once the server has been idle a while.
    idle_release_.note_activity();
  }

  // Between keep-alive requests: true when the connection's next request arrived whole within
  // Limits::keep_alive_linger and its body is admitted, to be answered on this worker. Not while
  // other connections wait for a worker.
  bool next_request_arrived(Connection& connection, RequestStream& stream) {
    if (limits_.keep_alive_linger.count() <= 0 || pool_->stats().waiting > 0) return false;
    std::size_t length = 0;
    if (!stream.read_next_request(Clock::now() + limits_.keep_alive_linger, length)) return false;
    if (length > 0 && !reactor_->admit_body(connection, length)) return false;
    connection.body_deadline = Clock::now() + limits_.body_timeout;
    return true;
  }

  // httplib's keep-alive loop (process_server_socket_core) over the buffered requests, and the
  // next ones as they arrive at once, with the refusals above. True when the connection waits
  // for its next request.
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
      auto start = stream.begin_request();
      if (start == RequestStream::Start::kIncomplete) {
        if (!next_request_arrived(connection, stream)) return true;  // the reactor waits
        if (reactor_->stopping()) return false;
        start = stream.begin_request();
      }
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
          refuse(transport,
                 refusal_reply(limits_, 431, "Request Header Fields Too Large",
                               fmt::format("request header block too large: larger than {} bytes",
                                           limits_.max_header_bytes)));
        } else {
          refuse(
              transport,
              refusal_reply(
                  limits_, 413, "Payload Too Large",
                  fmt::format("request body too large: larger than {} bytes (--max-request-bytes)",
                              limits_.max_request_bytes)));
        }
        linger(transport);
        return false;
      }
      ++connection.requests_served;
      bool connection_closed = false;
      const bool last = connection.requests_served >= this->keep_alive_max_count_;
      const bool served =
          this->process_request(stream, last, connection_closed, setup) && stream.flush();
      reactor_->release_chunked(connection);
      if (state.close_after_response) {
        if (served) linger(transport);
        return false;
      }
      if (!served || connection_closed || !stream.finish_request()) return false;
      release_request(connection);
    }
  }

  milliseconds read_timeout() const {
    return to_milliseconds(this->read_timeout_sec_, this->read_timeout_usec_);
  }

  Limits limits_;
  std::shared_ptr<ConnectionThreadPool> pool_;
  std::unique_ptr<Reactor> reactor_;
  logging::LogThrottle refusal_log_;  // 431s and 413s: any client can cause them at will
  IdleHeapRelease idle_release_{limits_.heap_release_idle};
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
  if (ConnectionState* current = current_connection()) current->close_after_response = true;
}

bool closing_after_response() {
  const ConnectionState* current = current_connection();
  return current != nullptr && current->close_after_response;
}

bool body_over_limit() {
  const ConnectionState* current = current_connection();
  return current != nullptr && current->body_over_limit;
}

}  // namespace gpushare::http::detail
