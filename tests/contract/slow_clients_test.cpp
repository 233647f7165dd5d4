// Slow and greedy clients against the HTTP layer, over raw sockets.
// A connection that trickles its request must cost the server a file descriptor, not a thread:
// with more slow connections open than there are threads, /healthz and filter still answer; a
// client that misses the header or body deadline is cut off; one client cannot hold more than
// its share of connections; and well-behaved keep-alive clients never see a request fail.

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "contract/extender_fixture.h"
#include "support/raw_http_connection.h"

namespace gpushare::testing {
namespace {

using namespace std::chrono_literals;

std::uint16_t port_of(const ExtenderUnderTest& extender) {
  return static_cast<std::uint16_t>(extender.port());
}

Json small_cluster() {
  return cluster_list({node_object("n1", 2, 32), node_object("n2", 4, 16)});
}

std::string filter_body() {
  return Json{{"Pod", pod_object("p", "uid-p", 4)}, {"NodeNames", {"n1", "n2"}}}.dump();
}

// One request on `connection` (kept open); the reply's status, or nullopt if none came.
std::optional<int> exchange(RawHttpConnection& connection, std::string_view method,
                            std::string_view path, std::string_view body = {},
                            std::chrono::milliseconds wait = 30s) {
  std::map<std::string, std::string> headers;
  if (!body.empty()) headers["Content-Type"] = "application/json";
  connection.send_request(method, path, headers, body);
  const auto head = connection.read_head(wait);
  if (!head || !connection.read_body(*head, wait)) return std::nullopt;
  return head->status;
}

// Connections that each send a request's first bytes, then one more header byte now and then.
class Trickle {
 public:
  Trickle(std::uint16_t port, int count) {
    for (int i = 0; i < count; ++i) {
      connections_.push_back(std::make_unique<RawHttpConnection>(port));
      connections_.back()->send_raw("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ");
    }
    thread_ = std::jthread([this](std::stop_token stop) {
      while (!stop.stop_requested()) {
        for (auto& connection : connections_) connection->send_raw("a", 1s);
        std::this_thread::sleep_for(200ms);
      }
    });
  }
  std::size_t open() const {
    std::size_t open = 0;
    for (const auto& connection : connections_) open += connection->closed_by_peer(1ms) ? 0 : 1;
    return open;
  }
  void stop() {
    thread_.request_stop();
    thread_.join();
  }

