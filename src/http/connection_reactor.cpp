#include "connection_reactor.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <netinet/in.h>
#include <openssl/err.h>
#include <spdlog/spdlog.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <system_error>

#include "gpushare/http/process_resources.h"
#include "sigpipe_suppressed.h"

namespace gpushare::http::detail {
namespace {

using std::chrono::milliseconds;

constexpr std::size_t kReadChunk = 64 * 1024;
constexpr std::size_t kReadTurn = 1024 * 1024;
constexpr milliseconds kSweepInterval{200};

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

std::string peer_ip_of(int fd) {
  sockaddr_storage address{};
  socklen_t length = sizeof address;
  if (::getpeername(fd, reinterpret_cast<sockaddr*>(&address), &length) != 0) return {};
  char text[INET6_ADDRSTRLEN] = {};
  if (address.ss_family == AF_INET) {
    ::inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(&address)->sin_addr, text,
                sizeof text);
  } else if (address.ss_family == AF_INET6) {
    ::inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6*>(&address)->sin6_addr, text,
                sizeof text);
  }
  return text;
}

// Best effort, never blocking: the reply to a client we are about to close on. What the client
// already sent is read first, so that the close is a FIN rather than a reset that could destroy
// the reply before the client reads it.
void send_and_close_write(int fd, std::string_view reply) {
  char sink[4096];
  while (::recv(fd, sink, sizeof sink, MSG_DONTWAIT) > 0) {
  }
  if (!reply.empty()) (void)::send(fd, reply.data(), reply.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
  ::shutdown(fd, SHUT_WR);
}

// The same over TLS: one try at the reply record and at close_notify, never blocking (the
// socket's buffer is empty; a client that is not reading loses them, as above).
void tls_send_and_close_write(SSL* ssl, int fd, std::string_view reply) {
  {
    SigpipeSuppressed no_sigpipe;
    if (!reply.empty()) (void)SSL_write(ssl, reply.data(), static_cast<int>(reply.size()));
    (void)SSL_shutdown(ssl);
  }
  ERR_clear_error();
  ::shutdown(fd, SHUT_WR);
}

}  // namespace

Framing parse_framing(std::string_view block) {
  block.remove_prefix(std::min(block.find('\n') + 1, block.size()));  // the request line
  std::optional<std::string_view> content_length;
  std::optional<std::string_view> transfer_encoding;
  bool expect_continue = false;
  while (!block.empty()) {
    const std::size_t eol = block.find('\n');
    const std::string_view line = block.substr(0, eol);
    block.remove_prefix(eol == std::string_view::npos ? block.size() : eol + 1);
    const std::size_t colon = line.find(':');
    if (colon == std::string_view::npos) continue;
    const std::string_view name = trim(line.substr(0, colon));
    const std::string_view value = trim(line.substr(colon + 1));
    if (iequals(name, "Content-Length") && !content_length) content_length = value;
    if (iequals(name, "Transfer-Encoding") && !transfer_encoding) transfer_encoding = value;
    if (iequals(name, "Expect") && iequals(value, "100-continue")) expect_continue = true;
  }
  if (transfer_encoding && iequals(*transfer_encoding, "chunked")) {
    return {Framing::Kind::kChunked, 0, expect_continue};
  }
  if (!content_length) return {};
  const std::string text(*content_length);
  return {Framing::Kind::kLength, std::strtoull(text.c_str(), nullptr, 10), expect_continue};
}

std::string_view request_path(std::string_view block) {
  // "POST /gpushare-scheduler/bind?x HTTP/1.1": the target, without its query.
  const std::string_view line = block.substr(0, block.find('\r'));
  const std::size_t start = line.find(' ');
  if (start == std::string_view::npos) return {};
  std::string_view target = line.substr(start + 1);
  target = target.substr(0, target.find(' '));
  return target.substr(0, target.find('?'));
}

std::optional<std::size_t> header_block_length(std::string_view buffer) {
  // The header block ends at the first line that is just CRLF (httplib's read_headers).
  const std::size_t end = buffer.find("\n\r\n");
  if (end == std::string_view::npos) return std::nullopt;
  return end + 3;
}

Connection::~Connection() {
  ::close(fd);
}

