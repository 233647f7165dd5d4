#include "gpushare/deviceplugin/matching.h"

#include <gtest/gtest.h>

#include "gpushare/deviceplugin/health.h"

namespace gpushare::deviceplugin {
namespace {

using nlohmann::json;

json pod_json(std::string name, std::vector<int> limits, std::optional<int> idx,
              std::int64_t assume, std::string assigned = "false") {
  json containers = json::array();
  int i = 0;
  for (const int limit : limits) {
    containers.push_back(
        {{"name", "c" + std::to_string(i++)},
         {"resources", {{"limits", {{"aliyun.com/gpu-mem", std::to_string(limit)}}}}}});
  }
  json annotations = json::object();
  if (idx) annotations["ALIYUN_COM_GPU_MEM_IDX"] = std::to_string(*idx);
  if (assume) annotations["ALIYUN_COM_GPU_MEM_ASSUME_TIME"] = std::to_string(assume);
  annotations["ALIYUN_COM_GPU_MEM_ASSIGNED"] = assigned;
  return {{"metadata",
           {{"namespace", "default"},
            {"name", name},
            {"uid", name + "-uid"},
            {"resourceVersion", "7"},
            {"annotations", annotations}}},
          {"spec", {{"nodeName", "n"}, {"containers", containers}}},
          {"status", {{"phase", "Pending"}}}};
}

PendingPod pod(std::string name, std::vector<int> limits, std::optional<int> idx,
               std::int64_t assume, std::string assigned = "false") {
  std::string problem;
  auto out =
      read_pod(pod_json(name, limits, idx, assume, assigned), "aliyun.com/gpu-mem", &problem);
  EXPECT_TRUE(out) << problem;
  return *out;
}

Advertisement two_gpus() {
  Advertisement ad;
  ad.units_per_gpu = 4;
  ad.gpus = {AdvertisedGpu{0, "GPU-a", "T4", 0, 0, 1}, AdvertisedGpu{1, "GPU-b", "T4", 1, 1, 1}};
  return ad;
}

TEST(ReadPod, ReadsAnnotationsAndPerContainerLimits) {
  const auto p = pod("p", {2, 3}, 1, 100);
  EXPECT_EQ(p.key(), "default/p");
  EXPECT_EQ(p.gpu_index, 1);
  EXPECT_EQ(p.assume_time_ns, 100);
  EXPECT_FALSE(p.assigned);
  EXPECT_EQ(p.requests, (std::vector<std::int64_t>{2, 3}));
  EXPECT_EQ(p.total, 5);
  EXPECT_TRUE(waiting(p));
  EXPECT_FALSE(waiting(pod("q", {2}, 1, 100, "true")));
  EXPECT_FALSE(waiting(pod("r", {2}, 1, 0)));             // not bound by the extender
  EXPECT_FALSE(waiting(pod("s", {2}, std::nullopt, 5)));  // no index
}

TEST(ReadPod, SkipsPodsWithoutGpuMemAndReportsGarbage) {
  json plain = pod_json("p", {}, 0, 1);
  std::string problem;
  EXPECT_FALSE(read_pod(plain, "aliyun.com/gpu-mem", &problem));
  json bad = pod_json("p", {1}, 0, 1);
  bad["spec"]["containers"][0]["resources"]["limits"]["aliyun.com/gpu-mem"] = "1Gi";
  EXPECT_FALSE(read_pod(bad, "aliyun.com/gpu-mem", &problem));
  EXPECT_NE(problem.find("default/p"), std::string::npos);
  json done = pod_json("p", {1}, 0, 1);
  done["status"]["phase"] = "Succeeded";
  EXPECT_FALSE(read_pod(done, "aliyun.com/gpu-mem", nullptr));
}

TEST(MatchCall, PrefersThePodOnTheDevicesGpuThenTheOldest) {
  const std::vector<PendingPod> pods = {pod("a", {2}, 0, 100), pod("b", {2}, 1, 200),
                                        pod("c", {3}, 1, 50)};
  auto m = match_call(pods, {}, 2, 1);
  ASSERT_TRUE(m);
  EXPECT_EQ(m->pod.name, "b");
  EXPECT_EQ(m->gpu, 1);
  EXPECT_EQ(m->ambiguous_with, std::vector<std::string>{"default/a"});
  m = match_call(pods, {}, 2, std::nullopt);
  ASSERT_TRUE(m);
  EXPECT_EQ(m->pod.name, "a");     // oldest
  m = match_call(pods, {}, 3, 0);  // c is on GPU 1: its GPU is handed out, not the devices'
  ASSERT_TRUE(m);
  EXPECT_EQ(m->pod.name, "c");
  EXPECT_EQ(m->gpu, 1);
  EXPECT_TRUE(m->ambiguous_with.empty());
  EXPECT_FALSE(match_call(pods, {}, 4, 0));
}

TEST(MatchCall, LaterContainersOfAPodInProgressComeFirst) {
  const std::vector<PendingPod> pods = {pod("multi", {1, 2}, 1, 100, "true"), pod("x", {2}, 0, 50)};
  const std::vector<InProgress> progress = {InProgress{pods[0], 1, 1}};
  auto m = match_call(pods, progress, 2, 0);
  ASSERT_TRUE(m);
  EXPECT_EQ(m->pod.name, "multi");
  EXPECT_TRUE(m->continuing);
  EXPECT_EQ(m->container, 1u);
  EXPECT_EQ(m->gpu, 1);
}

TEST(GpuOfDevices, OneGpuOrAnError) {
  const auto ad = two_gpus();
  const std::vector<std::string> ok = {"GPU-b-_-0", "GPU-b-_-3"};
  EXPECT_EQ(gpu_of_devices(ad, ok), 1);
  const std::vector<std::string> split = {"GPU-a-_-0", "GPU-b-_-3"};
  EXPECT_THROW(gpu_of_devices(ad, split), std::invalid_argument);
  const std::vector<std::string> unknown = {"GPU-z-_-0"};
  EXPECT_THROW(gpu_of_devices(ad, unknown), std::invalid_argument);
  const std::vector<std::string> beyond = {"GPU-a-_-4"};
  EXPECT_THROW(gpu_of_devices(ad, beyond), std::invalid_argument);
}

TEST(PreferredIds, SteersToTheGpuThenFillsFromTheFullest) {
  const auto ad = two_gpus();
  const std::vector<std::string> available = {"GPU-a-_-0", "GPU-a-_-1", "GPU-b-_-2", "GPU-b-_-0",
                                              "GPU-b-_-1"};
  EXPECT_EQ(preferred_ids(ad, available, {}, 2, 1),
            (std::vector<std::string>{"GPU-b-_-0", "GPU-b-_-1"}));
  EXPECT_EQ(preferred_ids(ad, available, {}, 2, std::nullopt),
            (std::vector<std::string>{"GPU-b-_-0", "GPU-b-_-1"}));
  const std::vector<std::string> must = {"GPU-a-_-3"};
  EXPECT_EQ(preferred_ids(ad, available, must, 2, 0),
            (std::vector<std::string>{"GPU-a-_-3", "GPU-a-_-0"}));
}

TEST(Reconcile, ReportsAHandOutThatWentToAnotherPod) {
  const std::vector<PendingPod> pods = {pod("a", {2}, 0, 100, "true"), pod("b", {2}, 1, 200)};
  const std::vector<Handout> handouts = {Handout{"default/a", 0, {"GPU-a-_-0", "GPU-a-_-1"}},
                                         Handout{"default/x", 1, {"GPU-b-_-3"}}};
  const std::vector<HeldDevices> held = {
      HeldDevices{"default/b", "c0", {"GPU-a-_-0", "GPU-a-_-1"}}};
  std::vector<Handout> unknown;
  const auto fixes = reconcile(handouts, held, pods, &unknown);
  ASSERT_EQ(fixes.size(), 1u);
  EXPECT_EQ(fixes[0].pod, "default/b");
  EXPECT_EQ(fixes[0].gpu, 0);
  EXPECT_EQ(fixes[0].released, "default/a");
  EXPECT_EQ(fixes[0].released_gpu, 1);
  ASSERT_EQ(unknown.size(), 1u);
  EXPECT_EQ(unknown[0].marked_pod, "default/x");
}

TEST(Health, CriticalXidsOnly) {
  const auto ad = two_gpus();
  const std::vector<nvml::XidEvent> events = {{"GPU-a", 13}, {"GPU-b", 79}, {"GPU-z", 79}};
  EXPECT_EQ(unhealthy_from_xids(ad, events), std::set<std::string>{"GPU-b"});
  const std::vector<nvml::XidEvent> all = {{"", 48}};
  EXPECT_EQ(unhealthy_from_xids(ad, all), (std::set<std::string>{"GPU-a", "GPU-b"}));
  EXPECT_EQ(uuids_of_indices(ad, {1, 7}), std::set<std::string>{"GPU-b"});
}

}  // namespace
}  // namespace gpushare::deviceplugin
