// Pods pinned to GPU models through the service: filter keeps the pin (standalone mode, the
// HTTP path), /inspect shows each pod's pin and the per-model picture, and a pin no node can
// satisfy is warned about once per pod.

#include <gtest/gtest.h>

#include <chrono>

#include "contract/extender_fixture.h"
#include "gpushare/inspect/render.h"
#include "gpushare/inspect/view.h"
#include "gpushare/service/pin_warnings.h"
#include "support/log_capture.h"

namespace gpushare::testing {
namespace {

Json pinned(Json pod, const std::string& model) {
  pod["spec"]["nodeSelector"] = {{"nvidia.com/gpu.product", model}};
  return pod;
}

Json pinned_cluster() {
  return cluster_list({node_object("t4-1", 2, 32, "Tesla-T4"),
                       node_object("t4-2", 2, 32, "Tesla-T4"),
                       node_object("a100-1", 4, 160, "A100"),
                       pinned(pod_object("trainer", "uid-trainer", 20, "a100-1", 1), "A100"),
                       pod_object("notebook", "uid-notebook", 4, "t4-1", 0),
                       pinned(pod_object("ghost", "uid-ghost", 4), "H100")});
}

TEST(ModelPinService, FilterKeepsAPinnedPodOnItsModels) {
  ExtenderUnderTest extender(pinned_cluster());
  const Json args = {{"Pod", pinned(pod_object("p", "uid-p", 4), "A100")},
                     {"NodeNames", {"t4-1", "t4-2", "a100-1"}}};
  const auto [status, reply] = extender.post("filter", args);
  ASSERT_EQ(status, 200);
  EXPECT_EQ(reply["NodeNames"], Json({"a100-1"}));
  EXPECT_EQ(reply["FailedNodes"]["t4-1"], "node's GPU model is not among the pod's allowed models");
  // Without the pin every node with room passes.
  const auto [plain_status, plain] = extender.post(
      "filter",
      Json{{"Pod", pod_object("q", "uid-q", 4)}, {"NodeNames", {"t4-1", "t4-2", "a100-1"}}});
  ASSERT_EQ(plain_status, 200);
  EXPECT_EQ(plain["NodeNames"].size(), 3u);
}

TEST(ModelPinService, InspectShowsPinsAndThePerModelPicture) {
  ExtenderUnderTest extender(pinned_cluster(), "fgd-plus");
  const Json cluster = extender.inspect();
  Json trainer;
  for (const Json& node : cluster["nodes"]) {
    for (const Json& dev : node["devs"]) {
      for (const Json& pod : dev["pods"]) {
        if (pod["name"] == "trainer") trainer = pod;
        if (pod["name"] == "notebook") {
          EXPECT_FALSE(pod.contains("modelPin")) << pod.dump();
        }
      }
    }
  }
  EXPECT_EQ(trainer["modelPin"], "in (A100)") << cluster.dump();
  EXPECT_EQ(trainer["allowedModels"], Json({"A100"}));
  const Json& models = cluster["gpuModels"];
  ASSERT_EQ(models.size(), 2u) << models.dump();
  EXPECT_EQ(models[0]["model"], "A100");
  EXPECT_EQ(models[0]["nodes"], 1);
  EXPECT_EQ(models[0]["gpus"], 4);
  EXPECT_EQ(models[0]["totalGPU"], 160);
  EXPECT_EQ(models[0]["usedGPU"], 20);
  EXPECT_EQ(models[0]["pinnedPods"], 1);
  EXPECT_EQ(models[1]["model"], "Tesla-T4");
  EXPECT_EQ(models[1]["gpus"], 4);
  EXPECT_EQ(models[1]["usedGPU"], 4);
  EXPECT_EQ(models[1]["pinnedPods"], 0);
  // A learning policy reports its learned pinned demand (none learned yet).
  EXPECT_EQ(models[0]["learnedPinnedWeight"], 0.0);
}

TEST(ModelPinService, KubectlInspectDetailsNamePinnedPodsAndModels) {
  ExtenderUnderTest extender(pinned_cluster(), "fgd-plus");
  const inspect::ClusterView view = inspect::cluster_view(extender.inspect());
  const std::string notes = inspect::render_notes(view, /*details=*/true);
  EXPECT_NE(
      notes.find("note: pod default/trainer on a100-1 GPU1 is pinned to GPU models: in (A100) "
                 "(in this cluster: A100)\n"),
      std::string::npos)
      << notes;
  EXPECT_NE(
      notes.find("note: GPU model A100: 1 node, 4 GPUs, 20/160 memory allocated, 1 pinned pod, "
                 "learned pinned demand 0.0%\n"),
      std::string::npos)
      << notes;
  // The summary's notes (without -d) stay as they were.
  EXPECT_EQ(inspect::render_notes(view, false).find("GPU model"), std::string::npos);
}

TEST(ModelPinService, BindTeachesThePolicyTheResolvedPin) {
  ExtenderUnderTest extender(pinned_cluster(), "fgd-plus");
  // Enough pinned binds to outweigh the prior in the learned target.
  for (int i = 0; i < 40; ++i) {
    const std::string name = "job-" + std::to_string(i);
    const Json pod = pinned(pod_object(name, "uid-" + name, 1), "A100");
    // Filter first: the standalone binder then knows the pod, as it would from kube-scheduler.
    ASSERT_EQ(extender.post("filter", Json{{"Pod", pod}, {"NodeNames", {"a100-1"}}}).first, 200);
    const auto [status, reply] = extender.post("bind", Json{{"PodName", name},
                                                            {"PodNamespace", "default"},
                                                            {"PodUID", "uid-" + name},
                                                            {"Node", "a100-1"}});
    ASSERT_EQ(status, 200);
    ASSERT_EQ(reply["Error"], "") << reply.dump();
  }
  const Json models = extender.inspect()["gpuModels"];
  EXPECT_GT(models[0]["learnedPinnedWeight"].get<double>(), 0.2) << models.dump();
  EXPECT_EQ(models[1]["learnedPinnedWeight"], 0.0);
}

TEST(ModelPinService, APodPinnedToAModelNoNodeCarriesIsWarnedAboutOnce) {
  LogCapture log;
  ExtenderUnderTest extender(pinned_cluster());
  const std::string warning =
      "pod default/ghost is pinned to GPU models on nvidia.com/gpu.product (in (H100)) that no GPU "
      "node carries (the nodes carry: A100, Tesla-T4)";
  EXPECT_NE(log.text().find(warning), std::string::npos) << log.text();  // from the cluster file
  // A filter request for another such pod: said once, however often kube-scheduler asks.
  const Json pod = pinned(pod_object("lost", "uid-lost", 4), "H200");
  for (int i = 0; i < 3; ++i) {
    ASSERT_EQ(extender.post("filter", Json{{"Pod", pod}, {"NodeNames", {"t4-1", "a100-1"}}}).first,
              200);
  }
  const std::string text = log.text();
  const std::string lost =
      "pod default/lost is pinned to GPU models on nvidia.com/gpu.product (in (H200))";
  const auto first = text.find(lost);
  EXPECT_NE(first, std::string::npos) << text;
  EXPECT_EQ(text.find(lost, first + 1), std::string::npos) << text;
}

kube::PodInfo pending_pod(std::string name, std::string model) {
  kube::PodInfo pod;
  pod.namespace_name = "default";
  pod.uid = "uid-" + name;
  pod.name = std::move(name);
  pod.request = 4;
  pod.model_pin = core::ModelPin::any_of(std::vector<std::string>{std::move(model)});
  return pod;
}

const std::vector<std::string> kModels = {"A100", "Tesla-T4"};

TEST(UnmatchedPinWarnings, OncePerPodAndOnlyForPendingGpuPodsNoNodeCanTake) {
  service::UnmatchedPinWarnings warnings;
  const kube::PodInfo ghost = pending_pod("ghost", "H100");
  const auto first = warnings.check(ghost, kModels, "nvidia.com/gpu.product");
  ASSERT_TRUE(first.has_value());
  EXPECT_NE(first->find("pod default/ghost"), std::string::npos) << *first;
  EXPECT_FALSE(warnings.check(ghost, kModels, "nvidia.com/gpu.product").has_value());
  // A pin some node satisfies, a bound pod, a pod without GPU memory, no node list yet: silent.
  EXPECT_FALSE(warnings.check(pending_pod("fine", "A100"), kModels, "l").has_value());
  kube::PodInfo bound = pending_pod("bound", "H100");
  bound.node_name = "n1";
  EXPECT_FALSE(warnings.check(bound, kModels, "l").has_value());
  kube::PodInfo cpu = pending_pod("cpu", "H100");
  cpu.request = 0;
  EXPECT_FALSE(warnings.check(cpu, kModels, "l").has_value());
  EXPECT_FALSE(warnings.check(pending_pod("early", "H100"), {}, "l").has_value());
  // The same name with a new UID is a new pod.
  kube::PodInfo again = ghost;
  again.uid = "uid-ghost-2";
  EXPECT_TRUE(warnings.check(again, kModels, "l").has_value());
}

TEST(UnmatchedPinWarnings, AFloodOfSuchPodsWritesAFewLinesAndACount) {
  service::UnmatchedPinWarnings warnings(4096, std::chrono::hours(1));
  int logged = 0;
  for (int i = 0; i < 100; ++i) {
    if (warnings.check(pending_pod("p" + std::to_string(i), "H100"), kModels, "l")) ++logged;
  }
  EXPECT_EQ(logged, 5);
}

TEST(UnmatchedPinWarnings, RemembersABoundedNumberOfPods) {
  service::UnmatchedPinWarnings warnings(2, std::chrono::nanoseconds(0));
  const kube::PodInfo a = pending_pod("a", "H100");
  EXPECT_TRUE(warnings.check(a, kModels, "l"));
  EXPECT_FALSE(warnings.check(a, kModels, "l"));
  EXPECT_TRUE(warnings.check(pending_pod("b", "H100"), kModels, "l"));
  EXPECT_TRUE(warnings.check(pending_pod("c", "H100"), kModels, "l"));
  // a was forgotten to keep the memory bounded: said again, once.
  EXPECT_TRUE(warnings.check(a, kModels, "l"));
  EXPECT_FALSE(warnings.check(a, kModels, "l"));
}

}  // namespace
}  // namespace gpushare::testing
