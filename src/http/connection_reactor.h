#pragma once
// Where the HTTP server's connections wait between requests (private to src/http).
//
// Slow clients (slowloris: a header byte now and then) must not hold the workers, or every
// endpoint goes deaf. One epoll thread owns every connection that is not being answered: it reads
// (and TLS-decrypts) what arrives, and hands a connection to a worker only once a whole request is
// buffered: the header block, and the body too when a Content-Length announces it. A slow
// connection costs a file descriptor and a buffer, never a thread. The reactor also enforces:
//
//   * a deadline for the header block (from the connection's first byte, or its acceptance) and
//     one for the body; a client that misses it gets 408 and is closed;
//   * an idle keep-alive time-out between requests;
//   * a cap on open connections per client IP (beyond it: 503 and close) and in total (beyond
//     it the accept thread waits, so new connections wait in the listen backlog);
//   * a budget of request-body bytes buffered at once: a body that does not fit waits, unread,
//     until the bodies in flight are answered (one body is always admitted), so a burst of
//     large filters does not multiply the server's memory. It waits at most body_timeout (then
//     503 with Retry-After), and is admitted as soon as budget is freed, whether by an answered
//     request or by a connection that closed. A body whose size is not announced (chunked) or
//     that grows when decoded (gzip) is charged on the worker as it is decoded (charge_body).

#include <openssl/ssl.h>

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "connection_rules.h"
#include "gpushare/logging/log_throttle.h"

namespace gpushare::http::detail {

using Clock = std::chrono::steady_clock;

struct SslFree {
  void operator()(SSL* ssl) const { SSL_free(ssl); }
};
using SslHandle = std::unique_ptr<SSL, SslFree>;

// How a request's body is framed, as httplib will read it: the first Transfer-Encoding
// "chunked" wins over Content-Length; no length means no body.
struct Framing {
  enum class Kind { kNone, kLength, kChunked } kind = Kind::kNone;
  unsigned long long length = 0;  // kLength: as httplib parses it (strtoull: "-1" is huge)
  bool expect_continue = false;   // "Expect: 100-continue": the client waits for a 100 first
};
// `header_block`: the request line and headers up to and including the blank line.
Framing parse_framing(std::string_view header_block);
// The length of the header block at the start of `buffer` (through its blank line), or nullopt
// while it is incomplete.
// The request target of a header block's request line, without the query.
std::string_view request_path(std::string_view block);
std::optional<std::size_t> header_block_length(std::string_view buffer);

// An IP address and port, as httplib reports them.
struct Address {
  std::string ip;
  int port = 0;
};

// One accepted connection. Owned by the reactor while it waits, by a worker while answered.
struct Connection {
  Connection(int fd, std::string peer_ip) : fd(fd), peer_ip(std::move(peer_ip)) {}
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  const int fd;
  const std::string peer_ip;
  SslHandle ssl;  // TLS only
  bool handshake_done = false;
  std::string buffer;  // received, not yet consumed by a request
  std::size_t requests_served = 0;
  std::size_t body_charge = 0;      // bytes of the body budget this request holds
  bool chunked_slot = false;        // this request holds one of Limits::max_chunked_bodies
  Clock::time_point body_deadline;  // for a body still arriving when the worker reads it
  // Workers only: the two ends' addresses, once httplib asked for them.
  std::optional<Address> remote_address;
  std::optional<Address> local_address;

  // The reactor's bookkeeping while it holds the connection.
  enum class Wait { kRequest, kHeader, kBody, kBudget } wait = Wait::kHeader;
  Clock::time_point deadline;
};

struct ReactorStats {
  std::size_t open = 0;        // accepted and not yet closed
  std::size_t answering = 0;   // handed to a worker
  std::size_t body_bytes = 0;  // body budget in use
  // Request bodies handed to handlers: the connection's buffer itself, or read into a new string
  // (chunked, encoded, after "100 Continue", with pipelined requests behind them).
  std::uint64_t bodies_in_place = 0;
  std::uint64_t bodies_read = 0;
};

class Reactor {
 public:
  // `dispatch` runs on the reactor thread: it must hand the connection to a worker quickly.
  using Dispatch = std::function<void(std::shared_ptr<Connection>)>;
  Reactor(Limits limits, SSL_CTX* tls, Dispatch dispatch);
  ~Reactor();
  Reactor(const Reactor&) = delete;
  Reactor& operator=(const Reactor&) = delete;

