// Accounting that hostile or stale cluster state must not break, over real HTTP: absurd claims
// never free a GPU.

#include <gtest/gtest.h>

#include "contract/extender_fixture.h"

namespace gpushare::testing {
namespace {

const Json& node_named(const Json& inspect, const std::string& name) {
  for (const Json& node : inspect["nodes"]) {
    if (node["name"] == name) return node;
  }
  throw std::runtime_error("no node " + name);
}

Json absurd_claim(const std::string& name, const std::string& uid, const std::string& claim) {
  Json pod = pod_object(name, uid, 4, "n1", 0);
  pod["metadata"]["annotations"]["ALIYUN_COM_GPU_MEM_POD"] = claim;
  return pod;
}

// Two pods annotated with int64's maximum on GPU 0 once summed to -2 "used": GPU 0 was then
// offered to a 16-unit pod and oversubscribed.
TEST(InspectAccounting, AbsurdClaimsNeverMakeAGpuLookFree) {
  ExtenderUnderTest extender(cluster_list({node_object("n1", 2, 32),
                                           absurd_claim("huge-a", "uid-huge-a", "9223372036854775807"),
                                           absurd_claim("huge-b", "uid-huge-b", "9223372036854775807"),
                                           pod_object("pending", "uid-pending", 16)}));
  const Json inspect = extender.inspect();
  const Json& n1 = node_named(inspect, "n1");
  EXPECT_GE(n1["devs"][0]["usedGPU"].get<long long>(), 16) << n1.dump();
  EXPECT_GE(n1["usedGPU"].get<long long>(), 16);
  EXPECT_GE(inspect["usedGPU"].get<long long>(), 16);
  const auto [status, reply] =
      extender.post("bind", Json{{"PodName", "pending"}, {"PodNamespace", "default"}, {"PodUID", "uid-pending"},
                                 {"Node", "n1"}});
  ASSERT_EQ(status, 200) << reply.dump();
  // Placed on the empty GPU 1, never on the "free" GPU 0.
  EXPECT_EQ(extender.cluster().bound_annotations().at("default/pending").at("ALIYUN_COM_GPU_MEM_IDX"), "1");
  const Json after = node_named(extender.inspect(), "n1");
  EXPECT_EQ(after["devs"][1]["usedGPU"], 16);
  EXPECT_GE(after["devs"][0]["usedGPU"].get<long long>(), 16);
}

}  // namespace
}  // namespace gpushare::testing
