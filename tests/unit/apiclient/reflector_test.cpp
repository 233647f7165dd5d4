#include "gpushare/apiclient/reflector.h"

#include <gtest/gtest.h>

#include <condition_variable>
#include <deque>
#include <future>
#include <set>

#include "test_util.h"

namespace gpushare::apiclient {
namespace {

using namespace std::chrono_literals;
using testing::FakeClock;
using testing::RecordingSleeper;
using testing::TestServer;

// --- a scripted API server for one collection path --------------------------------------

struct ListReply {
  int status = 200;
  std::string body{};
};

struct WatchReply {
  int status = 200;
  std::string body{};                 // for a non-200 status
  std::vector<std::string> chunks{};  // for 200
  bool hold_open = false;             // after the chunks, keep the stream open until shutdown
};

struct RecordedRequest {
  httplib::Params params;
  bool is_watch() const { return params.count("watch") > 0; }
  std::string param(const std::string& key) const {
    const auto it = params.find(key);
    return it == params.end() ? "<none>" : it->second;
  }
  bool has(const std::string& key) const { return params.count(key) > 0; }
};

// Replies to lists and watches from queues, records every request. An exhausted watch queue
// means "hold the watch open"; an exhausted list queue means 503.
class ScriptedServer {
 public:
  explicit ScriptedServer(const std::string& path) {
    server_.http().Get(
        path, [this](const httplib::Request& req, httplib::Response& res) { handle(req, res); });
    server_.start();
  }
  ~ScriptedServer() {
    {
      std::lock_guard lock(mutex_);
      shutting_down_ = true;
    }
    cv_.notify_all();
    server_.stop();
  }

  std::string url() const { return server_.url(); }
  void add_list(ListReply reply) {
    std::lock_guard lock(mutex_);
    lists_.push_back(std::move(reply));
  }
  void add_watch(WatchReply reply) {
    std::lock_guard lock(mutex_);
    watches_.push_back(std::move(reply));
  }
  std::vector<RecordedRequest> requests() const {
    std::lock_guard lock(mutex_);
    return requests_;
  }
  std::vector<RecordedRequest> lists() const { return filtered(false); }
  std::vector<RecordedRequest> watches() const { return filtered(true); }

 private:
  std::vector<RecordedRequest> filtered(bool watch) const {
    std::vector<RecordedRequest> out;
    for (auto& request : requests()) {
      if (request.is_watch() == watch) out.push_back(request);
    }
    return out;
  }

  void handle(const httplib::Request& req, httplib::Response& res) {
    RecordedRequest recorded{req.params};
    std::unique_lock lock(mutex_);
    requests_.push_back(recorded);
    if (!recorded.is_watch()) {
      if (lists_.empty()) {
        res.status = 503;
        res.set_content(testing::status_body(503, "ServiceUnavailable", "no scripted list"),
                        "application/json");
        return;
      }
      ListReply reply = std::move(lists_.front());
      lists_.pop_front();
      res.status = reply.status;
      res.set_content(reply.body, "application/json");
      return;
    }
    WatchReply reply;
    if (watches_.empty()) {
      reply.hold_open = true;
    } else {
      reply = std::move(watches_.front());
      watches_.pop_front();
    }
    lock.unlock();
    if (reply.status != 200) {
      res.status = reply.status;
      res.set_content(reply.body, "application/json");
      return;
    }
    auto shared = std::make_shared<WatchReply>(std::move(reply));
    res.set_chunked_content_provider("application/json",
                                     [this, shared](std::size_t, httplib::DataSink& sink) {
                                       for (const auto& chunk : shared->chunks) {
                                         if (!sink.write(chunk.data(), chunk.size())) return false;
                                       }
                                       if (shared->hold_open) {
                                         std::unique_lock hold(mutex_);
                                         cv_.wait(hold, [this] { return shutting_down_; });
                                       }
                                       sink.done();
                                       return true;
                                     });
  }

