#include "fakeapi/fake_apiserver_transport.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <list>
#include <thread>

namespace gpushare::testing::fakeapi {
namespace {

using Clock = std::chrono::steady_clock;
constexpr auto kPollSlice = std::chrono::milliseconds(50);

thread_local Connection* t_current_connection = nullptr;

// httplib::Stream over a Connection. Every wait is sliced so that a shutdown or an abort
// is noticed within kPollSlice.
class ConnectionStream final : public httplib::Stream {
 public:
  ConnectionStream(Connection& connection, const std::atomic<bool>& shutting_down,
                   std::chrono::milliseconds read_timeout, std::chrono::milliseconds write_timeout)
      : connection_(connection),
        shutting_down_(shutting_down),
        read_timeout_(read_timeout),
        write_timeout_(write_timeout) {}

  bool is_readable() const override { return buffered() > 0 || wait_for(POLLIN, read_timeout_); }
  bool is_writable() const override {
    return !connection_.aborted() && wait_for(POLLOUT, write_timeout_);
  }

  ssize_t read(char* ptr, size_t size) override {
    if (connection_.aborted()) return -1;
    if (buffered() == 0) {
      if (!wait_for(POLLIN, read_timeout_)) return -1;
      const ssize_t n = ::recv(connection_.fd(), buffer_.data(), buffer_.size(), 0);
      if (n <= 0) return n < 0 ? -1 : 0;
      begin_ = 0;
      end_ = static_cast<std::size_t>(n);
    }
    const std::size_t count = std::min(size, buffered());
    std::memcpy(ptr, buffer_.data() + begin_, count);
    begin_ += count;
    return static_cast<ssize_t>(count);
  }

  ssize_t write(const char* ptr, size_t size) override {
    if (connection_.aborted() || !wait_for(POLLOUT, write_timeout_)) return -1;
    const ssize_t n = ::send(connection_.fd(), ptr, size, MSG_NOSIGNAL);
    return n < 0 ? -1 : n;
  }

  void get_remote_ip_and_port(std::string& ip, int& port) const override {
    address_of(::getpeername, ip, port);
  }
  void get_local_ip_and_port(std::string& ip, int& port) const override {
    address_of(::getsockname, ip, port);
  }
  socket_t socket() const override { return connection_.fd(); }

  // Waits for the next request on an idle keep-alive connection.
  bool wait_for_next_request(std::chrono::milliseconds keep_alive_timeout) const {
    return buffered() > 0 || wait_for(POLLIN, keep_alive_timeout);
  }

 private:
  std::size_t buffered() const { return end_ - begin_; }

  bool wait_for(short events, std::chrono::milliseconds timeout) const {
    const auto deadline = Clock::now() + timeout;
    while (!connection_.aborted() && !shutting_down_) {
      pollfd entry{connection_.fd(), events, 0};
      const int ready = ::poll(&entry, 1, static_cast<int>(kPollSlice.count()));
      if (ready > 0) return true;  // readable, writable, or an error the next call reports
      if (ready < 0 && errno != EINTR) return false;
      if (Clock::now() >= deadline) return false;
    }
    return false;
  }

  template <typename GetName>
  void address_of(GetName get_name, std::string& ip, int& port) const {
    sockaddr_storage address{};
    socklen_t length = sizeof address;
    if (get_name(connection_.fd(), reinterpret_cast<sockaddr*>(&address), &length) != 0) return;
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

  Connection& connection_;
  const std::atomic<bool>& shutting_down_;
  std::chrono::milliseconds read_timeout_;
  std::chrono::milliseconds write_timeout_;
  std::array<char, 4096> buffer_{};
  std::size_t begin_ = 0;
  std::size_t end_ = 0;
};

class ThreadPerConnectionQueue final : public httplib::TaskQueue {
 public:
  ~ThreadPerConnectionQueue() override { shutdown(); }

  void enqueue(std::function<void()> task) override {
    std::lock_guard lock(mutex_);
    reap_finished();
    auto done = std::make_shared<std::atomic<bool>>(false);
    workers_.push_back({std::thread([task = std::move(task), done] {
                          task();
                          *done = true;
                        }),
                        done});
  }

  void shutdown() override {
    std::list<Worker> workers;
    {
      std::lock_guard lock(mutex_);
      workers.swap(workers_);
    }
    for (Worker& worker : workers) {
      if (worker.thread.joinable()) worker.thread.join();
    }
  }

 private:
  struct Worker {
    std::thread thread;
    std::shared_ptr<std::atomic<bool>> done;
  };

  void reap_finished() {
    for (auto it = workers_.begin(); it != workers_.end();) {
      if (*it->done) {
        it->thread.join();
        it = workers_.erase(it);
      } else {
        ++it;
      }
    }
  }

  std::mutex mutex_;
  std::list<Worker> workers_;
};

}  // namespace

bool Connection::peer_closed() const {
  pollfd entry{fd_, static_cast<short>(POLLIN | POLLRDHUP), 0};
  if (::poll(&entry, 1, 0) <= 0) return false;
  return (entry.revents & (POLLRDHUP | POLLHUP | POLLERR)) != 0;
}

FakeHttpServer::FakeHttpServer() {
  new_task_queue = thread_per_connection_queue();
}

FakeHttpServer::~FakeHttpServer() {
  begin_shutdown();
}

void FakeHttpServer::begin_shutdown() {
  shutting_down_ = true;
}

void FakeHttpServer::abort_all_connections() {
  std::lock_guard lock(mutex_);
  for (const auto& connection : connections_) connection->abort();
}

std::size_t FakeHttpServer::open_connections() const {
  std::lock_guard lock(mutex_);
  return connections_.size();
}

Connection* FakeHttpServer::current_connection() {
  return t_current_connection;
}

bool FakeHttpServer::process_and_close_socket(socket_t sock) {
  auto connection = std::make_shared<Connection>(sock);
  {
    std::lock_guard lock(mutex_);
    connections_.insert(connection);
  }
  t_current_connection = connection.get();
  {
    ConnectionStream stream(*connection, shutting_down_,
                            std::chrono::seconds(read_timeout_sec_) +
                                std::chrono::duration_cast<std::chrono::milliseconds>(
                                    std::chrono::microseconds(read_timeout_usec_)),
                            std::chrono::seconds(write_timeout_sec_) +
                                std::chrono::duration_cast<std::chrono::milliseconds>(
                                    std::chrono::microseconds(write_timeout_usec_)));
    std::size_t remaining = keep_alive_max_count_;
    while (remaining > 0 && !shutting_down_ && !connection->aborted()) {
      if (!stream.wait_for_next_request(std::chrono::seconds(keep_alive_timeout_sec_))) break;
      bool connection_closed = false;
      const bool ok = process_request(stream, remaining == 1, connection_closed, nullptr);
      if (!ok || connection_closed) break;
      --remaining;
    }
  }
  t_current_connection = nullptr;
  {
    std::lock_guard lock(mutex_);
    connections_.erase(connection);
  }
  if (connection->aborted()) {
    // SO_LINGER with a zero timeout makes close() send RST instead of FIN.
    linger reset{1, 0};
    ::setsockopt(sock, SOL_SOCKET, SO_LINGER, &reset, sizeof reset);
  } else {
    ::shutdown(sock, SHUT_RDWR);
  }
  ::close(sock);
  return true;
}

std::function<httplib::TaskQueue*()> thread_per_connection_queue() {
  // httplib takes ownership of the returned queue (it wraps it in a unique_ptr).
  return [] { return new ThreadPerConnectionQueue(); };
}

}  // namespace gpushare::testing::fakeapi
