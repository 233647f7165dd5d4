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
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "extender_fixture.h"
#include "gpushare/http/connection_thread_pool.h"
#include "gpushare/http/http_server.h"
#include "support/raw_http_connection.h"

namespace gpushare::testing {
namespace {

using namespace std::chrono_literals;

// The status of a reply that arrives within `wait` (its body read too, so the connection is
// ready for the next request); nullopt if none came.
std::optional<int> read_reply(RawHttpConnection& connection, std::chrono::milliseconds wait) {
  const auto head = connection.read_head(wait);
  if (!head || !connection.read_body(*head, wait)) return std::nullopt;
  return head->status;
}

// GET on a connection kept open between requests, like a pooled Go connection.
std::optional<int> get(RawHttpConnection& connection, std::string_view path,
                       std::chrono::milliseconds wait) {
  connection.send_request("GET", path);
  return read_reply(connection, wait);
}

std::uint16_t port_of(const ExtenderUnderTest& extender) {
  return static_cast<std::uint16_t>(extender.port());
}

Json small_cluster() {
  return cluster_list({node_object("gpu-a", 2, 32)});
}

TEST(KeepAlive, ManyIdleConnectionsDoNotStarveANewOne) {
  ExtenderUnderTest extender(small_cluster());
  // Twice httplib's old fixed pool, and more than kube-scheduler's 25 idle connections.
  std::vector<std::unique_ptr<RawHttpConnection>> idle;
  for (int i = 0; i < 40; ++i) {
    idle.push_back(
        std::make_unique<RawHttpConnection>(port_of(extender)));  // throws if it cannot connect
    ASSERT_EQ(get(*idle.back(), "/healthz", 10s), 200) << "connection " << i;
  }
  RawHttpConnection fresh(port_of(extender));
  // Generous for a loaded CI machine, yet far below the 90 s keep-alive that used to block it.
  EXPECT_EQ(get(fresh, "/healthz", 20s), 200);
  // The idle ones still work too.
  EXPECT_EQ(get(*idle.front(), "/healthz", 10s), 200);
  EXPECT_EQ(get(*idle.back(), "/healthz", 10s), 200);
}

// Above --max-connections, a connection waits (in the listen backlog) until another closes.
TEST(KeepAlive, AboveTheLimitAConnectionWaitsUntilAnotherCloses) {
  ExtenderUnderTest extender(
      small_cluster(), "binpack", 1 << 20, 0,
      [](http::HttpServerOptions& options) { options.connections.max_connections = 3; });
  auto first = std::make_unique<RawHttpConnection>(port_of(extender));
  RawHttpConnection second(port_of(extender));
  RawHttpConnection third(port_of(extender));
  ASSERT_EQ(get(*first, "/healthz", 10s), 200);
  ASSERT_EQ(get(second, "/healthz", 10s), 200);
  ASSERT_EQ(get(third, "/healthz", 10s), 200);

  RawHttpConnection waiting(port_of(extender));
  EXPECT_EQ(get(waiting, "/healthz", 300ms), std::nullopt)
      << "served although 3 connections are open";

  // Closing one connection lets the waiting one in.
  first.reset();
  EXPECT_EQ(read_reply(waiting, 20s), 200);
}

TEST(KeepAlive, MetricsCountConnectionsAndTheLimit) {
  ExtenderUnderTest extender(
      small_cluster(), "binpack", 1 << 20, 0,
      [](http::HttpServerOptions& options) { options.connections.max_connections = 16; });
  std::vector<std::unique_ptr<RawHttpConnection>> idle;
  for (int i = 0; i < 5; ++i) {
    idle.push_back(std::make_unique<RawHttpConnection>(port_of(extender)));
    ASSERT_EQ(get(*idle.back(), "/healthz", 10s), 200);
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