  mutable std::mutex mutex_;
  std::condition_variable cv_;
  bool shutting_down_ = false;
  std::deque<ListReply> lists_;
  std::deque<WatchReply> watches_;
  std::vector<RecordedRequest> requests_;
  TestServer server_;
};

// --- bodies ---------------------------------------------------------------------------------

nlohmann::json pod(const std::string& name, const std::string& rv) {
  return {{"metadata", {{"name", name}, {"namespace", "default"}, {"resourceVersion", rv}}}};
}

std::string pod_list(const std::string& rv, const std::vector<std::string>& names,
                     const std::string& continue_token = "") {
  nlohmann::json items = nlohmann::json::array();
  for (const auto& name : names) items.push_back(pod(name, rv));
  nlohmann::json metadata{{"resourceVersion", rv}};
  if (!continue_token.empty()) metadata["continue"] = continue_token;
  return nlohmann::json{
      {"kind", "PodList"}, {"apiVersion", "v1"}, {"metadata", metadata}, {"items", items}}
      .dump();
}

std::string event(const std::string& type, const std::string& name, const std::string& rv) {
  auto object = pod(name, rv);
  object["kind"] = "Pod";
  object["apiVersion"] = "v1";
  return nlohmann::json{{"type", type}, {"object", object}}.dump() + "\n";
}

std::string bookmark(const std::string& rv) {
  return nlohmann::json{
             {"type", "BOOKMARK"},
             {"object",
              {{"kind", "Pod"}, {"apiVersion", "v1"}, {"metadata", {{"resourceVersion", rv}}}}}}
             .dump() +
         "\n";
}

std::string expired_event() {
  return R"json({"type":"ERROR","object":{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"too old resource version: 100 (150)","reason":"Expired","code":410}})json"
         "\n";
}

// --- a handler that keeps a cache, as consumers will ----------------------------------------

class CachingHandler : public ReflectorHandler {
 public:
  // List items are staged as they arrive (as ClusterSync does) and applied only by on_replace.
  void on_list_begin() override {
    std::lock_guard lock(mutex_);
    staged_.clear();
  }
  void on_list_item(const json::Value& object) override {
    std::lock_guard lock(mutex_);
    staged_.push_back(Json::parse(simdjson::minify(object)));
  }
  void on_replace(const std::string& resource_version) override {
    std::lock_guard lock(mutex_);
    std::vector<Json> items = std::move(staged_);
    staged_.clear();
    cache_.clear();
    std::string names;
    for (const auto& item : items) {
      const std::string name = item["metadata"]["name"];
      cache_[name] = item;
      names += (names.empty() ? "" : ",") + name;
    }
    log_.push_back("replace " + resource_version + " [" + names + "]");
  }
  void on_event(WatchEventType type, const json::Value& value) override {
    const Json object = Json::parse(simdjson::minify(value));
    const std::string name = object["metadata"]["name"];
    if (name == throw_for) throw std::runtime_error("handler refuses " + name);
    std::lock_guard lock(mutex_);
    if (type == WatchEventType::kDeleted) {
      cache_.erase(name);
    } else {
      cache_[name] = object;
    }
    log_.push_back(std::string(to_string(type)) + " " + name);
  }
  std::vector<std::string> log() const {
    std::lock_guard lock(mutex_);
    return log_;
  }
  std::set<std::string> names() const {
    std::lock_guard lock(mutex_);
    std::set<std::string> out;
    for (const auto& [name, object] : cache_) out.insert(name);
    return out;
  }

  std::string throw_for;  // set before start

 private:
  mutable std::mutex mutex_;
  std::vector<Json> staged_;
  std::map<std::string, Json> cache_;
  std::vector<std::string> log_;
};

// --- fixture ----------------------------------------------------------------------------------

class ReflectorTest : public ::testing::Test {
 protected:
  ReflectorTest() : server_("/api/v1/pods") {}

  void start(std::string field_selector = "") {
    ClusterConfig config;
    config.server = server_.url();
    auto client_options = testing::fast_client_options();
    client_options.retry.max_attempts = 1;  // the reflector's own backoff is under test
    client_ = std::make_unique<ApiClient>(config, client_options);
    ReflectorOptions options;
    options.path = "/api/v1/pods";
    options.field_selector = std::move(field_selector);
    options.clock = clock_.clock();  // never advances: every watch "lasts" 0 s
    options.sleeper = sleeper_.sleeper();
    options.random = [] { return 0.5; };
    reflector_ = std::make_unique<Reflector>(*client_, options, handler_);
    reflector_->start();
  }

  void TearDown() override {
    if (reflector_) reflector_->stop();
  }

  bool wait_for_watches(std::size_t count) {
    return testing::wait_until([&] { return server_.watches().size() >= count; });
  }

