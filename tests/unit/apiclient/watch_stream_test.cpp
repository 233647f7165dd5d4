#include <gtest/gtest.h>

#include <condition_variable>
#include <future>

#include "gpushare/apiclient/api_client.h"
#include "test_util.h"

namespace gpushare::apiclient {
namespace {

using namespace std::chrono_literals;
using testing::TestServer;

// A chunked watch body: the given chunks, then either the end of the stream or a pause that
// lasts until release() (always called before the server stops).
struct StreamScript {
  std::vector<std::string> chunks;
  bool hold_open = false;

  std::mutex mutex;
  std::condition_variable cv;
  bool released = false;
  std::atomic<bool> holding{false};

  void release() {
    {
      std::lock_guard lock(mutex);
      released = true;
    }
    cv.notify_all();
  }

  void serve(httplib::Response& res, std::shared_ptr<StreamScript> self) {
    res.set_chunked_content_provider("application/json",
                                     [self](std::size_t, httplib::DataSink& sink) {
                                       for (const auto& chunk : self->chunks) {
                                         if (!sink.write(chunk.data(), chunk.size())) return false;
                                       }
                                       if (self->hold_open) {
                                         self->holding = true;
                                         std::unique_lock lock(self->mutex);
                                         self->cv.wait(lock, [&] { return self->released; });
                                       }
                                       sink.done();
                                       return true;
                                     });
  }
};

struct ReleaseOnExit {
  std::shared_ptr<StreamScript> script;
  ~ReleaseOnExit() { script->release(); }
};

std::string event(std::string_view type, std::string_view name, std::string_view rv) {
  return nlohmann::json{{"type", type},
                        {"object",
                         {{"kind", "Pod"},
                          {"apiVersion", "v1"},
                          {"metadata", {{"name", name}, {"resourceVersion", rv}}}}}}
      .dump();
}

// Cuts `stream` into pieces of `size` bytes, so events straddle chunk boundaries.
std::vector<std::string> cut(const std::string& stream, std::size_t size) {
  std::vector<std::string> pieces;
  for (std::size_t i = 0; i < stream.size(); i += size) pieces.push_back(stream.substr(i, size));
  return pieces;
}

struct Collected {
  std::mutex mutex;
  std::vector<std::pair<WatchEventType, std::string>> events;
  WatchCallback callback() {
    return [this](WatchEvent&& e) {
      std::lock_guard lock(mutex);
      const Json object = Json::parse(simdjson::minify(e.object));
      events.emplace_back(e.type, object["metadata"].value("name", resource_version_of(object)));
    };
  }
  std::size_t size() {
    std::lock_guard lock(mutex);
    return events.size();
  }
};

ClusterConfig config_for(const TestServer& server) {
  ClusterConfig config;
  config.server = server.url();
  config.bearer_token = "t";
  return config;
}

TEST(Watch, EventsSplitAcrossChunksArriveInOrder) {
  TestServer server;
  auto script = std::make_shared<StreamScript>();
  const std::string stream =
      event("ADDED", "a", "11") + "\n" + event("MODIFIED", "a", "12") +
      event("DELETED", "a", "13") + "\n" +
      R"({"type":"BOOKMARK","object":{"kind":"Pod","metadata":{"resourceVersion":"20"}}})" + "\n";
  script->chunks = cut(stream, 7);
  std::mutex mutex;
  httplib::Params params;
  server.http().Get("/api/v1/pods", [&](const httplib::Request& req, httplib::Response& res) {
    {
      std::lock_guard lock(mutex);
      params = req.params;
    }
    script->serve(res, script);
  });
  server.start();
  ReleaseOnExit release{script};

  ApiClient client(config_for(server), testing::fast_client_options());
  Collected collected;
  const WatchResult result = client.watch(
      "/api/v1/pods",
      {{"resourceVersion", "10"}, {"allowWatchBookmarks", "true"}, {"timeoutSeconds", "300"}},
      collected.callback(), {});
  EXPECT_EQ(result.end, WatchEnd::kClosed) << (result.error ? result.error->describe() : "");
  EXPECT_TRUE(result.established);
  EXPECT_EQ(result.events, 4u);
  const std::vector<std::pair<WatchEventType, std::string>> expected{
      {WatchEventType::kAdded, "a"},
      {WatchEventType::kModified, "a"},
      {WatchEventType::kDeleted, "a"},
      {WatchEventType::kBookmark, "20"}};
  EXPECT_EQ(collected.events, expected);

  std::lock_guard lock(mutex);
  auto param = [&](const char* key) {
    const auto it = params.find(key);
    return it == params.end() ? std::string("<none>") : it->second;
  };
  EXPECT_EQ(param("watch"), "1");
  EXPECT_EQ(param("resourceVersion"), "10");
  EXPECT_EQ(param("allowWatchBookmarks"), "true");
  EXPECT_EQ(param("timeoutSeconds"), "300");
}

TEST(Watch, ErrorEventEndsTheWatchWithItsStatus) {
  TestServer server;
  auto script = std::make_shared<StreamScript>();
  script->chunks = {
      event("ADDED", "a", "11"),
      R"json({"type":"ERROR","object":{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"too old resource version: 5 (11)","reason":"Expired","code":410}})json",
      event("ADDED", "never", "12")};
  script->hold_open = true;  // the ERROR alone must end it
  server.http().Get(
      "/w", [&](const httplib::Request&, httplib::Response& res) { script->serve(res, script); });
  server.start();
  ReleaseOnExit release{script};

  ApiClient client(config_for(server), testing::fast_client_options());
  Collected collected;
  const WatchResult result = client.watch("/w", {}, collected.callback(), {});
  ASSERT_EQ(result.end, WatchEnd::kErrorEvent);
  ASSERT_TRUE(result.error);
  EXPECT_TRUE(result.error->is_expired());
  EXPECT_EQ(result.error->http_code, 410);
  EXPECT_EQ(result.error->reason, "Expired");
  EXPECT_EQ(result.events, 1u);
  EXPECT_EQ(collected.size(), 1u);
}

TEST(Watch, HttpErrorStatusIsDecoded) {
  TestServer server;
  server.http().Get("/w", [](const httplib::Request&, httplib::Response& res) {
    res.status = 410;
    res.set_content(testing::status_body(410, "Expired", "too old resource version: 1 (50)"),
                    "application/json");
  });
  server.start();
  ApiClient client(config_for(server), testing::fast_client_options());
  Collected collected;
  const WatchResult result = client.watch("/w", {}, collected.callback(), {});
  ASSERT_EQ(result.end, WatchEnd::kHttpError);
  EXPECT_FALSE(result.established);
  EXPECT_TRUE(result.error->is_expired());
  EXPECT_EQ(result.events, 0u);
}

TEST(Watch, StopIsPromptWhileTheStreamIsIdle) {
  TestServer server;
  auto script = std::make_shared<StreamScript>();
  script->chunks = {event("ADDED", "a", "1")};
  script->hold_open = true;
  server.http().Get(
      "/w", [&](const httplib::Request&, httplib::Response& res) { script->serve(res, script); });
  server.start();
  ReleaseOnExit release{script};

  ApiClient client(config_for(server), testing::fast_client_options());
  Collected collected;
  std::stop_source stop;
  auto pending = std::async(std::launch::async, [&] {
    return client.watch("/w", {}, collected.callback(), stop.get_token());
  });
  ASSERT_TRUE(testing::wait_until([&] { return collected.size() == 1 && script->holding.load(); }));
  stop.request_stop();
  ASSERT_EQ(pending.wait_for(10s), std::future_status::ready) << "stop not noticed";
  const WatchResult result = pending.get();
  EXPECT_EQ(result.end, WatchEnd::kStopped);
  EXPECT_FALSE(result.error);
  EXPECT_EQ(result.events, 1u);
}

TEST(Watch, HandlerExceptionEndsTheWatch) {
  TestServer server;
  auto script = std::make_shared<StreamScript>();
  script->chunks = {event("ADDED", "a", "1") + event("ADDED", "b", "2")};
  script->hold_open = true;
  server.http().Get(
      "/w", [&](const httplib::Request&, httplib::Response& res) { script->serve(res, script); });
  server.start();
  ReleaseOnExit release{script};
  ApiClient client(config_for(server), testing::fast_client_options());
  int calls = 0;
  const WatchResult result = client.watch("/w", {},
                                          [&](WatchEvent&&) {
                                            ++calls;
                                            throw std::runtime_error("cache full");
                                          },
                                          {});
  EXPECT_EQ(result.end, WatchEnd::kHandlerError);
  EXPECT_NE(result.error->message.find("cache full"), std::string::npos);
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(result.events, 0u);
}

TEST(Watch, MalformedAndTruncatedStreams) {
  TestServer server;
  auto garbage = std::make_shared<StreamScript>();
  garbage->chunks = {event("ADDED", "a", "1") + "\nthis is not json\n"};
  auto truncated = std::make_shared<StreamScript>();
  truncated->chunks = {event("ADDED", "a", "1"), R"({"type":"MODIFIED","object":{"meta)"};
  auto unknown = std::make_shared<StreamScript>();
  unknown->chunks = {R"({"type":"RENAMED","object":{}})"};
  server.http().Get("/garbage", [&](const httplib::Request&, httplib::Response& res) {
    garbage->serve(res, garbage);
  });
  server.http().Get("/truncated", [&](const httplib::Request&, httplib::Response& res) {
    truncated->serve(res, truncated);
  });
  server.http().Get("/unknown", [&](const httplib::Request&, httplib::Response& res) {
    unknown->serve(res, unknown);
  });
  server.start();
  ApiClient client(config_for(server), testing::fast_client_options());

  Collected a;
  WatchResult result = client.watch("/garbage", {}, a.callback(), {});
  EXPECT_EQ(result.end, WatchEnd::kDecodeError);
  EXPECT_EQ(result.events, 1u);

  Collected b;
  result = client.watch("/truncated", {}, b.callback(), {});
  EXPECT_EQ(result.end, WatchEnd::kTransportError);
  EXPECT_TRUE(result.established);
  EXPECT_EQ(result.error->transport, TransportFailure::kConnectionLost);
  EXPECT_EQ(result.events, 1u);

  Collected c;
  result = client.watch("/unknown", {}, c.callback(), {});
  EXPECT_EQ(result.end, WatchEnd::kDecodeError);
  EXPECT_NE(result.error->message.find("RENAMED"), std::string::npos);
}

TEST(Watch, ConnectionRefusedIsATransportErrorBeforeEstablishing) {
  int port = 0;
  {
    TestServer server;
    server.start();
    port = server.port();
  }
  ClusterConfig config;
  config.server = "http://127.0.0.1:" + std::to_string(port);
  ApiClient client(config, testing::fast_client_options());
  Collected collected;
  const WatchResult result = client.watch("/w", {}, collected.callback(), {});
  EXPECT_EQ(result.end, WatchEnd::kTransportError);
  EXPECT_FALSE(result.established);
  EXPECT_TRUE(result.error->is_connect_failure());
}

TEST(Watch, UnauthorizedRereadsTokenAndRetriesOnce) {
  testing::TempDir dir;
  const auto token_file = dir.write("token", "stale");
  TestServer server;
  auto script = std::make_shared<StreamScript>();
  script->chunks = {event("ADDED", "a", "1")};
  std::atomic<int> requests{0};
  server.http().Get("/w", [&](const httplib::Request& req, httplib::Response& res) {
    ++requests;
    if (req.get_header_value("Authorization") != "Bearer fresh") {
      res.status = 401;
      res.set_content(testing::status_body(401, "Unauthorized", "Unauthorized"),
                      "application/json");
      return;
    }
    script->serve(res, script);
  });
  server.start();
  testing::FakeClock clock;
  auto options = testing::fast_client_options();
  options.clock = clock.clock();
  ClusterConfig config = config_for(server);
  config.bearer_token.clear();
  config.token_file = token_file.string();
  ApiClient client(config, options);
  testing::write_file(token_file, "fresh");

  Collected collected;
  const WatchResult result = client.watch("/w", {}, collected.callback(), {});
  EXPECT_EQ(result.end, WatchEnd::kClosed) << (result.error ? result.error->describe() : "");
  EXPECT_EQ(result.events, 1u);
  EXPECT_EQ(requests.load(), 2);
}

}  // namespace
}  // namespace gpushare::apiclient