Reactor::Reactor(Limits limits, SSL_CTX* tls, Dispatch dispatch)
    : limits_(limits), tls_(tls), dispatch_(std::move(dispatch)) {
  epoll_fd_ = ::epoll_create1(EPOLL_CLOEXEC);
  wake_fd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (epoll_fd_ < 0 || wake_fd_ < 0)
    throw std::system_error(errno, std::generic_category(), "epoll");
  epoll_event event{};
  event.events = EPOLLIN;
  event.data.fd = wake_fd_;
  ::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, wake_fd_, &event);
  thread_ = std::thread([this] { run(); });
}

Reactor::~Reactor() {
  shutdown();
  ::close(wake_fd_);
  ::close(epoll_fd_);
}

void Reactor::wake() {
  const std::uint64_t one = 1;
  (void)::write(wake_fd_, &one, sizeof one);
}

void Reactor::add(int fd, const std::function<bool()>& stopped) {
  std::shared_ptr<Connection> connection;
  try {
    connection = std::make_shared<Connection>(fd, peer_ip_of(fd));
  } catch (const std::bad_alloc&) {
    ::close(fd);  // out of memory: this connection is refused, the server goes on
    return;
  }
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
  {
    std::unique_lock lock(mutex_);
    for (;;) {
      if (stopping_ || stopped()) return;  // closes fd
      if (per_client_[connection->peer_ip] >= limits_.max_connections_per_client) {
        lock.unlock();
        if (const auto admitted = refusal_log_.admit(); admitted.log) {
          spdlog::warn(
              "http: refused a connection from {}: {} connections open from it "
              "(--max-connections-per-client){}",
              connection->peer_ip, limits_.max_connections_per_client, held_back_note(admitted));
        }
        if (tls_ == nullptr) {
          send_and_close_write(fd, refusal_reply(limits_, 503, "Service Unavailable",
                                                 "too many connections from this client"));
        }
        return;
      }
      if (open_ < limits_.max_connections) break;
      // New connections wait in the listen backlog until one closes.
      capacity_.wait_for(lock, milliseconds(100));
    }
    // Allocates first (a failure here leaves the counts as they were; the fd closes with it).
    incoming_.reserve(incoming_.size() + 1);
    ++open_;
    ++per_client_[connection->peer_ip];
    if (tls_ != nullptr) {
      connection->ssl.reset(SSL_new(tls_));
      if (connection->ssl) {
        SSL_set_fd(connection->ssl.get(), fd);
        // Workers write through the non-blocking socket in pieces, retrying on WANT_WRITE.
        SSL_set_mode(connection->ssl.get(),
                     SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
      }
    }
    connection->wait = Connection::Wait::kHeader;
    connection->deadline = Clock::now() + limits_.header_timeout;
    incoming_.push_back(std::move(connection));
  }
  wake();
}

void Reactor::resume(std::shared_ptr<Connection> connection) {
  {
    std::lock_guard lock(mutex_);
    --answering_;
    if (stopping_) {
      forget_locked(*connection);
      return;
    }
    incoming_.push_back(std::move(connection));
  }
  wake();
}

void Reactor::close(std::shared_ptr<Connection> connection) {
  std::lock_guard lock(mutex_);
  --answering_;
  forget_locked(*connection);
}

void Reactor::forget_locked(Connection& connection) {
  --open_;
  if (connection.chunked_slot) {
    --chunked_bodies_;
    connection.chunked_slot = false;
  }
  if (auto it = per_client_.find(connection.peer_ip);
      it != per_client_.end() && --it->second == 0) {
    per_client_.erase(it);
  }
  if (connection.body_charge > 0) {
    body_bytes_ -= std::min(body_bytes_, connection.body_charge);
    connection.body_charge = 0;
    // A connection that closed holding budget (reset, timed out) frees it for the bodies
    // waiting: they are admitted on the reactor's next turn, not left waiting for an answer.
    budget_freed_ = true;
    if (budget_waiting_ > 0) wake();
  }
  capacity_.notify_all();
}

bool Reactor::charge_body(Connection& connection, std::size_t bytes) {
  // The worker's own connection: nobody else changes its charge meanwhile.
  if (bytes <= connection.body_charge) return true;
  std::lock_guard lock(mutex_);
  const std::size_t more = bytes - connection.body_charge;
  const std::size_t others = body_bytes_ - std::min(body_bytes_, connection.body_charge);
  if (others > 0 && others + bytes > limits_.body_budget_bytes) return false;
  body_bytes_ += more;
  connection.body_charge = bytes;
  return true;
}

bool Reactor::charge_if_admitted_locked(Connection& connection, std::size_t length) {
  // One body is always admitted, however large (within --max-request-bytes).
  if (body_bytes_ > 0 && body_bytes_ + length > limits_.body_budget_bytes) return false;
  body_bytes_ += length;
  connection.body_charge = length;
  return true;
}

bool Reactor::admit_body(Connection& connection, std::size_t length) {
  std::lock_guard lock(mutex_);
  // Bodies already waiting for the budget go first, in their order.
  return budget_waiting_ == 0 && charge_if_admitted_locked(connection, length);
}

void Reactor::release_chunked(Connection& connection) {
  if (!connection.chunked_slot) return;
  std::lock_guard lock(mutex_);
  --chunked_bodies_;
  connection.chunked_slot = false;
}

void Reactor::release_body(Connection& connection) {
  release_chunked(connection);
  if (connection.body_charge == 0) return;
  bool waited_for = false;
  {
    std::lock_guard lock(mutex_);
    body_bytes_ -= std::min(body_bytes_, connection.body_charge);
    connection.body_charge = 0;
    budget_freed_ = true;
    waited_for = budget_waiting_ > 0;
  }
  // Only a body waiting for the budget needs the reactor now (a wake-up per request otherwise,
  // on top of resume's); budget_freed_ is seen on its next turn anyway.
  if (waited_for) wake();
}

bool Reactor::stopping() const {
  std::lock_guard lock(mutex_);
  return stopping_;
}

void Reactor::shutdown() {
  {
    std::lock_guard lock(mutex_);
    if (stopping_ && !thread_.joinable()) return;
    stopping_ = true;
    capacity_.notify_all();
  }
  wake();
  if (thread_.joinable()) thread_.join();
  // The connections being answered close when their worker is done with them.
  std::unique_lock lock(mutex_);
  capacity_.wait(lock, [this] { return open_ == 0; });
}

ReactorStats Reactor::stats() const {
  std::lock_guard lock(mutex_);
  return {open_, answering_, body_bytes_, bodies_in_place_, bodies_read_};
}

void Reactor::count_body(bool in_place) {
  std::lock_guard lock(mutex_);
  ++(in_place ? bodies_in_place_ : bodies_read_);
}

void Reactor::set_interest(int fd, bool readable) {
  epoll_event event{};
  event.events = readable ? static_cast<std::uint32_t>(EPOLLIN) : 0U;
  event.data.fd = fd;
  ::epoll_ctl(epoll_fd_, EPOLL_CTL_MOD, fd, &event);
}

void Reactor::run() {
  std::vector<epoll_event> events(256);
  for (;;) {
    const int ready = ::epoll_wait(epoll_fd_, events.data(), static_cast<int>(events.size()),
                                   static_cast<int>(kSweepInterval.count()));
    // Reset the wake-up before looking at what it announces: a hand-over after this point
    // wakes the next epoll_wait (a reset after the look could swallow it until the next sweep).
    std::uint64_t count = 0;
    (void)::read(wake_fd_, &count, sizeof count);
    bool stop = false;
    bool admit = false;
    {
      std::lock_guard lock(mutex_);
      stop = stopping_;
      admit = std::exchange(budget_freed_, false);
    }
    if (stop) break;
    take_incoming();
    for (int i = 0; i < ready; ++i) {
      const int fd = events[static_cast<std::size_t>(i)].data.fd;
      if (fd == wake_fd_) continue;
      try {
        on_event(fd, events[static_cast<std::size_t>(i)].events);
      } catch (const std::bad_alloc&) {
        drop_for_want_of_memory(fd);
      }
    }
    if (admit) admit_waiting_bodies();
    const auto now = Clock::now();
    if (now >= next_sweep_) {
      try {
        expire(now);
      } catch (const std::bad_alloc&) {
        // The next sweep tries again.
      }
      next_sweep_ = now + kSweepInterval;
    }
  }
  // Stopping: nobody waiting for a request is owed an answer.
  std::vector<std::shared_ptr<Connection>> incoming;
  {
    std::lock_guard lock(mutex_);
    incoming.swap(incoming_);
    for (const auto& connection : incoming) forget_locked(*connection);
    for (const auto& [fd, connection] : waiting_) forget_locked(*connection);
  }
  waiting_.clear();
  budget_queue_.clear();
}

void Reactor::take_incoming() {
  std::vector<std::shared_ptr<Connection>> incoming;
  {
    std::lock_guard lock(mutex_);
    incoming.swap(incoming_);
  }
  for (auto& connection : incoming) {
    const int fd = connection->fd;
    try {
      watch(std::move(connection));
    } catch (const std::bad_alloc&) {
      drop_for_want_of_memory(fd);
    }
  }
}

void Reactor::watch(std::shared_ptr<Connection> connection) {
  const int fd = connection->fd;
  if (connection->requests_served > 0) {
    // Back from a worker: the idle time-out runs until the next request's first byte.
    connection->wait = Connection::Wait::kRequest;
    connection->deadline = Clock::now() + limits_.keep_alive_timeout;
  }
  try {
    waiting_[fd] = connection;
  } catch (const std::bad_alloc&) {
    std::lock_guard lock(mutex_);
    forget_locked(*connection);  // closes with the last reference
    return;
  }
  connection.reset();
  epoll_event event{};
  event.events = EPOLLIN;
  event.data.fd = fd;
  ::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &event);
  // Bytes may already be buffered (here, or inside TLS) with no further event to come.
  advance(fd);
  if (waiting_.contains(fd)) on_readable(fd);
}

