#include "gpushare/apiclient/api_client.h"

#include <gtest/gtest.h>

#include <condition_variable>
#include <future>
#include <set>

#include "test_util.h"

namespace gpushare::apiclient {
namespace {

using namespace std::chrono_literals;
using testing::RecordingSleeper;
using testing::TempDir;
using testing::TestServer;

ClusterConfig plain_config(const TestServer& server, std::string token = "secret") {
  ClusterConfig config;
  config.server = server.url();
  config.bearer_token = std::move(token);
  config.source = "test";
  return config;
}

// Counts requests per path; thread-safe.
class Counter {
 public:
  int next() { return ++count_; }
  int count() const { return count_.load(); }

 private:
  std::atomic<int> count_{0};
};

TEST(ApiClient, GetSendsHeadersAndParsesJson) {
  TestServer server;
  std::mutex mutex;
  httplib::Headers seen;
  std::string seen_selector;
  server.http().Get("/api/v1/nodes", [&](const httplib::Request& req, httplib::Response& res) {
    std::lock_guard lock(mutex);
    seen = req.headers;
    seen_selector = req.get_param_value("fieldSelector");
    res.set_content(R"({"kind":"NodeList","items":[{"metadata":{"name":"n1"}}]})",
                    "application/json");
  });
  server.start();

  ApiClient client(plain_config(server), testing::fast_client_options());
  auto result =
      client.get("/api/v1/nodes",
                 {.query = {{"fieldSelector", "spec.unschedulable!=true,metadata.name=a b"}}});
  ASSERT_TRUE(result.ok()) << result.error().describe();
  EXPECT_EQ(result.value()["items"][0]["metadata"]["name"], "n1");

  std::lock_guard lock(mutex);
  auto header = [&](const char* name) {
    const auto it = seen.find(name);
    return it == seen.end() ? std::string("<none>") : it->second;
  };
  EXPECT_EQ(header("Accept"), "application/json");
  EXPECT_EQ(header("Authorization"), "Bearer secret");
  EXPECT_TRUE(header("User-Agent").starts_with("gpushare/")) << header("User-Agent");
  EXPECT_EQ(seen_selector, "spec.unschedulable!=true,metadata.name=a b");
}

TEST(ApiClient, WritesCarryMethodBodyAndContentType) {
  TestServer server;
  std::mutex mutex;
  std::vector<std::string> seen;
  auto record = [&](const httplib::Request& req, httplib::Response& res) {
    std::lock_guard lock(mutex);
    seen.push_back(req.method + " " + req.path + " " + req.get_header_value("Content-Type") + " " +
                   req.body);
    res.set_content(R"({"ok":true})", "application/json");
  };
  server.http().Post("/x", record);
  server.http().Put("/x", record);
  server.http().Patch("/x", record);
  server.http().Delete("/x", record);
  server.start();

  ApiClient client(plain_config(server), testing::fast_client_options());
  EXPECT_TRUE(client.post("/x", {{"a", 1}}).ok());
  EXPECT_TRUE(client.put("/x", {{"b", 2}}).ok());
  EXPECT_TRUE(client.patch("/x", {{"c", 3}}, PatchType::kStrategicMerge).ok());
  EXPECT_TRUE(client.patch("/x", {{"d", 4}}, PatchType::kMerge).ok());
  EXPECT_TRUE(client.remove("/x").ok());

  std::lock_guard lock(mutex);
  const std::vector<std::string> expected{
      R"(POST /x application/json {"a":1})",
      R"(PUT /x application/json {"b":2})",
      R"(PATCH /x application/strategic-merge-patch+json {"c":3})",
      R"(PATCH /x application/merge-patch+json {"d":4})",
      "DELETE /x  ",
  };
  EXPECT_EQ(seen, expected);
}

TEST(ApiClient, ServerPathPrefixIsKept) {
  TestServer server;
  server.http().Get("/k8s/clusters/c1/api/v1/nodes",
                    [](const httplib::Request&, httplib::Response& res) {
                      res.set_content("{}", "application/json");
                    });
  server.start();
  auto config = plain_config(server);
  config.server += "/k8s/clusters/c1/";
  ApiClient client(config, testing::fast_client_options());
  auto result = client.get("/api/v1/nodes");
  EXPECT_TRUE(result.ok()) << result.error().describe();
}

TEST(ApiClient, InvalidServerUrlIsAConfigError) {
  ClusterConfig config;
  config.server = "ftp://example.com";
  EXPECT_THROW(ApiClient(config, testing::fast_client_options()), ConfigError);
  config.server = "not a url at all";
  EXPECT_THROW(ApiClient(config, testing::fast_client_options()), ConfigError);
}

TEST(ApiClient, StatusErrorsAreDecoded) {
  TestServer server;
  server.http().Get("/api/v1/namespaces/ns/pods/p1",
                    [](const httplib::Request&, httplib::Response& res) {
                      res.status = 404;
                      res.set_content(testing::status_body(404, "NotFound", "pods \"p1\" not found",
                                                           {{"name", "p1"}, {"kind", "pods"}}),
                                      "application/json");
                    });
  server.start();
  ApiClient client(plain_config(server), testing::fast_client_options());
  auto result = client.get("/api/v1/namespaces/ns/pods/p1");
  ASSERT_FALSE(result.ok());
  EXPECT_TRUE(result.error().is_not_found());
  EXPECT_EQ(result.error().http_code, 404);
  EXPECT_EQ(result.error().details.kind, "pods");
  EXPECT_EQ(client.counters().failures, 1u);
}

TEST(ApiClient, InvalidJsonIsADecodeErrorAndEmptyBodyIsNull) {
  TestServer server;
  server.http().Get("/bad", [](const httplib::Request&, httplib::Response& res) {
    res.set_content("{not json", "application/json");
  });
  server.http().Get("/empty",
                    [](const httplib::Request&, httplib::Response& res) { res.status = 200; });
  server.start();
  ApiClient client(plain_config(server), testing::fast_client_options());
  auto bad = client.get("/bad");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().kind, ErrorKind::kDecode);
  auto empty = client.get("/empty");
  ASSERT_TRUE(empty.ok());
  EXPECT_TRUE(empty.value().is_null());
}

TEST(ApiClient, RetriesHonourRetryAfterHeader) {
  TestServer server;
  Counter calls;
  server.http().Get("/busy", [&](const httplib::Request&, httplib::Response& res) {
    if (calls.next() <= 2) {
      res.status = 429;
      res.set_header("Retry-After", "3");
      res.set_content(testing::status_body(429, "TooManyRequests", "slow down"),
                      "application/json");
      return;
    }
    res.set_content(R"({"done":true})", "application/json");
  });
  server.start();
  RecordingSleeper sleeper;
  ApiClient client(plain_config(server), testing::fast_client_options(&sleeper));
  auto result = client.get("/busy");
  ASSERT_TRUE(result.ok()) << result.error().describe();
  EXPECT_EQ(calls.count(), 3);
  EXPECT_EQ(sleeper.sleeps(), (std::vector<std::chrono::milliseconds>{3s, 3s}));
  EXPECT_EQ(client.counters().retries, 2u);
  EXPECT_EQ(client.counters().requests, 3u);
}

TEST(ApiClient, RetriesHonourRetryAfterSecondsInStatus) {
  TestServer server;
  Counter calls;
  server.http().Get("/rv", [&](const httplib::Request&, httplib::Response& res) {
    if (calls.next() == 1) {
      res.status = 504;
      res.set_content(testing::status_body(504, "Timeout", "Too large resource version",
                                           {{"retryAfterSeconds", 2}}),
                      "application/json");
      return;
    }
    res.set_content("{}", "application/json");
  });
  server.start();
  RecordingSleeper sleeper;
  ApiClient client(plain_config(server), testing::fast_client_options(&sleeper));
  ASSERT_TRUE(client.get("/rv").ok());
  EXPECT_EQ(sleeper.sleeps(), (std::vector<std::chrono::milliseconds>{2s}));
}

TEST(ApiClient, ServerErrorsBackOffWithFullJitterThenGiveUp) {
  TestServer server;
  Counter calls;
  server.http().Get("/down", [&](const httplib::Request&, httplib::Response& res) {
    calls.next();
    res.status = 503;
    res.set_content("unavailable", "text/plain");
  });
  server.start();
  RecordingSleeper sleeper;
  auto options = testing::fast_client_options(&sleeper, /*random01=*/0.5);
  options.retry.max_attempts = 4;
  options.retry.base_delay = 100ms;
  options.retry.max_delay = 300ms;
  ApiClient client(plain_config(server), options);
  auto result = client.get("/down");
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.error().http_code, 503);
  EXPECT_EQ(calls.count(), 4);
  // Ceilings 100, 200, 300 (capped) ms, times the random 0.5.
  EXPECT_EQ(sleeper.sleeps(), (std::vector<std::chrono::milliseconds>{50ms, 100ms, 150ms}));
}

