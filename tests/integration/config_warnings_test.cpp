// Live mode: a mistake in an unhealthy-gpu ConfigMap is told (log, metric, /inspect) for as long
// as it stands, and the phase of each pod reaches /inspect.

#include <gtest/gtest.h>

#include "integration/live_fixture.h"

namespace gpushare::testing {
namespace {

Json inspect(const LiveExtender& extender, const std::string& node = "") {
  auto result =
      extender.http().Get("/gpushare-scheduler/inspect" + (node.empty() ? "" : "/" + node));
  if (!result || result->status != 200) return nullptr;
  return Json::parse(result->body);
}

std::string metrics(const LiveExtender& extender) {
  auto result = extender.http().Get("/metrics");
  return result ? result->body : "";
}

bool has_line(const std::string& text, const std::string& line) {
  return text.find("\n" + line + "\n") != std::string::npos;
}

class ConfigWarnings : public ::testing::Test {
 protected:
  void SetUp() override {
    fake.create(Resource::Nodes, gpu_node("n1", 4, 64));
    fake.create(Resource::Nodes, gpu_node("n2", 2, 32));
  }
  FakeApiServer fake;
};

TEST_F(ConfigWarnings, AMisspeltKeyIsReportedUntilFixed) {
  // `gpu:` for `gpus:` marks nothing unhealthy; that must not pass silently.
  fake.create(Resource::ConfigMaps,
              make_configmap("kube-system", "unhealthy-gpu-n1", {{"gpu", "2"}}));
  LiveExtender extender(fake);
  ASSERT_TRUE(extender.wait_for_sync());

  const auto warnings = extender.sync().config_warnings().all();
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_EQ(warnings[0].object, "kube-system/unhealthy-gpu-n1");
  EXPECT_EQ(warnings[0].kind, "unknown_key");
  EXPECT_EQ(warnings[0].key, "gpu");
  EXPECT_EQ(warnings[0].value, "2");
  EXPECT_EQ(warnings[0].message,
            "ConfigMap kube-system/unhealthy-gpu-n1: data key \"gpu\" (value \"2\") is not read, "
            "only \"gpus\" is; "
            "GPUs of node n1 marked unhealthy: none");

  const Json document = inspect(extender);
  ASSERT_TRUE(document.contains("configWarnings")) << document.dump();
  ASSERT_EQ(document["configWarnings"].size(), 1u);
  EXPECT_EQ(document["configWarnings"][0]["object"], "kube-system/unhealthy-gpu-n1");
  EXPECT_EQ(document["configWarnings"][0]["key"], "gpu");
  EXPECT_EQ(document["configWarnings"][0]["value"], "2");
  EXPECT_EQ(document["configWarnings"][0]["message"], warnings[0].message);
  const std::string text = metrics(extender);
  EXPECT_TRUE(has_line(text, "gpushare_config_warnings{kind=\"unknown_key\"} 1")) << text;
  EXPECT_TRUE(has_line(text, "gpushare_config_warnings{kind=\"bad_value\"} 0")) << text;

  // Fixed: the GPU is marked, and the warning is gone everywhere.
  fake.mutate(Resource::ConfigMaps, "kube-system", "unhealthy-gpu-n1", [](Json& cm) {
    cm["data"] = {{"gpus", "2"}};
  });
  EXPECT_TRUE(eventually([&] { return extender.sync().config_warnings().all().empty(); }));
  EXPECT_TRUE(extender.read(
      [](const core::ClusterModel& m) { return !m.find_node("n1")->gpus()[2].healthy; }));
  EXPECT_EQ(inspect(extender)["configWarnings"], Json::array());
  EXPECT_TRUE(has_line(metrics(extender), "gpushare_config_warnings{kind=\"unknown_key\"} 0"));
}

TEST_F(ConfigWarnings, ANonNumericIndexIsABadValueAndDeletionClearsIt) {
  LiveExtender extender(fake);
  ASSERT_TRUE(extender.wait_for_sync());
  EXPECT_EQ(inspect(extender)["configWarnings"], Json::array());
  fake.create(Resource::ConfigMaps,
              make_configmap("kube-system", "unhealthy-gpu-n2", {{"gpus", "1,first"}}));
  EXPECT_TRUE(eventually([&] { return extender.sync().config_warnings().all().size() == 1; }));
  const auto warning = extender.sync().config_warnings().all().front();
  EXPECT_EQ(warning.kind, "bad_value");
  EXPECT_EQ(warning.key, "gpus");
  EXPECT_EQ(warning.value, "first");
  // The valid entry still counts.
  EXPECT_TRUE(extender.read(
      [](const core::ClusterModel& m) { return !m.find_node("n2")->gpus()[1].healthy; }));
  EXPECT_TRUE(has_line(metrics(extender), "gpushare_config_warnings{kind=\"bad_value\"} 1"));
  // A node's own page shows the warnings about that node only.
  const Json n2 = inspect(extender, "n2");
  ASSERT_EQ(n2["configWarnings"].size(), 1u) << n2;
  EXPECT_EQ(n2["configWarnings"][0]["node"], "n2");
  EXPECT_EQ(n2["configWarnings"][0]["value"], "first");
  EXPECT_EQ(inspect(extender, "n1")["configWarnings"], Json::array());

  fake.remove(Resource::ConfigMaps, "kube-system", "unhealthy-gpu-n2");
  EXPECT_TRUE(eventually([&] { return extender.sync().config_warnings().all().empty(); }));
  EXPECT_TRUE(has_line(metrics(extender), "gpushare_config_warnings{kind=\"bad_value\"} 0"));
}

TEST_F(ConfigWarnings, ARelistForgetsConfigMapsDeletedWhileTheWatchWasDown) {
  fake.create(Resource::ConfigMaps,
              make_configmap("kube-system", "unhealthy-gpu-n1", {{"gpu", "2"}}));
  LiveExtender extender(fake);
  ASSERT_TRUE(extender.wait_for_sync());
  ASSERT_EQ(extender.sync().config_warnings().all().size(), 1u);
  fake.stop_listening();
  fake.remove(Resource::ConfigMaps, "kube-system", "unhealthy-gpu-n1");
  fake.compact_to_current();
  fake.start_listening();
  EXPECT_TRUE(eventually([&] { return extender.sync().config_warnings().all().empty(); }));
}

TEST_F(ConfigWarnings, InspectCarriesEachPodsPhase) {
  fake.create(Resource::Pods, gpu_pod("running", 4, "n1", 0));
  Json starting = gpu_pod("starting", 2, "n1", 1);
  starting["status"]["phase"] = "Pending";
  fake.create(Resource::Pods, starting);
  LiveExtender extender(fake);
  ASSERT_TRUE(extender.wait_for_sync());
  const Json document = inspect(extender);
  const Json& devs = document["nodes"][0]["devs"];
  EXPECT_EQ(devs[0]["pods"][0]["name"], "running");
  EXPECT_EQ(devs[0]["pods"][0]["phase"], "Running");
  EXPECT_EQ(devs[1]["pods"][0]["name"], "starting");
  EXPECT_EQ(devs[1]["pods"][0]["phase"], "Pending");
  // Once it runs, /inspect says so.
  fake.mutate(Resource::Pods, "default", "starting",
              [](Json& pod) { pod["status"]["phase"] = "Running"; });
  EXPECT_TRUE(eventually(
      [&] { return inspect(extender)["nodes"][0]["devs"][1]["pods"][0]["phase"] == "Running"; }));
}

}  // namespace
}  // namespace gpushare::testing