bool Reactor::receive(Connection& connection) {
  if (connection.ssl && !connection.handshake_done) {
    int result = 0;
    {
      SigpipeSuppressed no_sigpipe;  // the handshake writes (TLS 1.3: session tickets too)
      result = SSL_accept(connection.ssl.get());
    }
    if (result != 1) {
      const int error = SSL_get_error(connection.ssl.get(), result);
      ERR_clear_error();
      return error == SSL_ERROR_WANT_READ;
    }
    connection.handshake_done = true;
  }
  // Read no further than the request needs (the rest waits in the socket).
  std::size_t limit = limits_.max_header_bytes + 4;
  if (const auto header = header_block_length(connection.buffer);
      header && *header <= limits_.max_header_bytes) {
    const Framing framing = parse_framing(std::string_view(connection.buffer).substr(0, *header));
    limit = *header + static_cast<std::size_t>(
                          std::min<unsigned long long>(framing.length, limits_.max_request_bytes));
  }
  // At most kReadTurn per event, so that one fast large body does not hold up the others; the
  // rest is read on the next turn (epoll is level-triggered). Not over TLS: bytes OpenSSL has
  // decrypted but not handed out would raise no further event.
  if (!connection.ssl) limit = std::min(limit, connection.buffer.size() + kReadTurn);
  char chunk[kReadChunk];
  while (connection.buffer.size() < limit) {
    const std::size_t want = std::min(sizeof chunk, limit - connection.buffer.size());
    ssize_t n = 0;
    if (connection.ssl) {
      SigpipeSuppressed no_sigpipe;  // a read may write (key updates, alerts)
      n = SSL_read(connection.ssl.get(), chunk, static_cast<int>(want));
      if (n <= 0) {
        const int error = SSL_get_error(connection.ssl.get(), static_cast<int>(n));
        ERR_clear_error();
        return error == SSL_ERROR_WANT_READ;
      }
    } else {
      n = ::recv(connection.fd, chunk, want, 0);
      if (n == 0) return false;
      if (n < 0) {
        if (errno == EINTR) continue;
        return errno == EAGAIN || errno == EWOULDBLOCK;
      }
    }
    connection.buffer.append(chunk, static_cast<std::size_t>(n));
  }
  return true;
}

