// /inspect under load (shared_rendering.h): concurrent requests share one rendering instead of
// each building its own, at most one rendering runs at a time, requests beyond those allowed to
// wait get 503, and an allocation failure in a handler is a 503, never the end of the process.

#include <gtest/gtest.h>
#include <httplib.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <future>
#include <latch>
#include <new>
#include <string>
#include <thread>
#include <vector>

#include "contract/extender_fixture.h"

namespace gpushare::testing {
namespace {

using namespace std::chrono_literals;

// `nodes` nodes of 4 GPUs, each with two bound pods.
Json generated_cluster(int nodes) {
  std::vector<Json> items;
  for (int n = 0; n < nodes; ++n) {
    const std::string node = "node-" + std::to_string(n);
    items.push_back(node_object(node, 4, 64));
    for (int p = 0; p < 2; ++p) {
      const std::string pod = node + "-pod-" + std::to_string(p);
      items.push_back(pod_object(pod, "uid-" + pod, 4, node, p));
    }
  }
  return cluster_list(items);
}

httplib::Result get_inspect(int port) {
  httplib::Client client("127.0.0.1", port);
  client.set_read_timeout(60);
  return client.Get("/gpushare-scheduler/inspect");
}

// `count` GETs sent at once, of path_of(i): each one's status (-1 if none) and body, in order.
std::vector<std::pair<int, std::string>> at_once(int port, int count,
                                                 const std::function<std::string(int)>& path_of) {
  std::latch start(count);
  std::vector<std::future<std::pair<int, std::string>>> pending;
  for (int i = 0; i < count; ++i) {
    pending.push_back(std::async(std::launch::async, [&, i] {
      start.arrive_and_wait();
      httplib::Client client("127.0.0.1", port);
      client.set_read_timeout(60);
      auto reply = client.Get(path_of(i));
      return reply ? std::pair{reply->status, reply->body} : std::pair{-1, std::string()};
    }));
  }
  std::vector<std::pair<int, std::string>> replies;
  for (auto& reply : pending) replies.push_back(reply.get());
  return replies;
}

TEST(InspectLoad, ConcurrentRequestsShareOneRendering) {
  ExtenderUnderTest extender(
      generated_cluster(1000), "binpack", 1 << 20, /*http_threads=*/128,
      [](http::HttpServerOptions& options) { options.inspect_max_age = std::chrono::hours(1); });
  ASSERT_GT(extender.port(), 0);
  constexpr int kRequests = 24;
  std::string first;
  for (const auto& [status, body] :
       at_once(extender.port(), kRequests, [](int) { return "/gpushare-scheduler/inspect"; })) {
    ASSERT_EQ(status, 200);
    if (first.empty()) first = body;
    EXPECT_EQ(body, first);  // one rendering, the same bytes for all
  }
  EXPECT_EQ(Json::parse(first)["nodes"].size(), 1000u);
  const auto made = extender.server().inspect_renderings();
  EXPECT_EQ(made.renders, 1u);
  EXPECT_EQ(made.most_at_once, 1u);
  EXPECT_EQ(made.shared, static_cast<std::uint64_t>(kRequests - 1));

  // A change to the model is rendered by the next request, and shown.
  extender.store().write(
      [](core::ClusterModel& model, core::PlacementPolicy&) { model.remove_node("node-0"); });
  auto after = get_inspect(extender.port());
  ASSERT_TRUE(after);
  EXPECT_EQ(Json::parse(after->body)["nodes"].size(), 999u);
  EXPECT_EQ(extender.server().inspect_renderings().renders, 2u);
}

// A node's pods are not bounded, so /inspect/<node> must not build a tree per request with every
// worker rendering one at once. Node replies take the same path as /inspect: one rendering at a
// time, shared by the requests for the same node, never served for another node.
TEST(InspectLoad, NodeRequestsRenderOneAtATimeEachForItsNode) {
  ExtenderUnderTest extender(
      generated_cluster(50), "binpack", 1 << 20, /*http_threads=*/128,
      [](http::HttpServerOptions& options) { options.inspect_max_age = std::chrono::hours(1); });
  ASSERT_GT(extender.port(), 0);
  constexpr int kRequests = 24;
  const auto replies = at_once(extender.port(), kRequests, [](int i) {
    return "/gpushare-scheduler/inspect/node-" + std::to_string(i % 3);
  });
  for (int i = 0; i < kRequests; ++i) {
    const auto& [status, body] = replies[i];
    ASSERT_EQ(status, 200);
    const Json nodes = Json::parse(body)["nodes"];
    ASSERT_EQ(nodes.size(), 1u);
    EXPECT_EQ(nodes[0]["name"], "node-" + std::to_string(i % 3));
  }
  const auto made = extender.server().node_inspect_renderings();
  EXPECT_EQ(made.most_at_once, 1u);
  EXPECT_EQ(made.renders + made.shared, static_cast<std::uint64_t>(kRequests));
  EXPECT_GE(made.renders, 3u);
  auto unknown = extender.client().Get("/gpushare-scheduler/inspect/node-x");
  ASSERT_TRUE(unknown);
  EXPECT_EQ(unknown->status, 404);
}

// /metrics has per-node and per-GPU series: one rendering at a time too, never reused for a
// scrape that arrived after it began (its counters move with every request).
TEST(InspectLoad, MetricsScrapesShareOneRenderingAtATime) {
  ExtenderUnderTest extender(generated_cluster(1000), "binpack", 1 << 20, /*http_threads=*/128);
  ASSERT_GT(extender.port(), 0);
  constexpr int kScrapes = 16;
  std::latch start(kScrapes);
  std::vector<std::future<int>> replies;
  for (int i = 0; i < kScrapes; ++i) {
    replies.push_back(std::async(std::launch::async, [&] {
      start.arrive_and_wait();
      auto reply = extender.client().Get("/metrics");
      return reply && reply->body.find("gpushare_node_gpu_memory_capacity{node=\"node-999\"}") !=
                          std::string::npos
                 ? reply->status
                 : -1;
    }));
  }
  for (auto& reply : replies) EXPECT_EQ(reply.get(), 200);
  const auto made = extender.server().metrics_renderings();
  EXPECT_EQ(made.most_at_once, 1u);
  EXPECT_EQ(made.renders + made.shared, static_cast<std::uint64_t>(kScrapes));
  // A scrape after the others is rendered anew.
  auto after = extender.client().Get("/metrics");
  ASSERT_TRUE(after);
  EXPECT_EQ(after->status, 200);
  EXPECT_EQ(extender.server().metrics_renderings().renders, made.renders + 1);
}

// While one rendering runs, the requests that arrive wait for it (each holds a worker: at most
// a quarter of --http-threads); the next gets 503 with Retry-After at once.
TEST(InspectLoad, RequestsBeyondThoseAllowedToWaitGet503) {
  std::atomic<bool> release{false};
  ExtenderUnderTest extender(generated_cluster(10), "binpack", 1 << 20, /*http_threads=*/8,
                             [&](http::HttpServerOptions& options) {
                               options.inspect_max_age = std::chrono::hours(1);
                               // Called while rendering: holds the rendering until released.
                               options.config_warnings = [&] {
                                 while (!release) std::this_thread::sleep_for(10ms);
                                 return std::vector<service::ConfigWarning>{};
                               };
                             });
  ASSERT_GT(extender.port(), 0);
  auto wait_for = [&](auto done) {
    for (int i = 0; i < 1000 && !done(extender.server().inspect_renderings()); ++i)
      std::this_thread::sleep_for(10ms);
  };
  std::vector<std::future<int>> held;
  // Whatever happens below, the rendering is released before the requests are waited for.
  struct Release {
    std::atomic<bool>& flag;
    ~Release() { flag = true; }
  } release_at_exit{release};
  auto request = [&] {
    held.push_back(std::async(std::launch::async, [&] {
      auto reply = get_inspect(extender.port());
      return reply ? reply->status : -1;
    }));
  };
  request();  // renders (and is held)
  wait_for([](const auto& stats) { return stats.renders == 1; });
  request();
  request();  // 8 threads: 2 may wait
  wait_for([](const auto& stats) { return stats.waiting == 2; });
  ASSERT_EQ(extender.server().inspect_renderings().waiting, 2u);
  auto refused = get_inspect(extender.port());
  ASSERT_TRUE(refused);
  EXPECT_EQ(refused->status, 503);
  EXPECT_EQ(refused->get_header_value("Retry-After"), "1");
  release = true;
  for (auto& status : held) EXPECT_EQ(status.get(), 200);
  EXPECT_EQ(extender.server().inspect_renderings().renders, 1u);
  EXPECT_EQ(extender.server().inspect_renderings().most_at_once, 1u);
}

// std::bad_alloc in a handler (nlohmann's destructors allocate, so it must not unwind through a
// live reply tree) is a 503 with Retry-After, not a 500, and the server goes on serving.
TEST(InspectLoad, AnAllocationFailureInAHandlerIsA503AndTheServerGoesOn) {
  std::atomic<int> calls{0};
  ExtenderUnderTest extender(generated_cluster(200), "binpack", 1 << 20, 0,
                             [&](http::HttpServerOptions& options) {
                               options.config_warnings = [&] {
                                 if (calls++ == 0) throw std::bad_alloc();
                                 return std::vector<service::ConfigWarning>{};
                               };
                             });
  ASSERT_GT(extender.port(), 0);
  auto failed = get_inspect(extender.port());
  ASSERT_TRUE(failed);
  EXPECT_EQ(failed->status, 503);
  EXPECT_EQ(failed->get_header_value("Retry-After"), "1");
  EXPECT_NE(Json::parse(failed->body)["Error"].get<std::string>().find("out of memory"),
            std::string::npos);
  auto served = get_inspect(extender.port());
  ASSERT_TRUE(served);
  EXPECT_EQ(served->status, 200);
  EXPECT_EQ(Json::parse(served->body)["nodes"].size(), 200u);
  auto health = extender.client().Get("/healthz");
  ASSERT_TRUE(health);
  EXPECT_EQ(health->status, 200);
}

}  // namespace
}  // namespace gpushare::testing
