// The model follows the API server: initial sync, node and pod changes, unhealthy GPUs,
// dropped watches, 410s, server restarts, token rotation.

#include <gtest/gtest.h>

#include <fstream>

#include "integration/live_fixture.h"

namespace gpushare::testing {
namespace {

class Sync : public ::testing::Test {
 protected:
  void SetUp() override {
    fake.create(Resource::Nodes, gpu_node("n1", 4, 64));
    fake.create(Resource::Nodes, gpu_node("n2", 2, 64));
    fake.create(Resource::Nodes, gpu_node("cpu", -1, -1));
    fake.create(Resource::Pods, gpu_pod("running", 10, "n1", 2));
    fake.create(Resource::Pods, gpu_pod("pending", 5));
    fake.create(Resource::Pods, gpu_pod("no-index", 7, "n2"));
    fake.create(Resource::ConfigMaps,
                make_configmap("kube-system", "unhealthy-gpu-n1", {{"gpus", "3"}}));
  }
  FakeApiServer fake;
};

TEST_F(Sync, InitialSyncBuildsTheModelAndTurnsReady) {
  LiveExtender extender(fake);
  ASSERT_TRUE(extender.wait_for_sync());
  EXPECT_TRUE(eventually([&] {
    const auto readyz = extender.http().Get("/readyz");
    return readyz && readyz->status == 200;
  }));
  extender.read([](const core::ClusterModel& model) {
    EXPECT_EQ(model.node_count(), 3u);
    EXPECT_EQ(model.pod_count(), 2u);  // the pending pod holds nothing
    const core::NodeState* n1 = model.find_node("n1");
    EXPECT_EQ(n1->gpus()[2].used, 10);
    EXPECT_FALSE(n1->gpus()[3].healthy);
    const core::NodeState* n2 = model.find_node("n2");
    EXPECT_EQ(n2->unindexed_used(), 7);  // bound without an index: counts on the node
    return 0;
  });
  EXPECT_TRUE(extender.sync().cached_pod("default", "pending").has_value());
}

TEST_F(Sync, NodeChangesWithinOneEvent) {
  LiveExtender extender(fake);
  ASSERT_TRUE(extender.wait_for_sync());
  fake.create(Resource::Nodes, gpu_node("n3", 8, 128));
  EXPECT_TRUE(eventually([&] { return extender.used_on("n3", 7) == 0; }));
  // GPU count shrinks: 4 -> 2; the pod on GPU 2 is held on the node.
  fake.replace(Resource::Nodes, gpu_node("n1", 2, 32));
  EXPECT_TRUE(eventually([&] {
    return extender.read([](const core::ClusterModel& m) {
      const core::NodeState* n1 = m.find_node("n1");
      return n1 && n1->gpu_count() == 2 && n1->unindexed_used() == 10;
    });
  }));
  fake.remove(Resource::Nodes, "", "n2");
  EXPECT_TRUE(eventually([&] {
    return extender.read([](const core::ClusterModel& m) { return m.find_node("n2") == nullptr; });
  }));
}

TEST_F(Sync, PodLifecycle) {
  LiveExtender extender(fake);
  ASSERT_TRUE(extender.wait_for_sync());
  fake.create(Resource::Pods, gpu_pod("late", 3, "n2", 1));
  EXPECT_TRUE(eventually([&] { return extender.used_on("n2", 1) == 3; }));
  // Succeeded pods free their memory.
  fake.mutate(Resource::Pods, "default", "late",
              [](Json& pod) { pod["status"]["phase"] = "Succeeded"; });
  EXPECT_TRUE(eventually([&] { return extender.used_on("n2", 1) == 0; }));
  // A terminating pod keeps its memory until it is gone.
  auto http = extender.http();
  EXPECT_EQ(fake.get(Resource::Pods, "default", "running")->at("spec").at("nodeName"), "n1");
  httplib::Client api(fake.host(), fake.port());
  auto deleted = api.Delete("/api/v1/namespaces/default/pods/running");
  ASSERT_TRUE(deleted);
  EXPECT_EQ(deleted->status, 200);
  EXPECT_TRUE(eventually([&] {
    auto pod = extender.sync().cached_pod("default", "running");
    return pod && pod->terminating;
  }));
  EXPECT_EQ(extender.used_on("n1", 2), 10);
  fake.finalize_pod_deletion("default", "running");
  EXPECT_TRUE(eventually([&] { return extender.used_on("n1", 2) == 0; }));
}

TEST_F(Sync, CpuOnlyPodsCountOnTheirNodesCpuAndMemoryOnly) {
  constexpr std::int64_t kMi = 1024 * 1024;
  LiveExtender extender(fake);
  ASSERT_TRUE(extender.wait_for_sync());
  struct Used {
    std::int64_t cpu = -1, memory = -1;
    core::Units gpu = -1;
    bool operator==(const Used&) const = default;
  };
  auto used = [&](const std::string& node) {
    return extender.read([&](const core::ClusterModel& m) {
      const core::NodeState* state = m.find_node(node);
      return state == nullptr ? Used{}
                              : Used{state->cpu_used(), state->memory_used(), state->total_used()};
    });
  };
  extender.read([](const core::ClusterModel& m) {
    // Allocatable from the Node objects (gpu_node: 32 cores, 128 GiB), also on the CPU node.
    EXPECT_EQ(m.find_node("n1")->spec().cpu_milli, 32000);
    EXPECT_EQ(m.find_node("n1")->spec().memory, 128 * 1024 * kMi);
    EXPECT_EQ(m.find_node("cpu")->spec().cpu_milli, 32000);
    return 0;
  });
  EXPECT_EQ(used("n1"), (Used{0, 0, 10}));

  fake.create(Resource::Pods, cpu_pod("exporter", "n1", "250m", "300Mi", "monitoring"));
  fake.create(Resource::Pods, cpu_pod("web", "cpu", "1500m", "2Gi"));
  EXPECT_TRUE(eventually([&] {
    return used("n1") == Used{250, 300 * kMi, 10} && used("cpu") == Used{1500, 2048 * kMi, 0};
  })) << used("n1").cpu
      << " " << used("cpu").cpu;
  // GPUs are untouched, and whatever shows GPUs does not show these pods.
  EXPECT_EQ(extender.used_on("n1", 2), 10);
  extender.read([](const core::ClusterModel& m) {
    EXPECT_EQ(m.pod_count(), 4u);
    EXPECT_EQ(m.gpu_pod_count(), 2u);
    EXPECT_EQ(m.find_node("n1")->unindexed_used(), 0);
    return 0;
  });
  const auto inspect = extender.http().Get("/gpushare-scheduler/inspect");
  ASSERT_TRUE(inspect);
  const Json cluster = Json::parse(inspect->body);
  EXPECT_EQ(cluster["pods"], 2);
  EXPECT_EQ(cluster["usedGPU"], 17);
  for (const Json& node : cluster["nodes"]) {
    for (const Json& pod : node["unindexedPods"]) EXPECT_NE(pod["name"], "exporter");
    for (const Json& dev : node["devs"]) {
      for (const Json& pod : dev["pods"]) EXPECT_NE(pod["name"], "exporter");
    }
  }
  const auto metrics = extender.http().Get("/metrics");
  ASSERT_TRUE(metrics);
  EXPECT_NE(metrics->body.find("\ngpushare_pods 2\n"), std::string::npos);

  // Finished or deleted, they are gone again.
  fake.mutate(Resource::Pods, "default", "web",
              [](Json& pod) { pod["status"]["phase"] = "Succeeded"; });
  fake.remove(Resource::Pods, "monitoring", "exporter");
  EXPECT_TRUE(eventually([&] {
    return used("n1") == Used{0, 0, 10} && used("cpu") == Used{0, 0, 0};
  }));
  EXPECT_EQ(extender.read([](const core::ClusterModel& m) { return m.pod_count(); }), 2u);
}

TEST_F(Sync, PodsBoundByOthersTeachThePolicyOnceListsDoNot) {
  LiveOptions options;
  options.policy = "fgd-plus";
  LiveExtender extender(fake, options);
  ASSERT_TRUE(extender.wait_for_sync());
  const auto observed = [&] {
    return extender.policy_state()["workload"]["observedPods"].get<int>();
  };
  // The fixture's bound GPU pods came with the list: not observed.
  EXPECT_EQ(observed(), 0);
  // A CPU-only pod kube-scheduler bound by itself arrives by watch: observed once, also after
  // later updates of the same pod.
  fake.create(Resource::Pods, cpu_pod("web", "n1", "2", "4Gi"));
  EXPECT_TRUE(eventually([&] { return observed() == 1; })) << extender.policy_state().dump();
  fake.mutate(Resource::Pods, "default", "web", [](Json& pod) {
    pod["metadata"]["labels"] = {{"v", "2"}};
  });
  fake.create(Resource::Pods, cpu_pod("other", "cpu", "1", "1Gi"));
  EXPECT_TRUE(eventually([&] { return observed() == 2; }));
  EXPECT_EQ(observed(), 2);
  // A pending pod teaches nothing until it is bound.
  fake.create(Resource::Pods, cpu_pod("waiting", "", "1", "1Gi"));
  EXPECT_TRUE(
      eventually([&] { return extender.sync().cached_pod("default", "waiting").has_value(); }));
  EXPECT_EQ(observed(), 2);
}

TEST_F(Sync, CpuOnlyPodBoundThroughTheExtenderCountsOnceTheWatchShowsIt) {
  LiveExtender extender(fake);
  ASSERT_TRUE(extender.wait_for_sync());
  const Json pod = fake.create(Resource::Pods, cpu_pod("batch", "", "2", "1Gi"));
  EXPECT_EQ(extender.bind("batch", pod["metadata"]["uid"], "n2"), 200);
  EXPECT_TRUE(eventually([&] {
    return extender.read(
        [](const core::ClusterModel& m) { return m.find_node("n2")->cpu_used() == 2000; });
  }));
  extender.read([](const core::ClusterModel& m) {
    EXPECT_EQ(m.find_node("n2")->memory_used(), 1024 * 1024 * 1024);
    EXPECT_EQ(m.find_node("n2")->total_used(), 7);  // the unindexed GPU pod's, nothing more
    EXPECT_EQ(m.assumed_count(), 0u);
    return 0;
  });
  const Json bound = *fake.get(Resource::Pods, "default", "batch");
  EXPECT_EQ(bound["spec"]["nodeName"], "n2");
  EXPECT_FALSE(bound["metadata"].contains("annotations") &&
               bound["metadata"]["annotations"].contains("ALIYUN_COM_GPU_MEM_IDX"));
}

TEST_F(Sync, SameNameNewUidIsANewPod) {
  LiveExtender extender(fake);
  ASSERT_TRUE(extender.wait_for_sync());
  const std::string old_uid =
      fake.get(Resource::Pods, "default", "running")->at("metadata").at("uid");
  fake.remove(Resource::Pods, "default", "running");
  fake.create(Resource::Pods, gpu_pod("running", 4, "n1", 0));
  EXPECT_TRUE(
      eventually([&] { return extender.used_on("n1", 0) == 4 && extender.used_on("n1", 2) == 0; }));
  extender.read([&](const core::ClusterModel& m) {
    EXPECT_EQ(m.find_pod(old_uid), nullptr);
    return 0;
  });
}

TEST_F(Sync, UnhealthyConfigMapFollowsChanges) {
  LiveExtender extender(fake);
  ASSERT_TRUE(extender.wait_for_sync());
  auto healthy = [&](const std::string& node, int gpu) {
    return extender.read([&](const core::ClusterModel& m) {
      return m.find_node(node)->gpus()[static_cast<std::size_t>(gpu)].healthy;
    });
  };
  EXPECT_FALSE(healthy("n1", 3));
  fake.mutate(Resource::ConfigMaps, "kube-system", "unhealthy-gpu-n1",
              [](Json& cm) { cm["data"]["gpus"] = "0,1"; });
  EXPECT_TRUE(
      eventually([&] { return !healthy("n1", 0) && !healthy("n1", 1) && healthy("n1", 3); }));
  fake.remove(Resource::ConfigMaps, "kube-system", "unhealthy-gpu-n1");
  EXPECT_TRUE(eventually([&] { return healthy("n1", 0) && healthy("n1", 1); }));
  // ConfigMaps in other namespaces do not count.
  fake.create(Resource::ConfigMaps, make_configmap("default", "unhealthy-gpu-n2", {{"gpus", "0"}}));
  fake.create(Resource::ConfigMaps,
              make_configmap("kube-system", "unhealthy-gpu-n2", {{"gpus", "1"}}));
  EXPECT_TRUE(eventually([&] { return !healthy("n2", 1); }));
  EXPECT_TRUE(healthy("n2", 0));
}

TEST_F(Sync, SurvivesDroppedWatchesAndChunking) {
  LiveExtender extender(fake);
  ASSERT_TRUE(extender.wait_for_sync());
  fake.set_watch_framing(WatchFraming::SplitAndCoalesce);
  fake.drop_all_watches();
  fake.create(Resource::Pods, gpu_pod("a", 1, "n2", 1));
  fake.create(Resource::Pods, gpu_pod("b", 2, "n2", 1));
  EXPECT_TRUE(eventually([&] { return extender.used_on("n2", 1) == 3; }));
  fake.close_all_watches();
  fake.create(Resource::Pods, gpu_pod("c", 4, "n2", 1));
  EXPECT_TRUE(eventually([&] { return extender.used_on("n2", 1) == 7; }));
}

TEST_F(Sync, RelistOnGoneReplacesTheCache) {
  LiveExtender extender(fake);
  ASSERT_TRUE(extender.wait_for_sync());
  const auto lists_before = extender.sync().counters().pods.lists;
  // While the watch is down, history is compacted and objects change: the re-watch gets 410
  // and the relist must drop the vanished pod and add the new one.
  fake.stop_listening();
  fake.remove(Resource::Pods, "default", "running");
  fake.create(Resource::Pods, gpu_pod("newcomer", 6, "n1", 1));
  fake.compact_to_current();
  fake.start_listening();
  EXPECT_TRUE(
      eventually([&] { return extender.used_on("n1", 2) == 0 && extender.used_on("n1", 1) == 6; }));
  // The reflector counts the list after handing it over, so the model may change first.
  EXPECT_TRUE(eventually([&] { return extender.sync().counters().pods.lists > lists_before; }));
}

TEST_F(Sync, ListFailuresAreRetried) {
  fake.fail_next(Verb::List, 3, 500);
  LiveExtender extender(fake);
  ASSERT_TRUE(extender.wait_for_sync());
  EXPECT_EQ(extender.used_on("n1", 2), 10);
}

TEST(SyncAuth, TokenFileRotation) {
  const auto dir = std::filesystem::temp_directory_path() / "gpushare-token-rotation";
  std::filesystem::create_directories(dir);
  const auto token_file = dir / "token";
  const auto kubeconfig = dir / "kubeconfig";
  auto write = [](const std::filesystem::path& path, const std::string& text) {
    std::ofstream(path) << text;
  };
  FakeApiServerOptions options;
  options.accepted_tokens = std::set<std::string>{"secret-1"};
  FakeApiServer fake(options);
  fake.create(Resource::Nodes, gpu_node("n1", 1, 16));
  write(token_file, "secret-1\n");
  write(kubeconfig,
        "apiVersion: v1\nkind: Config\ncurrent-context: fake\n"
        "clusters: [{name: fake, cluster: {server: \"" +
            fake.base_url() +
            "\"}}]\n"
            "users: [{name: u, user: {tokenFile: token}}]\n"
            "contexts: [{name: fake, context: {cluster: fake, user: u}}]\n");
  LiveExtender extender(fake, live_options([&](LiveOptions& o) { o.kubeconfig = kubeconfig; }));
  ASSERT_TRUE(extender.wait_for_sync());
  // Rotation: the file gets a new token and the server stops accepting the old one.
  write(token_file, "secret-2\n");
  fake.set_accepted_tokens({"secret-2"});
  fake.drop_all_watches();
  fake.create(Resource::Pods, gpu_pod("after-rotation", 3, "n1", 0));
  EXPECT_TRUE(eventually([&] { return extender.used_on("n1", 0) == 3; }));
  std::filesystem::remove_all(dir);
}

TEST(SyncAuth, WrongTokenNeverTurnsReady) {
  FakeApiServerOptions strict;
  strict.accepted_tokens = std::set<std::string>{"other"};
  FakeApiServer locked(strict);
  LiveExtender denied(locked, live_options([](LiveOptions& o) { o.token = "secret-1"; }));
  EXPECT_FALSE(denied.sync().wait_for_sync(500ms));
  EXPECT_NE(denied.sync().not_ready_reason().find("nodes"), std::string::npos);
  EXPECT_EQ(denied.http().Get("/readyz")->status, 503);
}

}  // namespace
}  // namespace gpushare::testing