void Reactor::on_event(int fd, std::uint32_t events) {
  const auto it = waiting_.find(fd);
  if (it == waiting_.end()) return;
  // A connection waiting for the budget is not read (no interest), but epoll reports its
  // hang-up or error regardless, and level-triggered: unless dropped, it would be reported on
  // every turn and spin the reactor.
  if (it->second->wait == Connection::Wait::kBudget) {
    if ((events & (EPOLLHUP | EPOLLERR)) != 0) drop(fd, {});
    return;
  }
  on_readable(fd);
}

void Reactor::on_readable(int fd) {
  const auto it = waiting_.find(fd);
  if (it == waiting_.end() || it->second->wait == Connection::Wait::kBudget) return;
  if (!receive(*it->second)) {
    // Closed, reset or broken. Silence: a client that went away is owed nothing.
    drop(fd, {});
    return;
  }
  advance(fd);
}

void Reactor::advance(int fd) {
  Connection& connection = *waiting_.at(fd);
  const auto now = Clock::now();
  std::string& buffer = connection.buffer;
  if (buffer.empty()) return;  // kRequest (idle) or a fresh connection: deadline as set
  const auto header = header_block_length(buffer);
  if (!header) {
    if (buffer.size() >= limits_.max_header_bytes) return hand_over(fd);  // the worker answers 431
    if (connection.wait != Connection::Wait::kHeader) {
      connection.wait = Connection::Wait::kHeader;
      connection.deadline = now + limits_.header_timeout;
    }
    return;
  }
  if (*header > limits_.max_header_bytes) return hand_over(fd);
  if (limits_.refused_early &&
      limits_.refused_early(request_path(buffer), connection.peer_ip, connection.ssl.get())) {
    return hand_over(fd);  // the worker answers the refusal; the body is never read
  }
  const Framing framing = parse_framing(std::string_view(buffer).substr(0, *header));
  if (framing.kind == Framing::Kind::kChunked && limits_.max_chunked_bodies > 0 &&
      !connection.chunked_slot) {
    bool admitted = false;
    {
      std::lock_guard lock(mutex_);
      if (chunked_bodies_ < limits_.max_chunked_bodies) {
        ++chunked_bodies_;
        connection.chunked_slot = true;
        admitted = true;
      }
    }
    if (!admitted) {
      if (const auto logged = refusal_log_.admit(now); logged.log) {
        spdlog::warn(
            "http: refused a chunked request body from {}: {} are being read already "
            "(a quarter of --http-threads){}",
            connection.peer_ip, limits_.max_chunked_bodies, held_back_note(logged));
      }
      return drop(fd,
                  refusal_reply(limits_, 503, "Service Unavailable",
                                "too many chunked request bodies at once; send a Content-Length"));
    }
  }
  // A chunked body is read by the worker, within the body deadline; an oversized one is refused.
  if (framing.kind != Framing::Kind::kLength || framing.length == 0 ||
      framing.length > limits_.max_request_bytes) {
    return hand_over(fd);
  }
  const std::size_t length = static_cast<std::size_t>(framing.length);
  if (connection.body_charge == 0) {
    bool must_wait = false;
    {
      std::lock_guard lock(mutex_);
      must_wait = !charge_if_admitted_locked(connection, length);
      if (must_wait) ++budget_waiting_;  // under the lock that release_body reads it with
    }
    if (must_wait) {
      if (connection.wait != Connection::Wait::kBudget) {
        // Waiting for the budget counts against the body's time (expire answers 503).
        connection.wait = Connection::Wait::kBudget;
        connection.deadline = now + limits_.body_timeout;
        set_interest(fd, false);
      }
      budget_queue_.push_back(fd);
      return;
    }
    connection.wait = Connection::Wait::kBody;
    connection.deadline = now + limits_.body_timeout;
  }
  // A client waiting for httplib's "100 Continue" sends its body only then: the worker reads it,
  // within the body deadline, once the body is admitted.
  if (framing.expect_continue) return hand_over(fd);
  buffer.reserve(*header + length + kBufferedBodySpare);
  if (buffer.size() >= *header + length) hand_over(fd);
}