  ScriptedServer server_;
  FakeClock clock_;
  RecordingSleeper sleeper_;
  CachingHandler handler_;
  std::unique_ptr<ApiClient> client_;
  std::unique_ptr<Reflector> reflector_;
};

TEST_F(ReflectorTest, PagedListThenWatchFromTheListResourceVersion) {
  server_.add_list({200, pod_list("100", {"a", "b"}, "token-1")});
  server_.add_list({200, pod_list("100", {"c"})});
  server_.add_watch({.chunks = {event("ADDED", "d", "101") + bookmark("105")}, .hold_open = true});
  start("status.phase!=Succeeded");

  ASSERT_TRUE(reflector_->wait_for_sync(10s));
  ASSERT_TRUE(testing::wait_until([&] { return reflector_->last_resource_version() == "105"; }));

  const auto requests = server_.requests();
  ASSERT_EQ(requests.size(), 3u);
  EXPECT_EQ(requests[0].param("limit"), "500");
  EXPECT_EQ(requests[0].param("resourceVersion"), "0");
  EXPECT_FALSE(requests[0].has("continue"));
  EXPECT_EQ(requests[0].param("fieldSelector"), "status.phase!=Succeeded");

  EXPECT_EQ(requests[1].param("limit"), "500");
  EXPECT_EQ(requests[1].param("continue"), "token-1");
  EXPECT_FALSE(requests[1].has("resourceVersion")) << "no RV with a continue token";
  EXPECT_EQ(requests[1].param("fieldSelector"), "status.phase!=Succeeded");

  ASSERT_TRUE(requests[2].is_watch());
  EXPECT_EQ(requests[2].param("resourceVersion"), "100");
  EXPECT_EQ(requests[2].param("allowWatchBookmarks"), "true");
  EXPECT_EQ(requests[2].param("fieldSelector"), "status.phase!=Succeeded");
  const int timeout = std::stoi(requests[2].param("timeoutSeconds"));
  EXPECT_GE(timeout, 300);
  EXPECT_LE(timeout, 600);

  EXPECT_EQ(handler_.log(), (std::vector<std::string>{"replace 100 [a,b,c]", "ADDED d"}));
  const auto counters = reflector_->counters();
  EXPECT_EQ(counters.lists, 1u);
  EXPECT_EQ(counters.relists, 0u);
  EXPECT_EQ(counters.watches, 1u);
  EXPECT_EQ(counters.events, 1u);
  EXPECT_EQ(counters.bookmarks, 1u);
  EXPECT_TRUE(sleeper_.sleeps().empty());
}

TEST_F(ReflectorTest, CleanCloseRewatchesFromTheBookmarkWithoutRelisting) {
  server_.add_list({200, pod_list("100", {"a"})});
  server_.add_watch({.chunks = {event("MODIFIED", "a", "120"), bookmark("150")}});  // then EOF
  start();

  ASSERT_TRUE(wait_for_watches(2));
  const auto watches = server_.watches();
  EXPECT_EQ(watches[0].param("resourceVersion"), "100");
  EXPECT_EQ(watches[1].param("resourceVersion"), "150");
  EXPECT_EQ(server_.lists().size(), 1u);
  EXPECT_TRUE(sleeper_.sleeps().empty()) << "a healthy close needs no backoff";
  const auto counters = reflector_->counters();
  EXPECT_EQ(counters.relists, 0u);
  EXPECT_EQ(counters.watch_restarts, 1u);
  EXPECT_EQ(handler_.log(), (std::vector<std::string>{"replace 100 [a]", "MODIFIED a"}));
}

TEST_F(ReflectorTest, ExpiredErrorEventRelistsAndReplacesTheCache) {
  server_.add_list({200, pod_list("100", {"a", "b"})});
  server_.add_watch({.chunks = {event("ADDED", "c", "101"), expired_event()}});
  server_.add_list({200, pod_list("200", {"b", "c", "d"})});
  start();

  ASSERT_TRUE(wait_for_watches(2));
  const auto lists = server_.lists();
  ASSERT_EQ(lists.size(), 2u);
  // Relist not older than the last RV seen, in one piece (client-go).
  EXPECT_EQ(lists[1].param("resourceVersion"), "101");
  EXPECT_FALSE(lists[1].has("limit"));
  EXPECT_FALSE(lists[1].has("continue"));
  EXPECT_EQ(server_.watches()[1].param("resourceVersion"), "200");

  ASSERT_TRUE(testing::wait_until([&] { return handler_.log().size() == 3; }));
  EXPECT_EQ(handler_.log(),
            (std::vector<std::string>{"replace 100 [a,b]", "ADDED c", "replace 200 [b,c,d]"}));
  EXPECT_EQ(handler_.names(), (std::set<std::string>{"b", "c", "d"})) << "a vanished";
  const auto counters = reflector_->counters();
  EXPECT_EQ(counters.expired, 1u);
  EXPECT_EQ(counters.relists, 1u);
  EXPECT_EQ(counters.lists, 2u);
  // One backoff before the relist: 0.8 s base, jitter 1.0 at random 0.5.
  EXPECT_EQ(sleeper_.sleeps(), (std::vector<std::chrono::milliseconds>{1200ms}));
}

TEST_F(ReflectorTest, GoneHttpStatusOnWatchRelists) {
  server_.add_list({200, pod_list("100", {"a"})});
  server_.add_watch({.status = 410, .body = testing::status_body(410, "Gone", "too old")});
  server_.add_list({200, pod_list("300", {"z"})});
  start();

  ASSERT_TRUE(wait_for_watches(2));
  EXPECT_EQ(server_.lists().size(), 2u);
  EXPECT_EQ(server_.watches()[1].param("resourceVersion"), "300");
  ASSERT_TRUE(testing::wait_until([&] { return handler_.names() == std::set<std::string>{"z"}; }));
  EXPECT_EQ(reflector_->counters().expired, 1u);
}

TEST_F(ReflectorTest, ExpiredListResourceVersionFallsBackToAConsistentPagedList) {
  server_.add_list({200, pod_list("100", {"a"})});
  server_.add_watch({.chunks = {expired_event()}});
  server_.add_list(
      {410, testing::status_body(410, "Expired",
                                 "The resourceVersion for the provided list is too old.")});
  server_.add_list({200, pod_list("300", {"a", "e"})});
  start();

  ASSERT_TRUE(wait_for_watches(2));
  const auto lists = server_.lists();
  ASSERT_EQ(lists.size(), 3u);
  EXPECT_EQ(lists[1].param("resourceVersion"), "100");
  EXPECT_FALSE(lists[2].has("resourceVersion")) << "consistent read from etcd";
  EXPECT_EQ(lists[2].param("limit"), "500");
  EXPECT_EQ(server_.watches()[1].param("resourceVersion"), "300");
  EXPECT_EQ(sleeper_.sleeps().size(), 1u) << "the fallback list follows at once";
  EXPECT_EQ(reflector_->counters().expired, 2u);
}

TEST_F(ReflectorTest, ExpiredContinueTokenListsEverythingWithoutLimit) {
  server_.add_list({200, pod_list("100", {"a"}, "token-1")});
  server_.add_list({410, testing::status_body(410, "Expired", "continue token expired")});
  server_.add_list({200, pod_list("100", {"a", "b", "c"})});
  start();

  ASSERT_TRUE(reflector_->wait_for_sync(10s));
  ASSERT_TRUE(wait_for_watches(1));
  const auto lists = server_.lists();
  ASSERT_EQ(lists.size(), 3u);
  EXPECT_EQ(lists[1].param("continue"), "token-1");
  EXPECT_FALSE(lists[2].has("limit"));
  EXPECT_FALSE(lists[2].has("continue"));
  EXPECT_EQ(lists[2].param("resourceVersion"), "0");
  EXPECT_EQ(handler_.log(), (std::vector<std::string>{"replace 100 [a,b,c]"}))
      << "page 1 not duplicated";
  EXPECT_EQ(reflector_->counters().expired, 1u);
}

TEST_F(ReflectorTest, ShortWatchWithoutEventsIsAnError) {
  server_.add_list({200, pod_list("100", {"a"})});
  server_.add_watch({});  // 200, empty body, EOF at once
  server_.add_list({200, pod_list("100", {"a"})});
  start();

  ASSERT_TRUE(wait_for_watches(2));
  EXPECT_EQ(server_.lists().size(), 2u);
  EXPECT_EQ(server_.lists()[1].param("resourceVersion"), "100");
  EXPECT_EQ(sleeper_.sleeps().size(), 1u);
  EXPECT_EQ(reflector_->counters().relists, 1u);
}

TEST_F(ReflectorTest, ThrottledWatchBacksOffAndRewatchesWithoutRelisting) {
  server_.add_list({200, pod_list("100", {"a"})});
  server_.add_watch(
      {.status = 429, .body = testing::status_body(429, "TooManyRequests", "slow down")});
  start();

  ASSERT_TRUE(wait_for_watches(2));
  EXPECT_EQ(server_.lists().size(), 1u);
  EXPECT_EQ(server_.watches()[1].param("resourceVersion"), "100");
  EXPECT_EQ(sleeper_.sleeps().size(), 1u);
}

TEST_F(ReflectorTest, ListFailuresBackOffExponentially) {
  for (int i = 0; i < 3; ++i) {
    server_.add_list({500, testing::status_body(500, "InternalError", "etcd unavailable")});
  }
  server_.add_list({200, pod_list("100", {"a"})});
  start();

  EXPECT_FALSE(reflector_->has_synced());
  ASSERT_TRUE(reflector_->wait_for_sync(10s));
  EXPECT_EQ(sleeper_.sleeps(), (std::vector<std::chrono::milliseconds>{1200ms, 2400ms, 4800ms}));
  EXPECT_EQ(reflector_->counters().errors, 3u);
  EXPECT_EQ(handler_.log(), (std::vector<std::string>{"replace 100 [a]"}));
}

TEST_F(ReflectorTest, HandlerFailureLeadsToARelist) {
  handler_.throw_for = "bad";
  server_.add_list({200, pod_list("100", {"a"})});
  server_.add_watch({.chunks = {event("ADDED", "bad", "101")}, .hold_open = true});
  server_.add_list({200, pod_list("102", {"a"})});
  start();

  ASSERT_TRUE(wait_for_watches(2));
  const auto lists = server_.lists();
  ASSERT_EQ(lists.size(), 2u);
  EXPECT_EQ(lists[1].param("resourceVersion"), "100") << "the failed event's RV was not taken";
}

TEST_F(ReflectorTest, BrokenListBodiesAreNeverAppliedAndTheListIsRetriedWhole) {
  const std::string good = pod_list("100", {"a", "b"});
  // Truncated in the metadata, which the JSON dump puts after the items: both were delivered.
  server_.add_list({200, good.substr(0, good.size() - 20)});
  server_.add_list(
      {200,
       R"({"metadata":{"resourceVersion":"100"},"items":[{"metadata":{"name":"a"}},{"metadata":{"name":}}]})"});
  server_.add_list({200, pod_list("101", {"c", "d"})});
  start();

  ASSERT_TRUE(reflector_->wait_for_sync(10s));
  EXPECT_EQ(handler_.log(), (std::vector<std::string>{"replace 101 [c,d]"}))
      << "items staged from the broken lists are dropped";
  EXPECT_EQ(handler_.names(), (std::set<std::string>{"c", "d"}));
  EXPECT_EQ(server_.lists().size(), 3u);
  EXPECT_EQ(reflector_->counters().errors, 2u);
  EXPECT_EQ(sleeper_.sleeps().size(), 2u);
}

TEST_F(ReflectorTest, StreamedPagesAreAppliedTogether) {
  server_.add_list({200, pod_list("100", {"a", "b"}, "token-1")});
  server_.add_list({200, pod_list("100", {"c"})});
  start();

  ASSERT_TRUE(reflector_->wait_for_sync(10s));
  EXPECT_EQ(handler_.log(), (std::vector<std::string>{"replace 100 [a,b,c]"}));
  const auto lists = server_.lists();
  ASSERT_EQ(lists.size(), 2u);
  EXPECT_EQ(lists[1].param("continue"), "token-1");
}

TEST(Reflector, StopInterruptsABackoffWait) {
  ScriptedServer server("/api/v1/nodes");  // no list scripted: every list fails
  ClusterConfig config;
  config.server = server.url();
  auto client_options = testing::fast_client_options();
  client_options.retry.max_attempts = 1;
  ApiClient client(config, client_options);
  CachingHandler handler;
  ReflectorOptions options;
  options.path = "/api/v1/nodes";
  options.backoff.initial = 60s;  // a real wait, unless interrupted
  Reflector reflector(client, options, handler);
  reflector.start();
  ASSERT_TRUE(testing::wait_until([&] { return reflector.counters().errors == 1; }));
  EXPECT_FALSE(reflector.wait_for_sync(10ms));
  auto stopped = std::async(std::launch::async, [&] { reflector.stop(); });
  EXPECT_EQ(stopped.wait_for(10s), std::future_status::ready);
}

TEST(Reflector, StopEndsAnIdleWatch) {
  ScriptedServer server("/api/v1/nodes");
  server.add_list({200, pod_list("7", {"n1"})});
  ClusterConfig config;
  config.server = server.url();
  ApiClient client(config, testing::fast_client_options());
  CachingHandler handler;
  ReflectorOptions options;
  options.path = "/api/v1/nodes";
  Reflector reflector(client, options, handler);
  reflector.start();
  ASSERT_TRUE(reflector.wait_for_sync(10s));
  ASSERT_TRUE(testing::wait_until([&] { return server.watches().size() == 1; }));
  auto stopped = std::async(std::launch::async, [&] { reflector.stop(); });
  EXPECT_EQ(stopped.wait_for(10s), std::future_status::ready);
}

}  // namespace
}  // namespace gpushare::apiclient
