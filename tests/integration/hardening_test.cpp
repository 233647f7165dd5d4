// Live mode against the fake API server under hostile or broken input: absurd claims in
// annotations, custom resource names on every path that parses a pod, and the last-sync metric
// during an API-server outage.

#include <gtest/gtest.h>

#include <string>

#include "integration/live_fixture.h"

namespace gpushare::testing {
namespace {

std::string uid_of(FakeApiServer& fake, const std::string& name) {
  return fake.get(Resource::Pods, "default", name)->at("metadata").at("uid");
}

// Two pods bound to GPU 0 claiming int64's maximum must not sum to a negative "used" that would
// offer the GPU again and bind a pod onto it.
TEST(HostileClaims, MaximalAnnotationsFillTheirGpuButNeverWrap) {
  FakeApiServer fake;
  fake.create(Resource::Nodes, gpu_node("n1", 2, 32));
  for (const char* name : {"huge-a", "huge-b"}) {
    Json pod = gpu_pod(name, 4, "n1", 0);
    pod["metadata"]["annotations"]["ALIYUN_COM_GPU_MEM_POD"] = "9223372036854775807";
    fake.create(Resource::Pods, pod);
  }
  fake.create(Resource::Pods, gpu_pod("next", 16));
  LiveExtender extender(fake);
  ASSERT_TRUE(extender.wait_for_sync());
  ASSERT_TRUE(eventually([&] {
    return extender.read([](const core::ClusterModel& m) { return m.pod_count(); }) == 2u;
  }));
  EXPECT_GE(extender.used_on("n1", 0), 16);
  EXPECT_EQ(extender.used_on("n1", 1), 0);
  ASSERT_EQ(extender.bind("next", uid_of(fake, "next"), "n1"), 200);
  EXPECT_EQ(gpu_index_of(fake, "next"), "1");
  EXPECT_GE(extender.used_on("n1", 0), 16);
  EXPECT_GE(extender.snapshot().total_used(), 32);
}

Json custom_node(const std::string& name) {
  Json node = make_node(name);
  const Json capacity = {{"cpu", "32"},
                         {"memory", "128Gi"},
                         {"example.com/vram", "32"},
                         {"example.com/vram-count", "2"}};
  node["status"]["capacity"] = capacity;
  node["status"]["allocatable"] = capacity;
  return node;
}

// The binder reads a pod the watch has not shown yet with a GET; it parsed that pod with the
// default resource names, so under --resource-name example.com/vram it saw no GPU request and
// bound the pod without a GPU (no annotations, no reservation).
TEST(CustomResourceNames, BindsAPodTheWatchHasNotShownWithTheConfiguredNames) {
  FakeApiServer fake;
  fake.create(Resource::Nodes, custom_node("n1"));
  kube::ResourceNames names;
  names.memory = "example.com/vram";
  names.count = "example.com/vram-count";
  LiveExtender extender(fake, live_options([&](LiveOptions& o) { o.names = names; }));
  ASSERT_TRUE(extender.wait_for_sync());
  ASSERT_TRUE(eventually([&] { return extender.used_on("n1", 1) == 0; }));
  fake.hold_watch_events();  // the watch will not show the new pod: bind must GET it
  Json pod = make_pod("default", "fresh");
  pod["spec"]["containers"][0]["resources"] = {{"limits", {{"example.com/vram", "6"}}}};
  fake.create(Resource::Pods, pod);
  ASSERT_FALSE(extender.sync().cached_pod("default", "fresh"));
  ASSERT_EQ(extender.bind("fresh", uid_of(fake, "fresh"), "n1"), 200);
  const Json bound = *fake.get(Resource::Pods, "default", "fresh");
  EXPECT_EQ(bound["spec"]["nodeName"], "n1");
  ASSERT_TRUE(bound["metadata"].contains("annotations")) << bound.dump();
  EXPECT_EQ(bound["metadata"]["annotations"]["ALIYUN_COM_GPU_MEM_POD"], "6");
  EXPECT_EQ(bound["metadata"]["annotations"]["ALIYUN_COM_GPU_MEM_IDX"], "0");
  EXPECT_EQ(extender.used_on("n1", 0), 6);  // reserved while the watch catches up
  fake.release_watch_events();
  EXPECT_TRUE(
      eventually([&] { return extender.sync().cached_pod("default", "fresh").has_value(); }));
  EXPECT_EQ(extender.used_on("n1", 0), 6);
}

// gpushare_last_sync_timestamp_seconds as /metrics shows it; -1 if absent.
long long last_sync_seconds(const LiveExtender& extender) {
  auto result = extender.http().Get("/metrics");
  if (!result || result->status != 200) return -1;
  const std::string name = "\ngpushare_last_sync_timestamp_seconds ";
  const auto at = result->body.find(name);
  if (at == std::string::npos) return -1;
  return std::stoll(result->body.substr(at + name.size()));
}

// The last-sync time moves only with real list/watch progress, so an outage of the API server
// shows in it (and in the GpushareSyncStale alert).
TEST(LastSyncMetric, StandsStillWhileTheApiServerIsDown) {
  FakeApiServer fake;
  fake.create(Resource::Nodes, gpu_node("n1", 2, 32));
  LiveExtender extender(fake);
  ASSERT_TRUE(extender.wait_for_sync());
  ASSERT_TRUE(eventually([&] { return last_sync_seconds(extender) > 0; }));
  fake.stop_listening();
  // Let what was in flight settle (a few housekeeping rounds of 100 ms).
  std::this_thread::sleep_for(500ms);
  const long long during = last_sync_seconds(extender);
  ASSERT_GT(during, 0);
  // Long enough for the wall clock's seconds to move several times.
  std::this_thread::sleep_for(2500ms);
  EXPECT_EQ(last_sync_seconds(extender), during);
  // Back up: watches resume; their bookmarks (kube-apiserver sends one about every minute) and
  // events are progress again.
  fake.start_listening();
  EXPECT_TRUE(eventually(
      [&] {
        fake.send_bookmark_now();
        return last_sync_seconds(extender) > during;
      },
      20s));
}

}  // namespace
}  // namespace gpushare::testing