void Reactor::admit_waiting_bodies() {
  std::vector<int> queue;
  queue.swap(budget_queue_);
  {
    std::lock_guard lock(mutex_);
    budget_waiting_ = 0;  // those still waiting count themselves again in advance()
  }
  for (const int fd : queue) {
    const auto it = waiting_.find(fd);
    if (it == waiting_.end() || it->second->wait != Connection::Wait::kBudget) continue;
    try {
      advance(fd);  // re-assessed: kBudget keeps its deadline if it must wait on
      const auto still = waiting_.find(fd);
      if (still == waiting_.end() || still->second->wait == Connection::Wait::kBudget) continue;
      set_interest(fd, true);
      on_readable(fd);  // the body may be waiting in the socket (or inside TLS) already
    } catch (const std::bad_alloc&) {
      drop_for_want_of_memory(fd);
    }
  }
}

void Reactor::expire(Clock::time_point now) {
  std::vector<std::pair<int, bool>> late;  // fd, owed a 408
  std::vector<int> starved;                // waited for the body budget past the body time-out
  for (const auto& [fd, connection] : waiting_) {
    if (connection->deadline > now) continue;
    if (connection->wait == Connection::Wait::kBudget) {
      starved.push_back(fd);
    } else {
      late.emplace_back(fd, connection->wait != Connection::Wait::kRequest);
    }
  }
  for (const int fd : starved) {
    if (const auto admitted = late_request_log_.admit(now); admitted.log) {
      spdlog::warn(
          "http: refused a request from {}: its body waited {} ms for --max-buffered-body-bytes "
          "({} bytes in use){}",
          waiting_.at(fd)->peer_ip, limits_.body_timeout.count(), stats().body_bytes,
          held_back_note(admitted));
    }
    drop(fd, refusal_reply(limits_, 503, "Service Unavailable",
                           "request bodies in memory are at --max-buffered-body-bytes; retry later",
                           "Retry-After: 1\r\n"));
  }
  for (const auto& [fd, owed] : late) {
    if (owed) {
      const Connection& connection = *waiting_.at(fd);
      if (const auto admitted = late_request_log_.admit(now); admitted.log) {
        spdlog::warn("http: closed a connection from {}: request {} not received within {} ms{}",
                     connection.peer_ip,
                     connection.wait == Connection::Wait::kBody ? "body" : "header block",
                     (connection.wait == Connection::Wait::kBody ? limits_.body_timeout
                                                                 : limits_.header_timeout)
                         .count(),
                     held_back_note(admitted));
      }
    }
    drop(fd, owed ? refusal_reply(limits_, 408, "Request Timeout", "request not received in time")
                  : std::string());
  }
}

