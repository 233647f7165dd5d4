// --max-buffered-body-bytes (connection_reactor.h): a body that does not fit the budget waits,
// unread, until the bodies in flight are answered, and is then served.

#include <gtest/gtest.h>

#include <chrono>
#include <string>

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

TEST(BodyBudget, ABodyOverTheBudgetWaitsForTheOneInFlightAndIsThenServed) {
  const std::string body =
      Json{{"Pod", pod_object("p", "uid-p", 4)}, {"NodeNames", {"n1", "n2"}}}.dump();
  // Room for one body: the second must wait while the first is buffered.
  ExtenderUnderTest extender(cluster_list({node_object("n1", 2, 32), node_object("n2", 4, 16)}),
                             "binpack", 1 << 20, 0, [&](extender::HttpServerOptions& options) {
                               options.connections.body_budget_bytes = body.size();
                             });
  ASSERT_GT(extender.port(), 0);
  const auto port = static_cast<std::uint16_t>(extender.port());
  const std::string first = filter_request(body);
  const std::size_t split = first.size() - body.size() / 2;

  RawHttpConnection holder(port);
  ASSERT_TRUE(holder.send_raw(first.substr(0, split)));  // its body is charged, half sent
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

}  // namespace
}  // namespace gpushare::testing
