// --max-buffered-body-bytes (connection_reactor.h): a body that does not fit the budget waits,
// unread, until the bodies in flight are answered (or their connections close), and is then
// served; a body whose size grows as it is read (chunked, gzip) is charged as it grows.

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <httplib.h>

#include <chrono>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <thread>

#include "contract/extender_fixture.h"
#include "support/raw_http_connection.h"

namespace gpushare::testing {
namespace {

using namespace std::chrono_literals;

std::string filter_request(const std::string& body) {
  return "POST /gpushare-scheduler/filter HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
         "Content-Length: " +
         std::to_string(body.size()) + "\r\n\r\n" + body;
}

std::string valid_filter_body(std::size_t padded_to = 0) {
  std::string body = Json{{"Pod", pod_object("p", "uid-p", 4)}, {"NodeNames", {"n1", "n2"}}}.dump();
  if (body.size() < padded_to) body.append(padded_to - body.size(), ' ');
  return body;
}

ExtenderUnderTest budgeted_extender(std::size_t budget) {
  return ExtenderUnderTest(
      cluster_list({node_object("n1", 2, 32), node_object("n2", 4, 16)}), "binpack", 1 << 20, 0,
      [&](http::HttpServerOptions& options) { options.connections.body_budget_bytes = budget; });
}

// An unlabelled gauge from /metrics.
std::optional<double> metric_value(const ExtenderUnderTest& extender, std::string_view name) {
  auto scrape = extender.client().Get("/metrics");
  if (!scrape) return std::nullopt;
  const std::string prefix = std::string(name) + " ";
  std::istringstream lines(scrape->body);
  for (std::string line; std::getline(lines, line);) {
    if (line.starts_with(prefix)) return std::stod(line.substr(prefix.size()));
  }
  return std::nullopt;
}

// gpushare_http_connections (the scrape's own connection included).
std::optional<double> open_connections(const ExtenderUnderTest& extender) {
  return metric_value(extender, "gpushare_http_connections");
}

// Whether gpushare_http_body_bytes (the budget in use) reaches `bytes` within 5 s.
bool body_bytes_reach(const ExtenderUnderTest& extender, std::size_t bytes) {
  for (int attempt = 0; attempt < 100; ++attempt) {
    const std::optional<double> charged = metric_value(extender, "gpushare_http_body_bytes");
    if (charged && *charged >= static_cast<double>(bytes)) return true;
    std::this_thread::sleep_for(50ms);
  }
  return false;
}

TEST(BodyBudget, ABodyOverTheBudgetWaitsForTheOneInFlightAndIsThenServed) {
  const std::string body =
      Json{{"Pod", pod_object("p", "uid-p", 4)}, {"NodeNames", {"n1", "n2"}}}.dump();
  // Room for one body: the second must wait while the first is buffered.
  ExtenderUnderTest extender(cluster_list({node_object("n1", 2, 32), node_object("n2", 4, 16)}),
                             "binpack", 1 << 20, 0, [&](http::HttpServerOptions& options) {
                               options.connections.body_budget_bytes = body.size();
                             });
  ASSERT_GT(extender.port(), 0);
  const auto port = static_cast<std::uint16_t>(extender.port());
  const std::string first = filter_request(body);
  const std::size_t split = first.size() - body.size() / 2;

  RawHttpConnection holder(port);
  ASSERT_TRUE(holder.send_raw(first.substr(0, split)));  // its body is charged, half sent
  // Charged before the second body arrives, or the reactor could admit that one first.
  ASSERT_TRUE(body_bytes_reach(extender, body.size()));
  RawHttpConnection waiter(port);
  ASSERT_TRUE(waiter.send_raw(filter_request(body)));
  // Not answered while the first body holds the budget (nothing may come, however long).
  EXPECT_FALSE(waiter.read_head(300ms));

  ASSERT_TRUE(holder.send_raw(first.substr(split)));
  for (RawHttpConnection* connection : {&holder, &waiter}) {
    const auto head = connection->read_head(10s);
    ASSERT_TRUE(head);
    EXPECT_EQ(head->status, 200);
    const auto reply = connection->read_body(*head, 10s);
    ASSERT_TRUE(reply);
    EXPECT_EQ(Json::parse(*reply)["NodeNames"], Json::array({"n1", "n2"}));
  }
}

// A holder whose body holds the whole budget (announced, half sent) and a waiter whose complete
// body waits for it.
class BodyBudgetWaiter : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(holder.send_raw(first.substr(0, first.size() - body.size() / 2)));
    ASSERT_TRUE(body_bytes_reach(extender, body.size()));  // the holder is charged first
    ASSERT_TRUE(waiter.send_raw(filter_request(body)));
    EXPECT_FALSE(waiter.read_head(300ms));  // waits for the budget
  }

