#include <gtest/gtest.h>

#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "gpushare/apiclient/api_client.h"
#include "test_util.h"

namespace gpushare::apiclient {
namespace {

using namespace std::chrono_literals;
using testing::RecordingSleeper;
using testing::TestServer;

ClusterConfig config_for(const TestServer& server) {
  ClusterConfig config;
  config.server = server.url();
  config.source = "test";
  return config;
}

std::string node_list(int count, const std::string& rv, const std::string& continue_token = "") {
  Json list = {{"kind", "NodeList"}, {"apiVersion", "v1"}, {"items", Json::array()}};
  list["metadata"] = {{"resourceVersion", rv}};
  if (!continue_token.empty()) list["metadata"]["continue"] = continue_token;
  for (int i = 0; i < count; ++i) {
    list["items"].push_back(
        {{"metadata", {{"name", "node-" + std::to_string(i)}, {"labels", {{"x", "]}\"{["}}}}}});
  }
  return list.dump();
}

// Serves `body` in chunks of `chunk` bytes (chunked transfer encoding); with `cut_after`, the
// connection is dropped after that many bytes.
void serve_in_chunks(httplib::Response& res, std::string body, std::size_t chunk,
                     std::size_t cut_after = std::string::npos) {
  auto shared = std::make_shared<std::string>(std::move(body));
  res.set_chunked_content_provider(
      "application/json", [shared, chunk, cut_after](std::size_t offset, httplib::DataSink& sink) {
        const std::size_t end = std::min(shared->size(), cut_after);
        if (offset >= end) {
          if (cut_after != std::string::npos) return false;  // drops the connection
          sink.done();
          return true;
        }
        const std::size_t length = std::min(chunk, end - offset);
        return sink.write(shared->data() + offset, length);
      });
}

// httplib gzips this body (libcurl accepts gzip): the decoder sees the decompressed bytes.
TEST(ApiClientList, StreamsTheItemsOfAChunkedBody) {
  TestServer server;
  const std::string body = node_list(300, "42", "next-page");
  server.http().Get("/api/v1/nodes", [&](const httplib::Request& req, httplib::Response& res) {
    EXPECT_EQ(req.get_param_value("limit"), "500");
    serve_in_chunks(res, body, 61);
  });
  server.start();

  ApiClient client(config_for(server), testing::fast_client_options());
  std::vector<std::string> names;
  auto page = client.list("/api/v1/nodes",
                          [&](const json::Value& item) {
                            names.emplace_back(item["metadata"]["name"].get_string().value());
                          },
                          {.query = {{"limit", "500"}}});
  ASSERT_TRUE(page.ok()) << page.error().describe();
  ASSERT_EQ(names.size(), 300u);
  EXPECT_EQ(names.front(), "node-0");
  EXPECT_EQ(names.back(), "node-299");
  EXPECT_EQ(page.value().items, 300u);
  EXPECT_EQ(page.value().resource_version, "42");
  EXPECT_EQ(page.value().continue_token, "next-page");
  EXPECT_EQ(page.value().metadata["continue"], "next-page");
  EXPECT_EQ(page.value().body_bytes, body.size());
}

TEST(ApiClientList, AMalformedBodyIsADecodeErrorAndIsNotRetried) {
  TestServer server;
  int calls = 0;
  server.http().Get("/api/v1/nodes", [&](const httplib::Request&, httplib::Response& res) {
    ++calls;
    res.set_content(R"({"metadata":{"resourceVersion":"1"},"items":[{"a":1},{"b":]})",
                    "application/json");
  });
  server.start();

  ApiClient client(config_for(server), testing::fast_client_options());
  std::size_t delivered = 0;
  auto page = client.list("/api/v1/nodes", [&](const json::Value&) { ++delivered; });
  ASSERT_FALSE(page.ok());
  EXPECT_EQ(page.error().kind, ErrorKind::kDecode);
  EXPECT_NE(page.error().describe().find("list item 1 is not valid JSON"), std::string::npos)
      << page.error().describe();
  EXPECT_EQ(delivered, 1u);
  EXPECT_EQ(calls, 1);
}

TEST(ApiClientList, ATruncatedBodyIsADecodeError) {
  TestServer server;
  server.http().Get("/api/v1/nodes", [&](const httplib::Request&, httplib::Response& res) {
    res.set_content(R"({"metadata":{"resourceVersion":"1"},"items":[{"a":1})", "application/json");
  });
  server.start();
  ApiClient client(config_for(server), testing::fast_client_options());
  auto page = client.list("/api/v1/nodes", [](const json::Value&) {});
  ASSERT_FALSE(page.ok());
  EXPECT_EQ(page.error().kind, ErrorKind::kDecode);
  EXPECT_NE(page.error().describe().find("ended early"), std::string::npos)
      << page.error().describe();
}

TEST(ApiClientList, ErrorStatusesAreDecodedFromTheBody) {
  TestServer server;
  server.http().Get("/api/v1/pods", [](const httplib::Request&, httplib::Response& res) {
    res.status = 410;
    res.set_content(
        testing::status_body(410, "Expired", "The provided continue parameter is too old"),
        "application/json");
  });
  server.start();
  ApiClient client(config_for(server), testing::fast_client_options());
  std::size_t delivered = 0;
  auto page = client.list("/api/v1/pods", [&](const json::Value&) { ++delivered; });
  ASSERT_FALSE(page.ok());
  EXPECT_TRUE(page.error().is_expired()) << page.error().describe();
  EXPECT_EQ(delivered, 0u) << "a Status body is not a list";
}

TEST(ApiClientList, RetriedBeforeAnyItemArrived) {
  TestServer server;
  int calls = 0;
  server.http().Get("/api/v1/nodes", [&](const httplib::Request&, httplib::Response& res) {
    if (++calls == 1) {
      res.status = 503;
      res.set_content(testing::status_body(503, "ServiceUnavailable", "later"), "application/json");
      return;
    }
    res.set_content(node_list(2, "7"), "application/json");
  });
  server.start();
  RecordingSleeper sleeper;
  ApiClient client(config_for(server), testing::fast_client_options(&sleeper));
  std::size_t delivered = 0;
  auto page = client.list("/api/v1/nodes", [&](const json::Value&) { ++delivered; });
  ASSERT_TRUE(page.ok()) << page.error().describe();
  EXPECT_EQ(calls, 2);
  EXPECT_EQ(delivered, 2u);
  EXPECT_EQ(page.value().resource_version, "7");
}

TEST(ApiClientList, NotRetriedOnceItemsWereHandedOver) {
  TestServer server;
  int calls = 0;
  const std::string body = node_list(50, "9");
  // httplib would gzip the chunks (libcurl accepts gzip) and hold them in the compressor until
  // the end, so nothing would arrive before the drop: serve this one uncompressed.
  server.http().set_pre_routing_handler([](const httplib::Request& request, httplib::Response&) {
    const_cast<httplib::Request&>(request).headers.erase("Accept-Encoding");
    return httplib::Server::HandlerResponse::Unhandled;
  });
  server.http().Get("/api/v1/nodes", [&](const httplib::Request&, httplib::Response& res) {
    ++calls;
    serve_in_chunks(res, body, 100, body.size() / 2);  // the connection drops mid-list
  });
  server.start();
  RecordingSleeper sleeper;
  ApiClient client(config_for(server), testing::fast_client_options(&sleeper));
  std::size_t delivered = 0;
  auto page = client.list("/api/v1/nodes", [&](const json::Value&) { ++delivered; });
  ASSERT_FALSE(page.ok());
  EXPECT_GT(delivered, 0u);
  EXPECT_LT(delivered, 50u);
  EXPECT_EQ(calls, 1) << "the caller restarts the list; a retry would deliver items twice";
  EXPECT_TRUE(sleeper.sleeps().empty());
}

TEST(ApiClientList, AnExceptionFromTheCallbackAbortsTheList) {
  TestServer server;
  server.http().Get("/api/v1/nodes", [&](const httplib::Request&, httplib::Response& res) {
    res.set_content(node_list(10, "3"), "application/json");
  });
  server.start();
  ApiClient client(config_for(server), testing::fast_client_options());
  int calls = 0;
  auto page = client.list("/api/v1/nodes", [&](const json::Value&) {
    if (++calls == 3) throw std::runtime_error("bad node");
  });
  ASSERT_FALSE(page.ok());
  EXPECT_EQ(page.error().kind, ErrorKind::kDecode);
  EXPECT_NE(page.error().describe().find("list item rejected by the handler: bad node"),
            std::string::npos)
      << page.error().describe();
  EXPECT_EQ(calls, 3);
}

}  // namespace
}  // namespace gpushare::apiclient