TEST(ApiClient, PostIsNotRetriedUnlessAsked) {
  TestServer server;
  Counter calls;
  server.http().Post("/bind", [&](const httplib::Request&, httplib::Response& res) {
    calls.next();
    res.status = 500;
    res.set_content(testing::status_body(500, "InternalError", "boom"), "application/json");
  });
  server.start();
  RecordingSleeper sleeper;
  ApiClient client(plain_config(server), testing::fast_client_options(&sleeper));
  EXPECT_FALSE(client.post("/bind", {{"a", 1}}).ok());
  EXPECT_EQ(calls.count(), 1);
  EXPECT_TRUE(sleeper.sleeps().empty());

  EXPECT_FALSE(client.post("/bind", {{"a", 1}}, {.retry = true}).ok());
  EXPECT_EQ(calls.count(), 1 + 4);
}

TEST(ApiClient, ClientErrorsAreNotRetried) {
  TestServer server;
  Counter calls;
  server.http().Get("/gone", [&](const httplib::Request&, httplib::Response& res) {
    calls.next();
    res.status = 422;
    res.set_content(testing::status_body(422, "Invalid", "bad"), "application/json");
  });
  server.start();
  ApiClient client(plain_config(server), testing::fast_client_options());
  auto result = client.get("/gone");
  ASSERT_FALSE(result.ok());
  EXPECT_TRUE(result.error().is_invalid());
  EXPECT_EQ(calls.count(), 1);
}