 private:
  std::vector<std::unique_ptr<RawHttpConnection>> connections_;
  std::jthread thread_;
};

// ~520 slow connections used to hold every thread of the pool; here 300 against 8 threads.
TEST(SlowClients, ManySlowConnectionsDoNotBlockHealthzOrFilter) {
  ExtenderUnderTest extender(
      small_cluster(), "binpack", 1 << 20, /*http_threads=*/8,
      [](http::HttpServerOptions& options) { options.connections.header_timeout = 120s; });
  Trickle slow(port_of(extender), 300);

  RawHttpConnection probe(port_of(extender));
  EXPECT_EQ(exchange(probe, "GET", "/healthz"), 200);
  EXPECT_EQ(exchange(probe, "POST", "/gpushare-scheduler/filter", filter_body()), 200);
  RawHttpConnection another(port_of(extender));
  EXPECT_EQ(exchange(another, "POST", "/gpushare-scheduler/filter", filter_body()), 200);
  // The slow ones are still open: they were not cut to make room.
  EXPECT_EQ(slow.open(), 300u);
  slow.stop();
}

TEST(SlowClients, AClientThatMissesTheHeaderDeadlineIsDisconnected) {
  ExtenderUnderTest extender(
      small_cluster(), "binpack", 1 << 20, 0,
      [](http::HttpServerOptions& options) { options.connections.header_timeout = 300ms; });
  RawHttpConnection trickling(port_of(extender));
  ASSERT_TRUE(trickling.send_raw("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n"));
  RawHttpConnection silent(port_of(extender));  // never sends a byte

  // A byte now and then does not extend the deadline.
  bool cut = false;
  for (int i = 0; i < 100 && !cut; ++i) {
    cut = !trickling.send_raw("X", 1s) || trickling.closed_by_peer(100ms);
  }
  EXPECT_TRUE(cut) << "still open 10 s after a 300 ms header deadline";
  EXPECT_TRUE(silent.closed_by_peer(20s));

  // A prompt client on a fresh connection is served.
  RawHttpConnection prompt(port_of(extender));
  EXPECT_EQ(exchange(prompt, "GET", "/healthz"), 200);
}

TEST(SlowClients, AClientThatMissesTheBodyDeadlineGets408) {
  ExtenderUnderTest extender(
      small_cluster(), "binpack", 1 << 20, 0,
      [](http::HttpServerOptions& options) { options.connections.body_timeout = 300ms; });
  RawHttpConnection slow(port_of(extender));
  ASSERT_TRUE(
      slow.send_raw("POST /gpushare-scheduler/filter HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: "
                    "application/json\r\n"
                    "Content-Length: 1000\r\n\r\n{\"Pod\":"));
  const auto head = slow.read_head(20s);
  ASSERT_TRUE(head);
  EXPECT_EQ(head->status, 408);
  EXPECT_TRUE(slow.closed_by_peer(20s));
}

// A chunked body is read on a worker (only decoding it finds its end), which a slow upload
// holds until the body deadline. Such uploads may hold a quarter of the workers: beyond, 503
// and close; Content-Length requests are still served, and a freed slot is taken again.
TEST(SlowClients, SlowChunkedUploadsCannotTakeEveryWorker) {
  ExtenderUnderTest extender(small_cluster(), "binpack", 1 << 20, /*http_threads=*/8);  // 2 slots
  const std::string chunked_head =
      "POST /gpushare-scheduler/filter HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: "
      "application/json\r\nTransfer-Encoding: chunked\r\n\r\n";
  const std::string body = filter_body();
  const std::string first_chunk = fmt::format("{:x}\r\n{}\r\n", 10, body.substr(0, 10));
  std::vector<std::unique_ptr<RawHttpConnection>> slow;
  for (int i = 0; i < 2; ++i) {
    slow.push_back(std::make_unique<RawHttpConnection>(port_of(extender)));
    ASSERT_TRUE(slow.back()->send_raw(chunked_head + first_chunk));
  }
  // Both are being read (their workers wait for more chunks) before the third arrives.
  std::this_thread::sleep_for(300ms);
  RawHttpConnection third(port_of(extender));
  ASSERT_TRUE(third.send_raw(chunked_head + first_chunk));
  const auto refused = third.read_head(20s);
  ASSERT_TRUE(refused);
  EXPECT_EQ(refused->status, 503);
  EXPECT_TRUE(third.closed_by_peer(20s));
  // Requests with a Content-Length are served meanwhile.
  RawHttpConnection probe(port_of(extender));
  EXPECT_EQ(exchange(probe, "POST", "/gpushare-scheduler/filter", body), 200);
  // The first slow upload finishes: answered, and its slot is free for the next.
  const std::string rest = body.substr(10);
  ASSERT_TRUE(slow[0]->send_raw(fmt::format("{:x}\r\n{}\r\n0\r\n\r\n", rest.size(), rest)));
  const auto answered = slow[0]->read_head(20s);
  ASSERT_TRUE(answered);
  EXPECT_EQ(answered->status, 200);
  EXPECT_TRUE(slow[0]->closed_by_peer(20s));  // a chunked request closes its connection
  // The worker frees the slot just after closing that connection: a retry soon gets it.
  const std::string whole =
      chunked_head + fmt::format("{:x}\r\n{}\r\n0\r\n\r\n", body.size(), body);
  std::optional<int> status;
  for (int attempt = 0; attempt < 50 && status.value_or(503) == 503; ++attempt) {
    if (attempt > 0) std::this_thread::sleep_for(100ms);
    RawHttpConnection next(port_of(extender));
    if (!next.send_raw(whole)) continue;
    if (const auto head = next.read_head(20s)) status = head->status;
  }
  EXPECT_EQ(status, 200);
}

TEST(SlowClients, OneClientCannotOpenMoreThanItsShare) {
  ExtenderUnderTest extender(
      small_cluster(), "binpack", 1 << 20, 0,
      [](http::HttpServerOptions& options) { options.connections.max_connections_per_client = 3; });
  std::vector<std::unique_ptr<RawHttpConnection>> open;
  for (int i = 0; i < 3; ++i) {
    open.push_back(std::make_unique<RawHttpConnection>(port_of(extender)));
    ASSERT_EQ(exchange(*open.back(), "GET", "/healthz"), 200);
  }
  // Refused as soon as it is accepted, before it sends anything.
  RawHttpConnection over(port_of(extender));
  const auto head = over.read_head(20s);
  ASSERT_TRUE(head);
  EXPECT_EQ(head->status, 503);
  EXPECT_TRUE(over.closed_by_peer(20s));

  // Once one closes, the client may open another.
  open.front().reset();
  bool served = false;
  for (int i = 0; i < 100 && !served; ++i) {
    RawHttpConnection again(port_of(extender));
    served = exchange(again, "GET", "/healthz", {}, 20s) == 200;
    if (!served) std::this_thread::sleep_for(50ms);
  }
  EXPECT_TRUE(served);
}

// Item 14: keep-alive clients posting filters back to back, more of them than there are threads,
// with pauses shorter than the keep-alive time-out: every request is answered.
TEST(SlowClients, WellBehavedKeepAliveClientsNeverSeeAFailure) {
  ExtenderUnderTest extender(
      small_cluster(), "binpack", 1 << 20, /*http_threads=*/4,
      [](http::HttpServerOptions& options) { options.connections.keep_alive_timeout = 2s; });
  constexpr int kClients = 16;
  constexpr int kRequests = 40;
  const std::string body = filter_body();
  std::atomic<int> answered{0};
  std::atomic<int> failed{0};
  {
    std::vector<std::jthread> clients;
    for (int c = 0; c < kClients; ++c) {
      clients.emplace_back([&, c] {
        RawHttpConnection connection(port_of(extender));
        for (int r = 0; r < kRequests; ++r) {
          // Now and then idle for a good part of the keep-alive time-out, as a pooled client does.
          if (r % 10 == 9 && c % 2 == 0) std::this_thread::sleep_for(700ms);
          if (exchange(connection, "POST", "/gpushare-scheduler/filter", body) == 200) {
            ++answered;
          } else {
            ++failed;
          }
        }
      });
    }
  }
  EXPECT_EQ(failed.load(), 0);
  EXPECT_EQ(answered.load(), kClients * kRequests);
}

}  // namespace
}  // namespace gpushare::testing