void Reactor::hand_over(int fd) {
  auto node = waiting_.extract(fd);
  ::epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, fd, nullptr);
  std::shared_ptr<Connection> connection = std::move(node.mapped());
  connection->body_deadline = Clock::now() + limits_.body_timeout;
  {
    std::lock_guard lock(mutex_);
    ++answering_;
  }
  try {
    dispatch_(connection);
  } catch (const std::bad_alloc&) {
    std::lock_guard lock(mutex_);
    --answering_;
    forget_locked(*connection);  // closes with the last reference
  }
}

void Reactor::drop_for_want_of_memory(int fd) {
  if (const auto admitted = out_of_memory_log_.admit(); admitted.log) {
    spdlog::error("http: out of memory reading a request; closed its connection{}",
                  held_back_note(admitted));
  }
  if (waiting_.contains(fd)) drop(fd, {});
  rearm_allocation_reserve();
}

void Reactor::drop(int fd, std::string_view reply) {
  auto node = waiting_.extract(fd);
  ::epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, fd, nullptr);
  Connection& connection = *node.mapped();
  // The fd's number may be reused by the next connection: it leaves the waiters.
  if (connection.wait == Connection::Wait::kBudget) std::erase(budget_queue_, fd);
  if (!connection.ssl) {
    send_and_close_write(fd, reply);
  } else if (connection.handshake_done) {
    tls_send_and_close_write(connection.ssl.get(), fd, reply);
  }  // else no TLS session to answer in: a plain close
  std::lock_guard lock(mutex_);
  forget_locked(*node.mapped());
}

}  // namespace gpushare::http::detail
