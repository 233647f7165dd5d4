// Live mode knows pods' pins to GPU models: read from the API server's pods, resolved against
// the nodes' models, kept with each pod in the model, learned by the policy and shown in
// /inspect; a pending pod pinned to a model no node carries is warned about once.

#include <gtest/gtest.h>

#include "integration/live_fixture.h"
#include "support/log_capture.h"

namespace gpushare::testing {
namespace {

Json labelled(Json node, const std::string& label, const std::string& model) {
  node["metadata"]["labels"] = {{label, model}};
  return node;
}

Json required_affinity(Json pod, const std::string& label, const std::string& op, Json values) {
  pod["spec"]["affinity"] = {
      {"nodeAffinity",
       {{"requiredDuringSchedulingIgnoredDuringExecution",
         {{"nodeSelectorTerms",
           Json::array(
               {{{"matchExpressions",
                  Json::array({{{"key", label}, {"operator", op}, {"values", values}}})}}})}}}}}};
  return pod;
}

constexpr const char* kLabel = "nvidia.com/gpu.product";

class LivePins : public ::testing::Test {
 protected:
  void SetUp() override {
    fake.create(Resource::Nodes, labelled(gpu_node("a100", 4, 160), kLabel, "A100"));
    fake.create(Resource::Nodes, labelled(gpu_node("t4", 2, 32), kLabel, "Tesla-T4"));
    fake.create(Resource::Nodes, gpu_node("plain", 1, 16));  // no model label
  }
  FakeApiServer fake;
};

TEST_F(LivePins, APinnedPodCarriesItsPinIntoTheModelTheWorkloadAndInspect) {
  LiveOptions options;
  options.policy = "fgd-plus";
  LiveExtender extender(fake, options);
  ASSERT_TRUE(extender.wait_for_sync());
  // Pods kube-scheduler bound by itself, seen by the watch: NotIn Tesla-T4 allows A100 and the
  // unlabelled node here.
  for (int i = 0; i < 24; ++i) {
    fake.create(Resource::Pods,
                required_affinity(gpu_pod("job-" + std::to_string(i), 1, "a100", i % 4), kLabel,
                                  "NotIn", {"Tesla-T4"}));
  }
  ASSERT_TRUE(eventually([&] {
    return extender.read([](const core::ClusterModel& m) { return m.pod_count(); }) == 24u;
  }));
  const core::ModelPin pin = extender.read(
      [](const core::ClusterModel& m) { return m.find_pod(m.pods().begin()->first)->model_pin; });
  EXPECT_TRUE(pin.pinned);
  EXPECT_EQ(pin.describe(), "notin (Tesla-T4)");
  // The policy learned them as pinned to what the pin allows in this cluster.
  const std::string learned = extender.policy_state().dump();
  EXPECT_NE(learned.find(R"("models":["","A100"])"), std::string::npos) << learned;

  const auto inspect = extender.http().Get("/gpushare-scheduler/inspect");
  ASSERT_TRUE(inspect);
  const Json cluster = Json::parse(inspect->body);
  const Json& pod = cluster["nodes"][0]["devs"][0]["pods"][0];
  EXPECT_EQ(pod["modelPin"], "notin (Tesla-T4)") << cluster["nodes"][0].dump();
  EXPECT_EQ(pod["allowedModels"], Json({"", "A100"}));
  const Json& models = cluster["gpuModels"];
  ASSERT_EQ(models.size(), 3u) << models.dump();
  EXPECT_EQ(models[0]["model"], "");
  EXPECT_EQ(models[1]["model"], "A100");
  EXPECT_EQ(models[1]["usedGPU"], 24);
  EXPECT_EQ(models[1]["pinnedPods"], 24);
  EXPECT_EQ(models[2]["pinnedPods"], 0);
  EXPECT_GT(models[1]["learnedPinnedWeight"].get<double>(), 0.1) << models.dump();
  EXPECT_EQ(models[2]["learnedPinnedWeight"], 0.0);

  // Filter of a pending pod with the same pin: the T4 node is not among its models.
  const Json pending = required_affinity(gpu_pod("next", 2), kLabel, "NotIn", {"Tesla-T4"});
  const auto [status, reply] =
      extender.post("filter", Json{{"Pod", pending}, {"NodeNames", {"a100", "t4", "plain"}}});
  ASSERT_EQ(status, 200);
  EXPECT_EQ(reply["NodeNames"], Json({"a100", "plain"}));
}

TEST_F(LivePins, APendingPodPinnedToAModelNoNodeCarriesIsWarnedAboutOnce) {
  LogCapture log;
  LiveExtender extender(fake);
  ASSERT_TRUE(extender.wait_for_sync());
  Json ghost = gpu_pod("ghost", 4);
  ghost["spec"]["nodeSelector"] = {{kLabel, "H100"}};
  fake.create(Resource::Pods, ghost);
  const std::string warning =
      "pod default/ghost is pinned to GPU models on nvidia.com/gpu.product (in (H100))";
  ASSERT_TRUE(eventually([&] { return log.text().find(warning) != std::string::npos; }))
      << log.text();
  // kube-scheduler updates the pod's conditions; the watch sees it again: no second line.
  fake.mutate(Resource::Pods, "default", "ghost", [](Json& pod) {
    pod["metadata"]["labels"] = {{"try", "2"}};
  });
  fake.create(Resource::Pods, gpu_pod("marker", 1));  // the watch delivers it after the update
  ASSERT_TRUE(
      eventually([&] { return extender.sync().cached_pod("default", "marker").has_value(); }));
  const std::string text = log.text();
  EXPECT_EQ(text.find(warning, text.find(warning) + 1), std::string::npos) << text;
  // A pod pinned to a model some node carries is not warned about.
  EXPECT_EQ(text.find("pod default/marker"), std::string::npos);
}

TEST_F(LivePins, TheModelLabelIsConfigurable) {
  fake.create(Resource::Nodes, labelled(gpu_node("custom", 2, 32), "example.com/gpu", "L4"));
  LiveOptions options;
  options.names.gpu_model_label = "example.com/gpu";
  LiveExtender extender(fake, options);
  ASSERT_TRUE(extender.wait_for_sync());
  fake.create(Resource::Pods, required_affinity(gpu_pod("l4-job", 2, "custom", 0),
                                                "example.com/gpu", "In", {"L4"}));
  ASSERT_TRUE(eventually([&] {
    return extender.read([](const core::ClusterModel& m) { return m.pod_count(); }) == 1u;
  }));
  // Only the custom label names models: every other node is unlabelled under it.
  EXPECT_EQ(extender.read([](const core::ClusterModel& m) { return m.gpu_models(); }),
            (std::vector<std::string>{"", "L4"}));
  const core::ModelPin pin =
      extender.read([](const core::ClusterModel& m) { return m.pods().begin()->second.model_pin; });
  EXPECT_EQ(pin.describe(), "in (L4)");
}

}  // namespace
}  // namespace gpushare::testing