  const std::string body = valid_filter_body();
  ExtenderUnderTest extender = budgeted_extender(body.size());
  const std::uint16_t port = static_cast<std::uint16_t>(extender.port());
  const std::string first = filter_request(body);
  RawHttpConnection holder{port};
  RawHttpConnection waiter{port};
};

// A connection that reset while it held the budget freed it but woke nobody: the body waiting
// behind it was never answered.
TEST_F(BodyBudgetWaiter, IsServedWhenTheHolderResets) {
  holder.reset();
  const auto head = waiter.read_head(10s);
  ASSERT_TRUE(head);
  EXPECT_EQ(head->status, 200);
}

// A connection waiting for the budget is not read; when it resets, epoll reports its hang-up on
// every turn (level-triggered, whatever the interest), so the reactor must drop it at once
// rather than spin on it until an unrelated event.
TEST_F(BodyBudgetWaiter, IsDroppedWhenItResets) {
  waiter.reset();
  // Open: the holder and the scrape itself (earlier scrapes' connections may still be closing).
  std::optional<double> open;
  for (int attempt = 0; attempt < 100; ++attempt) {
    open = open_connections(extender);
    if (open && *open <= 2) break;
    std::this_thread::sleep_for(100ms);
  }
  ASSERT_TRUE(open);
  EXPECT_LE(*open, 2);
  // The holder is still served.
  ASSERT_TRUE(holder.send_raw(first.substr(first.size() - body.size() / 2)));
  const auto head = holder.read_head(10s);
  ASSERT_TRUE(head);
  EXPECT_EQ(head->status, 200);
}

// A body waits for the budget at most --http-body-timeout, then gets 503 with Retry-After (the
// holder's charge must outlast that: a body whose reply its client does not read keeps its
// worker, and its charge, until the write times out; a holder still being received would time
// out first and free the budget).
TEST(BodyBudget, ABodyWaitingForTheBudgetPastTheBodyTimeoutGets503) {
  // One node whose text (echoed back by filter) is far larger than loopback's socket buffers.
  Json node = node_object("n1", 2, 32);
  node["metadata"]["annotations"] = {{"padding", std::string(24 << 20, 'x')}};
  const std::string holder_body =
      Json{{"Pod", pod_object("p", "uid-p", 4)}, {"Nodes", {{"items", Json::array({node})}}}}
          .dump();
  ExtenderUnderTest extender(cluster_list({node_object("n1", 2, 32)}), "binpack", 64 << 20, 0,
                             [&](http::HttpServerOptions& options) {
                               options.connections.body_budget_bytes = holder_body.size();
                               // Long enough for the holder's 24 MiB to arrive on a slow,
                               // loaded or instrumented machine; the waiter waits this long.
                               options.connections.body_timeout = 4s;
                             });
  ASSERT_GT(extender.port(), 0);
  const auto port = static_cast<std::uint16_t>(extender.port());
  RawHttpConnection holder(port);
  ASSERT_TRUE(holder.send_raw(filter_request(holder_body)));  // answered, its reply never read
  // The holder's charge shows until its worker is done writing.
  ASSERT_TRUE(body_bytes_reach(extender, holder_body.size()));

  RawHttpConnection waiter(port);
  ASSERT_TRUE(waiter.send_raw(filter_request(valid_filter_body())));
  const auto head = waiter.read_head(30s);
  ASSERT_TRUE(head);
  EXPECT_EQ(head->status, 503);
  EXPECT_EQ(head->headers.contains("retry-after") ? head->headers.at("retry-after") : "", "1");
  EXPECT_TRUE(waiter.closed_by_peer());
  holder.reset();  // frees the holder's worker (its write fails)
}

