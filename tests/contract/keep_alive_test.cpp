// Idle keep-alive connections must not make the extender deaf. kube-scheduler's Go client keeps
// up to 25 idle connections per host, and probes and scrapes add more; each idle connection holds
// a server thread until its keep-alive times out (90 s). With httplib's fixed pool of 8 threads
// a 9th connection used to wait that long, far past kube-scheduler's 5 s extender time-out.

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <vector>

#include "extender_fixture.h"
#include "gpushare/extender/connection_thread_pool.h"
#include "gpushare/extender/http_server.h"

namespace gpushare::testing {
namespace {

using namespace std::chrono_literals;

// A raw TCP connection that stays open between requests, like a pooled Go connection.
class KeptAliveConnection {
 public:
  explicit KeptAliveConnection(int port) : fd_(::socket(AF_INET, SOCK_STREAM, 0)) {
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(static_cast<std::uint16_t>(port));
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    connected_ =
        fd_ >= 0 && ::connect(fd_, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0;
  }
  ~KeptAliveConnection() { close(); }
  KeptAliveConnection(const KeptAliveConnection&) = delete;
  KeptAliveConnection& operator=(const KeptAliveConnection&) = delete;

  bool connected() const { return connected_; }
  void close() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

  // Sends GET path and returns the status line, or "" if no reply came within the wait.
  std::string get(std::string_view path, std::chrono::milliseconds wait) {
    const std::string request = "GET " + std::string(path) + " HTTP/1.1\r\nHost: test\r\n\r\n";
    if (::send(fd_, request.data(), request.size(), MSG_NOSIGNAL) !=
        static_cast<ssize_t>(request.size()))
      return "";
    return read_status_line(wait);
  }
  // Waits for the whole reply (headers and Content-Length body) of a request sent earlier.
  std::string read_status_line(std::chrono::milliseconds wait) {
    const auto deadline = std::chrono::steady_clock::now() + wait;
    std::size_t header_end = std::string::npos;
    std::size_t reply_size = std::string::npos;
    while (reply_size == std::string::npos || received_.size() < reply_size) {
      if (header_end == std::string::npos &&
          (header_end = received_.find("\r\n\r\n")) != std::string::npos) {
        const std::size_t length_at = received_.find("Content-Length: ");
        const std::size_t body =
            length_at < header_end ? std::stoul(received_.substr(length_at + 16)) : 0;
        reply_size = header_end + 4 + body;
        continue;
      }
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      if (left <= 0ms) return "";
      pollfd readable{fd_, POLLIN, 0};
      if (::poll(&readable, 1, static_cast<int>(left.count())) <= 0) return "";
      char buffer[4096];
      const ssize_t n = ::recv(fd_, buffer, sizeof buffer, 0);
      if (n <= 0) return "";
      received_.append(buffer, static_cast<std::size_t>(n));
    }
    std::string status = received_.substr(0, received_.find("\r\n"));
    received_.erase(0, reply_size);
    return status;
  }

 private:
  int fd_;
  bool connected_ = false;
  std::string received_;  // bytes read but not yet consumed as a reply
};

Json small_cluster() {
  return cluster_list({node_object("gpu-a", 2, 32)});
}

TEST(KeepAlive, ManyIdleConnectionsDoNotStarveANewOne) {
  ExtenderUnderTest extender(small_cluster());
  // Twice httplib's old fixed pool, and more than kube-scheduler's 25 idle connections.
  std::vector<std::unique_ptr<KeptAliveConnection>> idle;
  for (int i = 0; i < 40; ++i) {
    idle.push_back(std::make_unique<KeptAliveConnection>(extender.port()));
    ASSERT_TRUE(idle.back()->connected());
    ASSERT_EQ(idle.back()->get("/healthz", 10s), "HTTP/1.1 200 OK") << "connection " << i;
  }
  KeptAliveConnection fresh(extender.port());
  ASSERT_TRUE(fresh.connected());
  // Generous for a loaded CI machine, yet far below the 90 s keep-alive that used to block it.
  EXPECT_EQ(fresh.get("/healthz", 20s), "HTTP/1.1 200 OK");
  // The idle ones still work too.
  EXPECT_EQ(idle.front()->get("/healthz", 10s), "HTTP/1.1 200 OK");
  EXPECT_EQ(idle.back()->get("/healthz", 10s), "HTTP/1.1 200 OK");
}

// Above --http-threads, a connection waits for a thread (and /metrics says so) until another
// connection closes.
TEST(KeepAlive, AboveTheLimitAConnectionWaitsUntilAnotherCloses) {
  ExtenderUnderTest extender(small_cluster(), "binpack", 1 << 20, /*http_threads=*/3);
  KeptAliveConnection first(extender.port());
  KeptAliveConnection second(extender.port());
  ASSERT_EQ(first.get("/healthz", 10s), "HTTP/1.1 200 OK");
  ASSERT_EQ(second.get("/healthz", 10s), "HTTP/1.1 200 OK");
  // The third thread serves this scrape, so the counts below are exact.
  KeptAliveConnection scraper(extender.port());
  ASSERT_EQ(scraper.get("/healthz", 10s), "HTTP/1.1 200 OK");

  KeptAliveConnection waiting(extender.port());
  ASSERT_TRUE(waiting.connected());
  EXPECT_EQ(waiting.get("/healthz", 300ms), "")
      << "served although all 3 threads hold a connection";

  // Closing one connection frees its thread for the waiting one.
  first.close();
  EXPECT_EQ(waiting.read_status_line(20s), "HTTP/1.1 200 OK");
}

TEST(KeepAlive, MetricsCountConnectionsAndTheLimit) {
  ExtenderUnderTest extender(small_cluster(), "binpack", 1 << 20, /*http_threads=*/16);
  std::vector<std::unique_ptr<KeptAliveConnection>> idle;
  for (int i = 0; i < 5; ++i) {
    idle.push_back(std::make_unique<KeptAliveConnection>(extender.port()));
    ASSERT_EQ(idle.back()->get("/healthz", 10s), "HTTP/1.1 200 OK");
  }
  auto metrics = extender.client().Get("/metrics");
  ASSERT_TRUE(metrics);
  // 5 idle + the scraping connection itself.
  EXPECT_NE(metrics->body.find("\ngpushare_http_connections 6\n"), std::string::npos)
      << metrics->body;
  EXPECT_NE(metrics->body.find("\ngpushare_http_connections_waiting 0\n"), std::string::npos);
  EXPECT_NE(metrics->body.find("\ngpushare_http_connection_limit 16\n"), std::string::npos);
}

}  // namespace
}  // namespace gpushare::testing
