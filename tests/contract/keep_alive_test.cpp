// Idle keep-alive connections must not make the extender deaf. kube-scheduler's Go client keeps
// up to 25 idle connections per host, and probes and scrapes add more; each idle connection holds
// no server thread while it waits (90 s keep-alive), so a connection beyond the threads is
// answered well within kube-scheduler's 5 s extender time-out.

#include <arpa/inet.h>
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
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
  // Generous for a loaded CI machine, yet far below the 90 s keep-alive.
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

std::string post(std::string_view verb, const std::string& body,
                 std::string_view more_headers = {}) {
  return fmt::format(
      "POST /gpushare-scheduler/{} HTTP/1.1\r\nHost: x\r\nContent-Length: {}\r\n{}\r\n{}", verb,
      body.size(), more_headers, body);
}

std::string scheduling_body() {
  return Json{{"Pod", pod_object("p", "uid-p", 4)}, {"NodeNames", {"gpu-a"}}}.dump();
}

// Lengthens how long a worker keeps a connection for its next request (connection_limits.h), so
// that every request after the first is read by the worker whatever the machine's load.
void keep_on_worker(http::HttpServerOptions& options) {
  options.connections.keep_alive_linger = 10s;
}

// Each request is sent once the previous reply has been read, as kube-scheduler's client does:
// the worker reads each next request itself, and each body is still handed to its route in the
// buffer it was read into.
TEST(KeepAlive, BackToBackRequestsOnOneConnectionAreAllAnsweredInOrder) {
  ExtenderUnderTest extender(small_cluster(), "binpack", 1 << 20, 0, keep_on_worker);
  const auto before = extender.server().request_bodies();
  RawHttpConnection connection(port_of(extender));
  constexpr int kRequests = 20;
  for (int i = 0; i < kRequests; ++i) {
    const bool filter = i % 2 == 0;
    ASSERT_TRUE(connection.send_raw(post(filter ? "filter" : "prioritize", scheduling_body())));
    const auto head = connection.read_head(20s);
    ASSERT_TRUE(head) << i;
    ASSERT_EQ(head->status, 200) << i;
    const auto reply = connection.read_body(*head, 20s);
    ASSERT_TRUE(reply) << i;
    const Json parsed = Json::parse(*reply);
    if (filter) {
      EXPECT_EQ(parsed["NodeNames"], Json::array({"gpu-a"})) << *reply;
    } else {
      ASSERT_EQ(parsed.size(), 1U) << *reply;
      EXPECT_EQ(parsed[0]["Host"], "gpu-a") << *reply;
    }
  }
  const auto after = extender.server().request_bodies();
  EXPECT_EQ(after.in_place, before.in_place + kRequests);
  EXPECT_EQ(after.read, before.read);
}

// A next request that does not arrive whole in time goes back to the reactor: with one worker,
// another connection is served meanwhile, and the slow request is answered once it is complete.
TEST(KeepAlive, ASlowNextRequestDoesNotHoldTheWorker) {
  ExtenderUnderTest extender(
      small_cluster(), "binpack", 1 << 20, 1,
      [](http::HttpServerOptions& options) { options.connections.keep_alive_linger = 200ms; });
  RawHttpConnection slow(port_of(extender));
  ASSERT_EQ(get(slow, "/healthz", 20s), 200);
  const std::string request = post("filter", scheduling_body());
  ASSERT_TRUE(slow.send_raw(request.substr(0, 20)));
  std::this_thread::sleep_for(600ms);  // past the linger: the connection is the reactor's again
  RawHttpConnection other(port_of(extender));
  EXPECT_EQ(get(other, "/healthz", 20s), 200);
  ASSERT_TRUE(slow.send_raw(request.substr(20)));
  const auto head = slow.read_head(20s);
  ASSERT_TRUE(head);
  EXPECT_EQ(head->status, 200);
}

// A next request whose body the budget cannot take now waits in the reactor like any other, and
// is answered once the budget is freed.
TEST(KeepAlive, ANextRequestsBodyWaitsForTheBudget) {
  const std::string body = scheduling_body();
  ExtenderUnderTest extender(small_cluster(), "binpack", 1 << 20, 0,
                             [&](http::HttpServerOptions& options) {
                               keep_on_worker(options);
                               options.connections.body_budget_bytes = body.size();
                             });
  RawHttpConnection kept(port_of(extender));
  ASSERT_EQ(get(kept, "/healthz", 20s), 200);  // its worker now waits for its next request
  RawHttpConnection holder(port_of(extender));
  const std::string first = post("filter", body);
  const std::size_t split = first.size() - body.size() / 2;
  ASSERT_TRUE(holder.send_raw(first.substr(0, split)));  // charged, half sent
  bool charged = false;
  for (int attempt = 0; attempt < 100 && !charged; ++attempt) {
    const auto metrics = extender.client().Get("/metrics");
    charged = metrics && metrics->body.find(fmt::format("\ngpushare_http_body_bytes {}\n",
                                                        body.size())) != std::string::npos;
    if (!charged) std::this_thread::sleep_for(50ms);
  }
  ASSERT_TRUE(charged);
  ASSERT_TRUE(kept.send_raw(post("filter", body)));
  EXPECT_FALSE(kept.read_head(300ms)) << "answered although the budget is spent";
  ASSERT_TRUE(holder.send_raw(first.substr(split)));
  for (RawHttpConnection* connection : {&holder, &kept}) {
    const auto head = connection->read_head(20s);
    ASSERT_TRUE(head);
    EXPECT_EQ(head->status, 200);
    const auto reply = connection->read_body(*head, 20s);
    ASSERT_TRUE(reply);
    EXPECT_EQ(Json::parse(*reply)["NodeNames"], Json::array({"gpu-a"}));
  }
}

// A reply's header block is held for its body; one without a body (HEAD) is sent all the same.
TEST(KeepAlive, AReplyWithoutABodyIsSent) {
  ExtenderUnderTest extender(small_cluster());
  RawHttpConnection connection(port_of(extender));
  connection.send_request("HEAD", "/healthz");
  const auto head = connection.read_head(20s);
  ASSERT_TRUE(head);
  EXPECT_EQ(head->status, 200);
  EXPECT_EQ(get(connection, "/version", 20s), 200);
}

// "100 Continue" is not held back like a final reply's header block: the client sends its body
// only once it has it.
TEST(KeepAlive, AClientExpecting100ContinueGetsItBeforeItSendsTheBody) {
  ExtenderUnderTest extender(small_cluster());
  RawHttpConnection connection(port_of(extender));
  const std::string body = scheduling_body();
  const std::string request = post("filter", body, "Expect: 100-continue\r\n");
  ASSERT_TRUE(connection.send_raw(request.substr(0, request.size() - body.size())));
  const auto interim = connection.read_head(20s);
  ASSERT_TRUE(interim);
  EXPECT_EQ(interim->status, 100);
  ASSERT_TRUE(connection.send_raw(body));
  const auto head = connection.read_head(20s);
  ASSERT_TRUE(head);
  EXPECT_EQ(head->status, 200);
  const auto reply = connection.read_body(*head, 20s);
  ASSERT_TRUE(reply);
  EXPECT_EQ(Json::parse(*reply)["NodeNames"], Json::array({"gpu-a"}));
}

}  // namespace
}  // namespace gpushare::testing