// A chunked body announces no size: its bytes are charged as they are decoded, so uploads that
// hold back their last chunk cannot exceed the budget: while another body holds the budget, one
// that would exceed it is refused (503, Retry-After; a body on a worker cannot wait without holding
// the worker).
TEST(BodyBudget, AChunkedBodyIsChargedAsItArrives) {
  ExtenderUnderTest extender = budgeted_extender(1024);
  ASSERT_GT(extender.port(), 0);
  const auto port = static_cast<std::uint16_t>(extender.port());
  const std::string head =
      "POST /gpushare-scheduler/filter HTTP/1.1\r\nHost: x\r\nContent-Type: "
      "application/json\r\nTransfer-Encoding: chunked\r\n\r\n";
  const std::string body = valid_filter_body(4096);
  // The first upload sends 4 KiB and holds back the rest: alone, it may exceed the budget.
  RawHttpConnection holder(port);
  ASSERT_TRUE(holder.send_raw(head + fmt::format("{:x}\r\n{}\r\n", body.size(), body)));
  // Its worker charges the bytes as it decodes them: wait until they show in the gauge, or a
  // second body charged first would make the holder the one refused.
  ASSERT_TRUE(body_bytes_reach(extender, body.size()));
  // A second body would exceed the budget the holder already exceeds: refused, not queued.
  std::optional<int> status;
  std::string retry_after;
  RawHttpConnection other(port);
  ASSERT_TRUE(other.send_raw(head + fmt::format("{:x}\r\n{}\r\n0\r\n\r\n", body.size(), body)));
  if (const auto reply = other.read_head(10s)) {
    status = reply->status;
    retry_after = reply->headers.contains("retry-after") ? reply->headers.at("retry-after") : "";
  }
  EXPECT_EQ(status, 503);
  EXPECT_EQ(retry_after, "1");
  // The holder finishes: served.
  ASSERT_TRUE(holder.send_raw("0\r\n\r\n"));
  const auto answered = holder.read_head(10s);
  ASSERT_TRUE(answered);
  EXPECT_EQ(answered->status, 200);
}

// A gzip body is charged its decoded size as it inflates, not its compressed size: bodies that
// inflate a thousandfold stay within the budget.
TEST(BodyBudget, AGzipBodyIsChargedItsDecodedSize) {
  const std::string body = valid_filter_body();
  const std::size_t budget = 8 * 1024;
  ExtenderUnderTest extender = budgeted_extender(budget);
  ASSERT_GT(extender.port(), 0);
  const auto port = static_cast<std::uint16_t>(extender.port());
  // A plain body holds part of the budget (announced, half sent).
  const std::string holder_body = valid_filter_body(budget / 2);
  const std::string first = filter_request(holder_body);
  RawHttpConnection holder(port);
  ASSERT_TRUE(holder.send_raw(first.substr(0, first.size() - holder_body.size() / 2)));
  // 64 KiB decoded, well within --max-request-bytes, a few hundred bytes compressed: it fits
  // the budget as announced, not as decoded.
  const std::string inflating = valid_filter_body(64 * 1024);
  // Posted compressed until it gets `wanted` (the holder's charge is made on the reactor thread).
  auto post_until = [&](int wanted) {
    std::optional<int> status;
    for (int attempt = 0; attempt < 50 && status != wanted; ++attempt) {
      if (attempt > 0) std::this_thread::sleep_for(100ms);
      httplib::Client client("127.0.0.1", port);
      client.set_compress(true);
      client.set_read_timeout(10);
      if (auto reply = client.Post("/gpushare-scheduler/filter", inflating, "application/json"))
        status = reply->status;
    }
    return status;
  };
  EXPECT_EQ(post_until(503), 503);
  // Alone, it is served.
  holder.reset();
  EXPECT_EQ(post_until(200), 200);
}

}  // namespace
}  // namespace gpushare::testing
