#pragma once
// The bytes of one accepted connection, plain or TLS, as a worker reads and writes them (private
// to src/http). The reactor made the socket non-blocking; these calls wait at most the time-out
// they are given. Used by one thread at a time (the worker serving the connection).

#include <openssl/ssl.h>
#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <string_view>

namespace gpushare::http::detail {

// poll(2) for one descriptor, retried on EINTR. >0: ready; 0: timed out; -1: error.
int poll_for(int fd, short events, std::chrono::milliseconds timeout);
// The time left until `deadline`, never negative, rounded up (a wait for it never ends early).
std::chrono::milliseconds remaining(std::chrono::steady_clock::time_point deadline);

// One connection's socket, which the transport moves bytes over but does not own.
class Transport {
 public:
  explicit Transport(int fd) : fd_(fd) {}
  virtual ~Transport() = default;
  // Waits up to `timeout` for data. >0: bytes read; 0: the peer closed; -1: error or time-out.
  virtual ssize_t read_some(char* data, std::size_t size, std::chrono::milliseconds timeout) = 0;
  // Bytes written (possibly fewer than size), or -1.
  virtual ssize_t write_some(const char* data, std::size_t size,
                             std::chrono::milliseconds timeout) = 0;
  // `head` then `data` in one write where the transport can (one segment, one system call, one
  // wake-up of the peer for a reply's header and body): bytes written of the two together
  // (possibly fewer), or -1. This default writes `head` alone when it is not empty.
  virtual ssize_t write_some(std::string_view head, const char* data, std::size_t size,
                             std::chrono::milliseconds timeout);
  // Data can be read without waiting, or arrives within `timeout`.
  virtual bool wait_readable(std::chrono::milliseconds timeout) = 0;
  // Ends our side (TLS close_notify, then FIN); reads still work.
  virtual void shutdown_write() = 0;
  int socket() const { return fd_; }

 protected:
  const int fd_;
};

// A non-blocking socket: each call tries first and waits only for what would block.
class PlainTransport final : public Transport {
 public:
  using Transport::Transport;
  ssize_t read_some(char* data, std::size_t size, std::chrono::milliseconds timeout) override;
  ssize_t write_some(const char* data, std::size_t size,
                     std::chrono::milliseconds timeout) override;
  // sendmsg(2) of both.
  ssize_t write_some(std::string_view head, const char* data, std::size_t size,
                     std::chrono::milliseconds timeout) override;
  bool wait_readable(std::chrono::milliseconds timeout) override;
  void shutdown_write() override;
};

// A TLS session over a non-blocking socket, with partial writes enabled (the reactor's SSL mode).
// `ssl` is owned by the connection and outlives this.
class TlsTransport final : public Transport {
 public:
  TlsTransport(int fd, SSL* ssl) : Transport(fd), ssl_(ssl) {}
  using Transport::write_some;
  ssize_t read_some(char* data, std::size_t size, std::chrono::milliseconds timeout) override;
  ssize_t write_some(const char* data, std::size_t size,
                     std::chrono::milliseconds timeout) override;
  bool wait_readable(std::chrono::milliseconds timeout) override;
  // Once: close_notify, then FIN.
  void shutdown_write() override;

 private:
  SSL* ssl_;
  bool shut_down_ = false;
};

}  // namespace gpushare::http::detail
