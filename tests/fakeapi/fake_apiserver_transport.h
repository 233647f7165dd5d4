#pragma once
// The socket layer under the fake API server. httplib's own connection loop can neither be
// interrupted (an idle keep-alive connection delays stop() by the keep-alive timeout) nor
// tell a handler which socket it is on. This server runs the connection loop itself, so
// that it can
//   - end every connection promptly on stop,
//   - reset connections on purpose (fault injection: the client sees ECONNRESET),
//   - let a long-lived watch notice that its client went away.
// Requests are still parsed and answered by httplib (Server::process_request).

#include <httplib.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <mutex>
#include <set>

namespace gpushare::testing::fakeapi {

// One accepted TCP connection.
class Connection {
 public:
  explicit Connection(int fd) : fd_(fd) {}
  int fd() const noexcept { return fd_; }
  // Ask for a TCP reset: every read or write fails from now on, and the socket is closed
  // with SO_LINGER 0.
  void abort() noexcept { aborted_ = true; }
  bool aborted() const noexcept { return aborted_; }
  // True when the peer has closed or reset its side (checked without blocking).
  bool peer_closed() const;

 private:
  int fd_;
  std::atomic<bool> aborted_{false};
};

class FakeHttpServer : public httplib::Server {
 public:
  FakeHttpServer();
  ~FakeHttpServer() override;

  // Wakes every connection loop; each closes its socket within ~50 ms.
  void begin_shutdown();
  // Resets every open connection.
  void abort_all_connections();
  std::size_t open_connections() const;

  // The connection whose request the calling thread is handling (nullptr outside a handler).
  static Connection* current_connection();

 private:
  // Overrides httplib's private virtual: this is where a worker thread serves one socket.
  bool process_and_close_socket(socket_t sock) override;

  std::atomic<bool> shutting_down_{false};
  mutable std::mutex mutex_;
  std::set<std::shared_ptr<Connection>> connections_;
};

// A task queue that runs each connection on its own thread, so long-lived watches never
// starve other requests (httplib's default pool has 8 threads). Threads are joined on
// shutdown and reaped as they finish.
std::function<httplib::TaskQueue*()> thread_per_connection_queue();

}  // namespace gpushare::testing::fakeapi
