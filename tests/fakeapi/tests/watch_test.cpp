// Watch semantics: initial events, RV starts, bookmarks, selectors, 410s, stream endings,
// chunk framing.

#include <gtest/gtest.h>

#include "fakeapi/fake_apiserver.h"
#include "test_helpers.h"

namespace gpushare::testing {
namespace {

using namespace fakeapi_test;

std::string type_of(const std::optional<Json>& event) {
  return event ? (*event)["type"].get<std::string>() : "<none>";
}
std::string name_in(const std::optional<Json>& event) {
  return event ? (*event)["object"]["metadata"].value("name", "") : "<none>";
}
std::uint64_t rv_in(const std::optional<Json>& event) {
  return std::stoull((*event)["object"]["metadata"]["resourceVersion"].get<std::string>());
}

TEST(Watch, FromNowStartsWithSyntheticAddedsThenStreamsChanges) {
  FakeApiServer server;
  server.create(Resource::Pods, make_pod("ns", "p1"));
  server.create(Resource::Pods, make_pod("ns", "p2"));
  for (const char* rv : {"", "0"}) {
    SCOPED_TRACE(std::string("resourceVersion=") + rv);
    WatchStream watch(server.port(), std::string("/api/v1/pods?watch=1&resourceVersion=") + rv);
    ASSERT_EQ(watch.status(), 200);
    EXPECT_EQ(watch.head().headers.at("content-type"), "application/json");
    EXPECT_EQ(watch.head().headers.at("transfer-encoding"), "chunked");
    auto first = watch.next_event();
    EXPECT_EQ(type_of(first), "ADDED");
    EXPECT_EQ(name_in(first), "p1");
    EXPECT_EQ((*first)["object"]["kind"], "Pod");  // event objects carry kind/apiVersion
    EXPECT_EQ((*first)["object"]["apiVersion"], "v1");
    EXPECT_EQ(name_in(watch.next_event()), "p2");
    EXPECT_TRUE(watch.stays_quiet(std::chrono::milliseconds(200)));
  }

  WatchStream watch(server.port(), "/api/v1/pods?watch=true");
  ASSERT_EQ(watch.read_to_end(std::chrono::milliseconds(300)).size(), 2u);
  const Json created = server.create(Resource::Pods, make_pod("ns", "p3"));
  auto added = watch.next_event();
  EXPECT_EQ(type_of(added), "ADDED");
  EXPECT_EQ((*added)["object"]["metadata"]["uid"], created["metadata"]["uid"]);
  server.mutate(Resource::Pods, "ns", "p3", [](Json& pod) { pod["status"]["phase"] = "Running"; });
  auto modified = watch.next_event();
  EXPECT_EQ(type_of(modified), "MODIFIED");
  EXPECT_EQ((*modified)["object"]["status"]["phase"], "Running");
  server.remove(Resource::Pods, "ns", "p3");
  auto deleted = watch.next_event();
  EXPECT_EQ(type_of(deleted), "DELETED");
  EXPECT_EQ((*deleted)["object"]["status"]["phase"], "Running");  // last state
  EXPECT_GT(rv_in(deleted), rv_in(modified));
  EXPECT_EQ(std::to_string(rv_in(deleted)), server.resource_version());
}

TEST(Watch, FromASpecificResourceVersionSendsOnlyLaterEvents) {
  FakeApiServer server;
  server.create(Resource::Pods, make_pod("ns", "old"));
  const std::string start = server.resource_version();
  server.create(Resource::Pods, make_pod("ns", "new1"));
  server.create(Resource::Nodes, make_node("n1"));  // another resource: not in this watch
  server.create(Resource::Pods, make_pod("ns", "new2"));

  WatchStream watch(server.port(), "/api/v1/namespaces/ns/pods?watch=1&resourceVersion=" + start);
  EXPECT_EQ(name_in(watch.next_event()), "new1");
  EXPECT_EQ(name_in(watch.next_event()), "new2");
  EXPECT_TRUE(watch.stays_quiet(std::chrono::milliseconds(200)));

  // A namespaced watch ignores other namespaces.
  server.create(Resource::Pods, make_pod("elsewhere", "x"));
  server.create(Resource::Pods, make_pod("ns", "new3"));
  EXPECT_EQ(name_in(watch.next_event()), "new3");
}

TEST(Watch, FromAFutureResourceVersionWaitsForIt) {
  FakeApiServer server;
  const std::uint64_t future = std::stoull(server.resource_version()) + 2;
  WatchStream watch(server.port(),
                    "/api/v1/pods?watch=1&resourceVersion=" + std::to_string(future));
  ASSERT_EQ(watch.status(), 200);
  for (const char* name : {"a", "b", "c"}) server.create(Resource::Pods, make_pod("ns", name));
  EXPECT_EQ(name_in(watch.next_event()), "c");
}

TEST(Watch, BookmarksCarryOnlyTheResourceVersion) {
  FakeApiServer server;
  server.create(Resource::Pods, make_pod("ns", "p1"));
  WatchStream watch(server.port(), "/api/v1/pods?watch=1&allowWatchBookmarks=true");
  EXPECT_EQ(type_of(watch.next_event()), "ADDED");
  // The WatchList-era marker after the initial events.
  auto initial_end = watch.next_event();
  ASSERT_EQ(type_of(initial_end), "BOOKMARK");
  EXPECT_EQ((*initial_end)["object"]["metadata"]["resourceVersion"], server.resource_version());
  EXPECT_EQ((*initial_end)["object"]["metadata"]["annotations"]["k8s.io/initial-events-end"],
            "true");

  server.create(Resource::Nodes, make_node("n1"));  // moves the RV, no pod event
  server.send_bookmark_now();
  auto bookmark = watch.next_event();
  ASSERT_EQ(type_of(bookmark), "BOOKMARK");
  const Json& object = (*bookmark)["object"];
  EXPECT_EQ(object["metadata"], Json({{"resourceVersion", server.resource_version()}}));
  EXPECT_EQ(object["kind"], "Pod");
  EXPECT_FALSE(object.contains("spec"));

  // Without allowWatchBookmarks there are none.
  WatchStream plain(server.port(), "/api/v1/pods?watch=1");
  EXPECT_EQ(type_of(plain.next_event()), "ADDED");
  server.send_bookmark_now();
  EXPECT_TRUE(plain.stays_quiet(std::chrono::milliseconds(300)));
}

TEST(Watch, PeriodicBookmarksAndTheInitialEventsEndOption) {
  FakeApiServer::Options options;
  options.initial_events_end_bookmark = false;
  options.bookmark_interval = std::chrono::milliseconds(50);
  FakeApiServer server(options);
  server.create(Resource::Pods, make_pod("ns", "p1"));
  WatchStream watch(server.port(), "/api/v1/pods?watch=1&allowWatchBookmarks=1");
  EXPECT_EQ(type_of(watch.next_event()), "ADDED");
  auto first = watch.next_event();
  ASSERT_EQ(type_of(first), "BOOKMARK");
  EXPECT_FALSE((*first)["object"]["metadata"].contains("annotations"));
  EXPECT_EQ(type_of(watch.next_event()), "BOOKMARK");
  server.set_bookmark_interval(std::chrono::milliseconds(0));
}

TEST(Watch, SendInitialEventsNeedsNotOlderThan) {
  FakeApiServer server;
  server.create(Resource::Pods, make_pod("ns", "p1"));
  ApiClient client(server);
  const Reply invalid =
      client.get("/api/v1/pods?watch=1&sendInitialEvents=true&allowWatchBookmarks=true");
  EXPECT_EQ(invalid.status, 422);
  EXPECT_EQ(invalid.json["details"]["kind"], "ListOptions");
  EXPECT_EQ(client.get("/api/v1/pods?watch=1&resourceVersionMatch=NotOlderThan").status, 422);

  WatchStream watch(server.port(),
                    "/api/v1/pods?watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan"
                    "&allowWatchBookmarks=true&resourceVersion=");
  EXPECT_EQ(type_of(watch.next_event()), "ADDED");
  auto end = watch.next_event();
  EXPECT_EQ(type_of(end), "BOOKMARK");
  EXPECT_EQ((*end)["object"]["metadata"]["annotations"]["k8s.io/initial-events-end"], "true");
}

TEST(Watch, TooOldResourceVersionIsAnInStreamErrorThenEof) {
  FakeApiServer server;
  server.create(Resource::Pods, make_pod("ns", "p1"));
  const std::string old_rv = server.resource_version();
  server.create(Resource::Pods, make_pod("ns", "p2"));
  server.compact_to_current();
  WatchStream watch(server.port(), "/api/v1/pods?watch=1&resourceVersion=" + old_rv);
  EXPECT_EQ(watch.status(), 200);  // not an HTTP error
  auto error = watch.next_event();
  ASSERT_EQ(type_of(error), "ERROR");
  const Json& status = (*error)["object"];
  EXPECT_EQ(status["kind"], "Status");
  EXPECT_EQ(status["apiVersion"], "v1");
  EXPECT_EQ(status["metadata"], Json::object());
  EXPECT_EQ(status["status"], "Failure");
  EXPECT_EQ(status["reason"], "Expired");
  EXPECT_EQ(status["code"], 410);
  EXPECT_EQ(status["message"], "too old resource version: " + old_rv + " (" +
                                   server.compacted_resource_version() + ")");
  EXPECT_FALSE(watch.next_event());
  EXPECT_TRUE(watch.ended_cleanly());
  // Watching from the compaction point itself is fine.
  WatchStream at_compaction(
      server.port(), "/api/v1/pods?watch=1&resourceVersion=" + server.compacted_resource_version());
  EXPECT_TRUE(at_compaction.stays_quiet(std::chrono::milliseconds(200)));
}

TEST(Watch, AWatchThatFallsBehindACompactionGets410) {
  FakeApiServer server;
  WatchStream watch(server.port(), "/api/v1/pods?watch=1");
  ASSERT_TRUE(server.wait_for_open_watches(1, kSoon));
  server.hold_watch_events();
  server.create(Resource::Pods, make_pod("ns", "missed"));
  server.compact_to_current();
  server.release_watch_events();
  auto error = watch.next_event();
  ASSERT_EQ(type_of(error), "ERROR");
  EXPECT_EQ((*error)["object"]["code"], 410);
  EXPECT_FALSE(watch.next_event());
}

// expire_watches() is what the fake binary's SIGUSR1 does: a caught-up watch (which a plain
// compaction leaves alone) ends with an in-stream 410, and so does any watch from that RV; a
// not-older-than list still answers, an exact one at that RV does not.
TEST(Watch, ExpireWatchesEndsEvenCaughtUpWatchesWith410) {
  FakeApiServer server;
  server.create(Resource::Pods, make_pod("ns", "p1"));
  const std::string rv = server.resource_version();
  WatchStream nodes(server.port(), "/api/v1/nodes?watch=1&resourceVersion=" + rv);
  WatchStream pods(server.port(), "/api/v1/pods?watch=1&resourceVersion=" + rv);
  ASSERT_TRUE(server.wait_for_open_watches(2, kSoon));
  server.compact_to_current();
  // In step: a compaction alone is harmless.
  EXPECT_TRUE(pods.stays_quiet(std::chrono::milliseconds(200)));

  EXPECT_EQ(server.expire_watches(), 2u);
  EXPECT_GT(std::stoull(server.compacted_resource_version()), std::stoull(rv));
  for (WatchStream* watch : {&nodes, &pods}) {
    auto error = watch->next_event();
    ASSERT_EQ(type_of(error), "ERROR");
    EXPECT_EQ((*error)["object"]["code"], 410);
    EXPECT_EQ((*error)["object"]["reason"], "Expired");
    EXPECT_FALSE(watch->next_event());
    EXPECT_TRUE(watch->ended_cleanly());
  }
  WatchStream again(server.port(), "/api/v1/pods?watch=1&resourceVersion=" + rv);
  const auto too_old = again.next_event();
  ASSERT_EQ(type_of(too_old), "ERROR");
  EXPECT_EQ((*too_old)["object"]["code"], 410);

  ApiClient client{server};
  const Reply relist = client.get("/api/v1/pods?resourceVersion=" + rv);
  EXPECT_EQ(relist.status, 200);
  EXPECT_EQ(relist.json["items"].size(), 1u);
  EXPECT_EQ(relist.json["metadata"]["resourceVersion"], server.resource_version());
  EXPECT_EQ(client.get("/api/v1/pods?resourceVersion=" + rv + "&resourceVersionMatch=Exact").status,
            410);
  // Watching from the new RV is fine.
  WatchStream resumed(server.port(),
                      "/api/v1/pods?watch=1&resourceVersion=" + server.resource_version());
  EXPECT_TRUE(resumed.stays_quiet(std::chrono::milliseconds(200)));
}

TEST(Watch, BoundedHistoryCompactsItself) {
  FakeApiServer::Options options;
  options.max_history = 3;
  FakeApiServer server(options);
  const std::string start = server.resource_version();
  for (int i = 0; i < 5; ++i) server.create(Resource::Nodes, make_node("n" + std::to_string(i)));
  EXPECT_EQ(std::stoull(server.compacted_resource_version()), std::stoull(start) + 2);
  WatchStream watch(server.port(), "/api/v1/nodes?watch=1&resourceVersion=" + start);
  EXPECT_EQ(type_of(watch.next_event()), "ERROR");
}

TEST(Watch, TimeoutSecondsEndsTheStreamCleanly) {
  FakeApiServer server;
  WatchStream watch(server.port(), "/api/v1/pods?watch=1&timeoutSeconds=1");
  EXPECT_TRUE(watch.read_to_end(kSoon).empty());
  EXPECT_TRUE(watch.ended_cleanly());
  EXPECT_TRUE(server.wait_for_open_watches(0, kSoon));
}

TEST(Watch, ServerEndsWatchesByItselfWhenConfigured) {
  FakeApiServer::Options options;
  options.watch_lifetime = std::chrono::milliseconds(100);
  FakeApiServer server(options);
  WatchStream watch(server.port(), "/api/v1/pods?watch=1&timeoutSeconds=600");
  EXPECT_TRUE(watch.read_to_end(kSoon).empty());  // zero events, then a clean end
  EXPECT_TRUE(watch.ended_cleanly());
}

TEST(Watch, CloseAllEndsCleanlyAndDropAllEndsAbruptly) {
  FakeApiServer server;
  WatchStream closed(server.port(), "/api/v1/pods?watch=1");
  ASSERT_TRUE(server.wait_for_open_watches(1, kSoon));
  server.close_all_watches();
  EXPECT_TRUE(closed.read_to_end().empty());
  EXPECT_TRUE(closed.ended_cleanly());

  WatchStream dropped(server.port(), "/api/v1/nodes?watch=1");
  ASSERT_TRUE(server.wait_for_open_watches(1, kSoon));
  server.drop_all_watches();
  EXPECT_TRUE(dropped.read_to_end().empty());
  EXPECT_TRUE(dropped.ended_abruptly());

  // Watches opened afterwards are unaffected.
  WatchStream later(server.port(), "/api/v1/pods?watch=1");
  server.create(Resource::Pods, make_pod("ns", "p"));
  EXPECT_EQ(type_of(later.next_event()), "ADDED");
}

TEST(Watch, StoppingTheServerDropsWatches) {
  FakeApiServer server;
  WatchStream watch(server.port(), "/api/v1/pods?watch=1");
  ASSERT_TRUE(server.wait_for_open_watches(1, kSoon));
  server.stop_listening();
  EXPECT_TRUE(watch.read_to_end().empty());
  EXPECT_TRUE(watch.ended_abruptly());
}

TEST(Watch, NoticesAClientThatWentAway) {
  FakeApiServer server;
  {
    WatchStream watch(server.port(), "/api/v1/pods?watch=1");
    ASSERT_TRUE(server.wait_for_open_watches(1, kSoon));
    EXPECT_EQ(server.open_watch_count(), 1u);
  }
  // No event is ever written, yet the server frees the watch.
  const auto deadline = std::chrono::steady_clock::now() + kSoon;
  while (server.open_watch_count() != 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(server.open_watch_count(), 0u);
}

TEST(Watch, ObjectsEnteringAndLeavingASelector) {
  FakeApiServer server;
  server.create(Resource::Pods, make_pod("ns", "p1"));
  WatchStream on_node(server.port(), "/api/v1/pods?watch=1&fieldSelector=spec.nodeName%3Dn1");
  WatchStream not_finished(
      server.port(),
      "/api/v1/pods?watch=1&fieldSelector=status.phase!%3DSucceeded,status.phase!%3DFailed");
  EXPECT_TRUE(on_node.stays_quiet(std::chrono::milliseconds(200)));  // p1 is not on n1
  EXPECT_EQ(name_in(not_finished.next_event()), "p1");

  server.mutate(Resource::Pods, "ns", "p1", [](Json& pod) { pod["spec"]["nodeName"] = "n1"; });
  auto entered = on_node.next_event();
  EXPECT_EQ(type_of(entered), "ADDED");
  EXPECT_EQ((*entered)["object"]["spec"]["nodeName"], "n1");
  EXPECT_EQ(type_of(not_finished.next_event()), "MODIFIED");

  server.mutate(Resource::Pods, "ns", "p1", [](Json& pod) { pod["status"]["phase"] = "Running"; });
  EXPECT_EQ(type_of(on_node.next_event()), "MODIFIED");
  EXPECT_EQ(type_of(not_finished.next_event()), "MODIFIED");

  const Json finished = server.mutate(Resource::Pods, "ns", "p1",
                                      [](Json& pod) { pod["status"]["phase"] = "Succeeded"; });
  EXPECT_EQ(type_of(on_node.next_event()), "MODIFIED");
  auto left = not_finished.next_event();
  ASSERT_EQ(type_of(left), "DELETED");
  // The previous content, with the new resourceVersion.
  EXPECT_EQ((*left)["object"]["status"]["phase"], "Running");
  EXPECT_EQ((*left)["object"]["metadata"]["resourceVersion"],
            finished["metadata"]["resourceVersion"]);

  server.remove(Resource::Pods, "ns", "p1");
  EXPECT_EQ(type_of(on_node.next_event()), "DELETED");
  EXPECT_TRUE(not_finished.stays_quiet(std::chrono::milliseconds(200)));  // already gone for it
}

// --- Framing -------------------------------------------------------------------------------

class WatchFramingTest : public ::testing::Test {
 protected:
  void open_watch_then_create_three_pods(WatchFraming framing) {
    server.set_watch_framing(framing);
    watch.emplace(server.port(), "/api/v1/pods?watch=1");
    ASSERT_TRUE(server.wait_for_open_watches(1, kSoon));
    // Held events go out together, so they can be coalesced.
    server.hold_watch_events();
    for (const char* name : {"a", "b", "c"}) server.create(Resource::Pods, make_pod("ns", name));
    server.release_watch_events();
    for (const char* name : {"a", "b", "c"}) EXPECT_EQ(name_in(watch->next_event()), name);
  }
  FakeApiServer server;
  std::optional<WatchStream> watch;
};

TEST_F(WatchFramingTest, DefaultIsOneEventPerChunk) {
  open_watch_then_create_three_pods(WatchFraming::OneEventPerChunk);
  ASSERT_EQ(watch->chunks().size(), 3u);
  for (const std::string& chunk : watch->chunks()) {
    EXPECT_EQ(chunk.back(), '\n');
    EXPECT_FALSE(Json::parse(chunk, nullptr, false).is_discarded()) << chunk;
  }
}

TEST_F(WatchFramingTest, SplitEventsCutsEveryEventAcrossChunks) {
  open_watch_then_create_three_pods(WatchFraming::SplitEvents);
  ASSERT_EQ(watch->chunks().size(), 9u);
  for (const std::string& chunk : watch->chunks()) {
    EXPECT_TRUE(Json::parse(chunk, nullptr, false).is_discarded())
        << "a whole event in one chunk: " << chunk;
  }
}

TEST_F(WatchFramingTest, CoalesceEventsPutsReadyEventsInOneChunk) {
  open_watch_then_create_three_pods(WatchFraming::CoalesceEvents);
  ASSERT_EQ(watch->chunks().size(), 1u);
  EXPECT_EQ(std::count(watch->chunks()[0].begin(), watch->chunks()[0].end(), '\n'), 3);
}

TEST_F(WatchFramingTest, SplitAndCoalesceCutsAcrossEventBoundaries) {
  open_watch_then_create_three_pods(WatchFraming::SplitAndCoalesce);
  std::size_t total = 0;
  bool straddles = false;
  for (const std::string& chunk : watch->chunks()) {
    EXPECT_LE(chunk.size(), 16u);
    total += chunk.size();
    const auto newline = chunk.find('\n');
    straddles |= newline != std::string::npos && newline + 1 < chunk.size();
  }
  EXPECT_GT(watch->chunks().size(), 9u);
  EXPECT_TRUE(straddles) << "no chunk holds the end of one event and the start of the next";
  EXPECT_GT(total, 0u);
}

TEST(WatchFraming, InitialEventsAreCoalescedToo) {
  FakeApiServer::Options options;
  options.watch_framing = WatchFraming::CoalesceEvents;
  FakeApiServer server(options);
  for (const char* name : {"a", "b"}) server.create(Resource::Pods, make_pod("ns", name));
  WatchStream watch(server.port(), "/api/v1/pods?watch=1");
  EXPECT_EQ(name_in(watch.next_event()), "a");
  EXPECT_EQ(name_in(watch.next_event()), "b");
  EXPECT_EQ(watch.chunks().size(), 1u);
}

}  // namespace
}  // namespace gpushare::testing