// A port that nothing listens on: bound once by a server that is then stopped.
int closed_port() {
  TestServer server;
  server.start();
  const int port = server.port();
  server.stop();
  return port;
}

TEST(ApiClient, ConnectionRefusedIsRetriedAndClassified) {
  ClusterConfig config;
  config.server = "http://127.0.0.1:" + std::to_string(closed_port());
  RecordingSleeper sleeper;
  ApiClient client(config, testing::fast_client_options(&sleeper));
  auto result = client.get("/api/v1/nodes");
  ASSERT_FALSE(result.ok());
  EXPECT_TRUE(result.error().is_connect_failure()) << result.error().describe();
  EXPECT_EQ(sleeper.sleeps().size(), 3u);  // 4 attempts
}

// Holds requests until released (always before the server stops).
struct Gate {
  std::mutex mutex;
  std::condition_variable cv;
  bool open = false;
  std::atomic<int> waiting{0};
  void wait() {
    std::unique_lock lock(mutex);
    ++waiting;
    cv.wait(lock, [this] { return open; });
  }
  void release() {
    {
      std::lock_guard lock(mutex);
      open = true;
    }
    cv.notify_all();
  }
};

struct ReleaseOnExit {
  std::shared_ptr<Gate> gate;
  ~ReleaseOnExit() { gate->release(); }
};

TEST(ApiClient, TimeoutIsClassified) {
  TestServer server;
  auto gate = std::make_shared<Gate>();
  server.http().Get("/slow", [gate](const httplib::Request&, httplib::Response& res) {
    gate->wait();
    res.set_content("{}", "application/json");
  });
  server.start();
  ReleaseOnExit release{gate};
  auto options = testing::fast_client_options();
  options.retry.max_attempts = 1;
  ApiClient client(plain_config(server), options);
  auto result = client.get("/slow", {.timeout = 200ms});
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.error().transport, TransportFailure::kTimeout) << result.error().describe();
  EXPECT_TRUE(result.error().is_timeout());
}

TEST(ApiClient, StopAbortsAnInFlightRequest) {
  TestServer server;
  auto gate = std::make_shared<Gate>();
  server.http().Get("/hang", [gate](const httplib::Request&, httplib::Response& res) {
    gate->wait();
    res.set_content("{}", "application/json");
  });
  server.start();
  ReleaseOnExit release{gate};
  ApiClient client(plain_config(server), testing::fast_client_options());
  std::stop_source stop;
  auto pending = std::async(std::launch::async,
                            [&] { return client.get("/hang", {.stop = stop.get_token()}); });
  ASSERT_TRUE(testing::wait_until([&] { return gate->waiting.load() == 1; }));
  stop.request_stop();
  ASSERT_EQ(pending.wait_for(10s), std::future_status::ready) << "stop was not noticed";
  auto result = pending.get();
  ASSERT_FALSE(result.ok());
  EXPECT_TRUE(result.error().is_stopped());
}

TEST(ApiClient, StopInterruptsARetryWait) {
  TestServer server;
  server.http().Get("/later", [](const httplib::Request&, httplib::Response& res) {
    res.status = 503;
    res.set_header("Retry-After", "50");
  });
  server.start();
  auto options = testing::fast_client_options();
  options.sleeper = real_sleeper();  // a real 50 s wait unless interrupted
  ApiClient client(plain_config(server), options);
  std::stop_source stop;
  auto pending = std::async(std::launch::async,
                            [&] { return client.get("/later", {.stop = stop.get_token()}); });
  ASSERT_TRUE(testing::wait_until([&] { return client.counters().requests == 1; }));
  stop.request_stop();
  ASSERT_EQ(pending.wait_for(10s), std::future_status::ready);
  EXPECT_TRUE(pending.get().error().is_stopped());
}

