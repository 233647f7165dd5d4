// Live mode against the fake API server under hostile or broken input: absurd claims in
// annotations.


#include <gtest/gtest.h>

#include <string>

#include "integration/live_fixture.h"

namespace gpushare::testing {
namespace {

std::string uid_of(FakeApiServer& fake, const std::string& name) {
  return fake.get(Resource::Pods, "default", name)->at("metadata").at("uid");
}

// Two pods bound to GPU 0 claiming int64's maximum once summed to -2 used: the GPU was then
// offered again and a pod bound onto it.
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
  ASSERT_TRUE(eventually([&] { return extender.read([](const core::ClusterModel& m) { return m.pod_count(); }) == 2u; }));
  EXPECT_GE(extender.used_on("n1", 0), 16);
  EXPECT_EQ(extender.used_on("n1", 1), 0);
  ASSERT_EQ(extender.bind("next", uid_of(fake, "next"), "n1"), 200);
  EXPECT_EQ(fake.get(Resource::Pods, "default", "next")->at("metadata").at("annotations").at("ALIYUN_COM_GPU_MEM_IDX"),
            "1");
  EXPECT_GE(extender.used_on("n1", 0), 16);
  EXPECT_GE(extender.snapshot().total_used(), 32);
}

}  // namespace
}  // namespace gpushare::testing