  // On the accept thread: takes ownership of `fd`. Waits while max_connections are open (until
  // `stopped` says the server stopped); refuses a client over its own cap with 503.
  void add(int fd, const std::function<bool()>& stopped);
  // From a worker: the connection waits for its next request (its buffer may hold part of it).
  void resume(std::shared_ptr<Connection> connection);
  // From a worker: the connection is finished with; closes it.
  void close(std::shared_ptr<Connection> connection);
  // From a worker: the request that held `connection.body_charge` (or a chunked-body slot) was
  // answered.
  void release_body(Connection& connection);
  // From a worker, as a request's body is decoded: charges it `bytes` in all (a body is charged
  // the larger of its size as received and as decoded). False, charging nothing, when that
  // would exceed the budget while other bodies hold part of it (the request is then refused
  // with 503: a body already on a worker cannot wait without holding the worker).
  bool charge_body(Connection& connection, std::size_t bytes);
  // From a worker that read a connection's next request itself (RequestStream::
  // read_next_request): charges its Content-Length body to the budget as the reactor would. False,
  // charging nothing, when the body would have to wait for the budget (the worker then gives the
  // connection back, and it waits here).
  bool admit_body(Connection& connection, std::size_t length);
  // From a worker: the request's chunked body has been read (or given up on); its slot is free
  // (before the reply's linger, which may hold the worker a while longer).
  void release_chunked(Connection& connection);
  // From a worker: a body was handed to its handler in place (else read into a new string).
  void count_body(bool in_place);
  bool stopping() const;
  // Closes the connections waiting for a request, waits until the ones being answered are
  // closed by their workers, and ends the reactor thread.
  void shutdown();

  ReactorStats stats() const;
  const Limits& limits() const { return limits_; }

 private:
  void run();
  void wake();
  void take_incoming();
  void watch(std::shared_ptr<Connection> connection);
  // `events`: epoll's; a hang-up or error is seen even on a connection we do not read.
  void on_event(int fd, std::uint32_t events);
  void on_readable(int fd);
  // Reads what arrived; false when the connection is to be closed (peer closed, error).
  bool receive(Connection& connection);
  // After a read: hands the connection to a worker if a request is complete, else sets what it
  // waits for. False when it was handed over (or closed).
  void advance(int fd);
  void admit_waiting_bodies();
  void expire(Clock::time_point now);
  void hand_over(int fd);
  void drop(int fd, std::string_view reply);
  // After an allocation failed while the reactor handled `fd`: closes it, keeps serving.
  void drop_for_want_of_memory(int fd);
  void forget_locked(Connection& connection);
  // Charges a `length` body to `connection` when the budget admits it now (one body is always
  // admitted, however large); false, charging nothing, when it must wait.
  bool charge_if_admitted_locked(Connection& connection, std::size_t length);
  void set_interest(int fd, bool readable);

  const Limits limits_;
  // Lines any client can cause at will (log_throttle.h).
  logging::LogThrottle refusal_log_;
  logging::LogThrottle late_request_log_;
  logging::LogThrottle out_of_memory_log_;
  SSL_CTX* const tls_;
  const Dispatch dispatch_;
  int epoll_fd_ = -1;
  int wake_fd_ = -1;

  // Reactor thread only.
  std::map<int, std::shared_ptr<Connection>> waiting_;
  std::vector<int> budget_queue_;  // connections whose body waits for the budget, in order
  Clock::time_point next_sweep_{};

  mutable std::mutex mutex_;  // guards what follows
  std::condition_variable capacity_;
  std::vector<std::shared_ptr<Connection>> incoming_;  // new or resumed, for the reactor thread
  std::map<std::string, std::size_t> per_client_;
  std::size_t open_ = 0;
  std::size_t answering_ = 0;
  std::size_t body_bytes_ = 0;
  bool budget_freed_ = false;
  std::size_t budget_waiting_ = 0;  // bodies waiting for the budget (may count closed ones)
  std::size_t chunked_bodies_ = 0;  // chunked bodies handed to workers and not yet answered
  std::uint64_t bodies_in_place_ = 0;
  std::uint64_t bodies_read_ = 0;
  bool stopping_ = false;

  std::thread thread_;
};

}  // namespace gpushare::http::detail