TEST(ApiClient, UnauthorizedRereadsTheTokenFileOnce) {
  TempDir dir;
  const auto token_file = dir.write("token", "old-token");
  TestServer server;
  std::mutex mutex;
  std::vector<std::string> tokens_seen;
  server.http().Get("/api", [&](const httplib::Request& req, httplib::Response& res) {
    const auto auth = req.get_header_value("Authorization");
    {
      std::lock_guard lock(mutex);
      tokens_seen.push_back(auth);
    }
    if (auth != "Bearer new-token") {
      res.status = 401;
      res.set_content(testing::status_body(401, "Unauthorized", "Unauthorized"),
                      "application/json");
      return;
    }
    res.set_content("{}", "application/json");
  });
  server.start();

  testing::FakeClock clock;  // never advances: only the 401 path can pick up the new token
  auto options = testing::fast_client_options();
  options.clock = clock.clock();
  ClusterConfig config = plain_config(server, "");
  config.token_file = token_file.string();
  ApiClient client(config, options);

  // Token unchanged on disk: one re-read, no second request, the 401 is returned.
  auto first = client.get("/api");
  ASSERT_FALSE(first.ok());
  EXPECT_TRUE(first.error().is_unauthorized());
  {
    std::lock_guard lock(mutex);
    EXPECT_EQ(tokens_seen, (std::vector<std::string>{"Bearer old-token"}));
  }

  testing::write_file(token_file, "new-token\n");
  auto second = client.get("/api");
  ASSERT_TRUE(second.ok()) << second.error().describe();
  std::lock_guard lock(mutex);
  EXPECT_EQ(tokens_seen,
            (std::vector<std::string>{"Bearer old-token", "Bearer old-token", "Bearer new-token"}));
  EXPECT_EQ(client.counters().token_reloads, 1u);
}

TEST(ApiClient, RotatedTokenIsUsedAfterTheRefreshInterval) {
  TempDir dir;
  const auto token_file = dir.write("token", "t1");
  TestServer server;
  std::mutex mutex;
  std::vector<std::string> tokens_seen;
  server.http().Get("/api", [&](const httplib::Request& req, httplib::Response& res) {
    std::lock_guard lock(mutex);
    tokens_seen.push_back(req.get_header_value("Authorization"));
    res.set_content("{}", "application/json");
  });
  server.start();
  testing::FakeClock clock;
  auto options = testing::fast_client_options();
  options.clock = clock.clock();
  ClusterConfig config = plain_config(server, "");
  config.token_file = token_file.string();
  ApiClient client(config, options);

  ASSERT_TRUE(client.get("/api").ok());
  testing::write_file(token_file, "t2");
  clock.advance(30s);
  ASSERT_TRUE(client.get("/api").ok());
  clock.advance(31s);
  ASSERT_TRUE(client.get("/api").ok());
  std::lock_guard lock(mutex);
  EXPECT_EQ(tokens_seen, (std::vector<std::string>{"Bearer t1", "Bearer t1", "Bearer t2"}));
}

TEST(ApiClient, ConnectionsAreKeptAlive) {
  TestServer server;
  std::mutex mutex;
  std::vector<int> ports;
  server.http().Get("/ping", [&](const httplib::Request& req, httplib::Response& res) {
    std::lock_guard lock(mutex);
    ports.push_back(req.remote_port);
    res.set_content("{}", "application/json");
  });
  server.start();
  ApiClient client(plain_config(server), testing::fast_client_options());
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(client.get("/ping").ok());
  std::lock_guard lock(mutex);
  ASSERT_EQ(ports.size(), 3u);
  EXPECT_EQ(ports[0], ports[1]);
  EXPECT_EQ(ports[1], ports[2]);
}

TEST(ApiClient, ManyThreadsShareOneClient) {
  TestServer server;
  Counter calls;
  server.http().Get(R"(/item/(\d+))", [&](const httplib::Request& req, httplib::Response& res) {
    calls.next();
    res.set_content(nlohmann::json{{"id", std::stoi(req.matches[1])}}.dump(), "application/json");
  });
  server.start();
  ApiClient client(plain_config(server), testing::fast_client_options());
  std::atomic<int> mismatches{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 25; ++i) {
        const int id = t * 100 + i;
        auto result = client.get("/item/" + std::to_string(id));
        if (!result.ok() || result.value()["id"] != id) ++mismatches;
      }
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(mismatches.load(), 0);
  EXPECT_EQ(calls.count(), 200);
}

TEST(ApiClient, OversizedResponseIsRejected) {
  TestServer server;
  server.http().Get("/big", [](const httplib::Request&, httplib::Response& res) {
    res.set_content(std::string(1000, ' ') + "{}", "application/json");
  });
  server.start();
  auto options = testing::fast_client_options();
  options.max_response_bytes = 100;
  ApiClient client(plain_config(server), options);
  auto result = client.get("/big");
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.error().kind, ErrorKind::kDecode);
}

}  // namespace
}  // namespace gpushare::apiclient
