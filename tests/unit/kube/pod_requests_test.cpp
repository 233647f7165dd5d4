// A pod's CPU and memory request, by kube-scheduler's rules, with values worked out by hand.

#include "gpushare/kube/pod_requests.h"

#include <gtest/gtest.h>

#include <string>

#include "gpushare/kube/pod_info.h"

namespace gpushare::kube {
namespace {

constexpr std::int64_t kMi = 1024 * 1024;
constexpr std::int64_t kGi = 1024 * kMi;

Json container(const std::string& name, Json requests, Json limits = nullptr) {
  Json resources = Json::object();
  if (!requests.is_null()) resources["requests"] = std::move(requests);
  if (!limits.is_null()) resources["limits"] = std::move(limits);
  return {{"name", name}, {"image", "busybox"}, {"resources", std::move(resources)}};
}

Json sidecar(const std::string& name, Json requests) {
  Json c = container(name, std::move(requests));
  c["restartPolicy"] = "Always";
  return c;
}

CpuMemory request_of(const Json& spec) {
  return pod_cpu_memory_request(spec, "ml/p");
}

// The error message of pod_cpu_memory_request, or "" if it did not throw.
std::string error_of(const Json& spec) {
  try {
    request_of(spec);
  } catch (const BadInput& e) {
    return e.what();
  }
  return "";
}

TEST(PodRequests, NoResourcesIsZero) {
  EXPECT_EQ(request_of(Json::object()), (CpuMemory{0, 0}));
  EXPECT_EQ(request_of({{"containers", {{{"name", "a"}}}}}), (CpuMemory{0, 0}));
  EXPECT_EQ(request_of({{"containers", {container("a", {{"aliyun.com/gpu-mem", "4"}})}}}),
            (CpuMemory{0, 0}));
}

TEST(PodRequests, ContainersAreSummed) {
  const Json spec = {{"containers",
                      {container("a", {{"cpu", "500m"}, {"memory", "1Gi"}}),
                       container("b", {{"cpu", "1"}, {"memory", "512Mi"}})}}};
  // 500 + 1000 milli-cores; 1024 + 512 MiB.
  EXPECT_EQ(request_of(spec), (CpuMemory{1500, 1536 * kMi}));
}

TEST(PodRequests, AnAbsentRequestIsTheLimit) {
  // a: no requests at all: both from the limits. b: CPU requested (the limit does not count),
  // memory only limited: that limit, resource by resource.
  const Json spec = {{"containers",
                      {container("a", nullptr, {{"cpu", "2"}, {"memory", "1Gi"}}),
                       container("b", {{"cpu", "100m"}}, {{"cpu", "4"}, {"memory", "256Mi"}})}}};
  EXPECT_EQ(request_of(spec), (CpuMemory{2000 + 100, kGi + 256 * kMi}));
  // A null request is absent too.
  const Json with_null = {{"containers", {container("a", {{"cpu", nullptr}}, {{"cpu", "3"}})}}};
  EXPECT_EQ(request_of(with_null), (CpuMemory{3000, 0}));
}

TEST(PodRequests, InitContainersCountByTheirMaximumPerResource) {
  // Containers 1 core + 1 GiB; init containers 2 cores + 512 MiB, then 1.5 cores + 1.5 GiB.
  // CPU: max(1000, 2000, 1500) = 2000; memory: max(1024, 512, 1536) MiB = 1536 MiB. The two
  // maxima come from different init containers: each resource on its own.
  const Json spec = {{"containers", {container("app", {{"cpu", "1"}, {"memory", "1Gi"}})}},
                     {"initContainers",
                      {container("migrate", {{"cpu", "2"}, {"memory", "512Mi"}}),
                       container("warm", {{"cpu", "1500m"}, {"memory", "1536Mi"}})}}};
  EXPECT_EQ(request_of(spec), (CpuMemory{2000, 1536 * kMi}));
  // Smaller init containers change nothing.
  const Json small = {
      {"containers", {container("app", {{"cpu", "1"}, {"memory", "1Gi"}})}},
      {"initContainers", {container("setup", {{"cpu", "100m"}, {"memory", "64Mi"}})}}};
  EXPECT_EQ(request_of(small), (CpuMemory{1000, kGi}));
}

TEST(PodRequests, SidecarsRunBesideEverythingDeclaredAfterThem) {
  // containers            1000 m   1024 Mi
  // init proxy (sidecar)   500 m    256 Mi
  // init migrate          2000 m   2048 Mi   runs beside proxy:          2500 m  2304 Mi
  // init logs (sidecar)    250 m    128 Mi
  // init seed             1800 m    100 Mi   runs beside proxy and logs: 2550 m   484 Mi
  // all running: containers + both sidecars: 1750 m, 1408 Mi.
  // Pod: CPU max(1750, 2500, 2550) = 2550 m; memory max(1408, 2304, 484) = 2304 Mi.
  const Json spec = {{"containers", {container("app", {{"cpu", "1"}, {"memory", "1Gi"}})}},
                     {"initContainers",
                      {sidecar("proxy", {{"cpu", "500m"}, {"memory", "256Mi"}}),
                       container("migrate", {{"cpu", "2"}, {"memory", "2Gi"}}),
                       sidecar("logs", {{"cpu", "250m"}, {"memory", "128Mi"}}),
                       container("seed", {{"cpu", "1800m"}, {"memory", "100Mi"}})}}};
  EXPECT_EQ(request_of(spec), (CpuMemory{2550, 2304 * kMi}));
}

TEST(PodRequests, SidecarsAddToTheContainers) {
  // No regular init container: containers + sidecar = 1000 + 300 m, 1024 + 200 Mi.
  const Json spec = {{"containers", {container("app", {{"cpu", "1"}, {"memory", "1Gi"}})}},
                     {"initContainers", {sidecar("mesh", {{"cpu", "300m"}, {"memory", "200Mi"}})}}};
  EXPECT_EQ(request_of(spec), (CpuMemory{1300, 1224 * kMi}));
  // Any other restartPolicy is a regular init container: max(1000, 300) m, max(1024, 200) Mi.
  Json on_failure = spec;
  on_failure["initContainers"][0]["restartPolicy"] = "OnFailure";
  EXPECT_EQ(request_of(on_failure), (CpuMemory{1000, kGi}));
}

TEST(PodRequests, OverheadIsAddedLast) {
  // As in SidecarsRunBesideEverythingDeclaredAfterThem (2550 m, 2304 Mi) plus 250 m, 120 Mi.
  const Json spec = {{"containers", {container("app", {{"cpu", "1"}, {"memory", "1Gi"}})}},
                     {"initContainers",
                      {sidecar("proxy", {{"cpu", "500m"}, {"memory", "256Mi"}}),
                       container("migrate", {{"cpu", "2"}, {"memory", "2Gi"}}),
                       sidecar("logs", {{"cpu", "250m"}, {"memory", "128Mi"}}),
                       container("seed", {{"cpu", "1800m"}, {"memory", "100Mi"}})}},
                     {"overhead", {{"cpu", "250m"}, {"memory", "120Mi"}}}};
  EXPECT_EQ(request_of(spec), (CpuMemory{2800, 2424 * kMi}));
  // Overhead alone (a pod whose containers ask for nothing).
  EXPECT_EQ(request_of({{"containers", {{{"name", "a"}}}}, {"overhead", {{"cpu", "100m"}}}}),
            (CpuMemory{100, 0}));
}

TEST(PodRequests, EachQuantityIsRoundedUp) {
  // 0.1m -> 1 m; 1.0001 cores = 1000.1 m -> 1001 m; 1.5 bytes -> 2; 100m bytes -> 1.
  EXPECT_EQ(request_of({{"containers", {container("a", {{"cpu", "0.1m"}, {"memory", "1.5"}})}}}),
            (CpuMemory{1, 2}));
  EXPECT_EQ(request_of({{"containers", {container("a", {{"cpu", "1.0001"}, {"memory", "100m"}})}}}),
            (CpuMemory{1001, 1}));
  // Rounded per quantity, then summed: three times 0.5m is 3 m.
  const Json halves = {{"containers",
                        {container("a", {{"cpu", "0.5m"}}), container("b", {{"cpu", "0.5m"}}),
                         container("c", {{"cpu", "0.5m"}})}}};
  EXPECT_EQ(request_of(halves), (CpuMemory{3, 0}));
  // Suffixes and exponents: 1e3 cores; 1G bytes (decimal); 2k bytes.
  EXPECT_EQ(request_of({{"containers",
                         {container("a", {{"cpu", "1e3"}, {"memory", "1G"}}),
                          container("b", {{"memory", "2k"}})}}}),
            (CpuMemory{1'000'000, 1'000'002'000}));
  // A JSON integer is read as whole units, as for gpu-mem.
  EXPECT_EQ(request_of({{"containers", {container("a", {{"cpu", 2}, {"memory", 4096}})}}}),
            (CpuMemory{2000, 4096}));
}

TEST(PodRequests, SumsBeyondInt64AreOutOfRange) {
  // 5e15 cores are 5e18 milli-cores, within int64; two of them are not.
  const Json two = {
      {"containers", {container("a", {{"cpu", "5e15"}}), container("b", {{"cpu", "5e15"}})}}};
  EXPECT_NE(error_of(two).find("out of range"), std::string::npos) << error_of(two);
  EXPECT_NE(error_of(two).find("ml/p"), std::string::npos) << error_of(two);
  const Json with_overhead = {{"containers", {container("a", {{"cpu", "5e15"}})}},
                              {"overhead", {{"cpu", "5e15"}}}};
  EXPECT_NE(error_of(with_overhead).find("out of range"), std::string::npos);
  const Json sidecar_and_init = {{"containers", {container("a", {{"cpu", "5e15"}})}},
                                 {"initContainers", {sidecar("s", {{"cpu", "5e15"}})}}};
  EXPECT_NE(error_of(sidecar_and_init).find("out of range"), std::string::npos);
  const Json init_beside_sidecar = {
      {"initContainers", {sidecar("s", {{"cpu", "5e15"}}), container("i", {{"cpu", "5e15"}})}}};
  EXPECT_NE(error_of(init_beside_sidecar).find("out of range"), std::string::npos);
  // Memory: one quantity is at most ~9.2e15 bytes (int64 milli-units), so it takes many.
  Json many = {{"containers", Json::array()}};
  for (int i = 0; i < 1100; ++i)
    many["containers"].push_back(container("c" + std::to_string(i), {{"memory", "9e15"}}));
  EXPECT_NE(error_of(many).find("memory request out of range"), std::string::npos)
      << error_of(many);
  // One quantity beyond int64 milli-units is a malformed quantity.
  EXPECT_NE(error_of({{"containers", {container("a", {{"memory", "8Ei"}})}}}).find("out of range"),
            std::string::npos);
  // The largest sum that fits is fine: 9223372036854775807 m = 4611686018427387903 m + ...904 m.
  const Json at_limit = {{"containers",
                          {container("a", {{"cpu", "4611686018427387903m"}}),
                           container("b", {{"cpu", "4611686018427387904m"}})}}};
  EXPECT_EQ(request_of(at_limit).cpu_milli, INT64_MAX);
}

TEST(PodRequests, MalformedQuantitiesNameThePodContainerAndField) {
  auto expect_error = [](const Json& spec, const std::string& wanted) {
    const std::string error = error_of(spec);
    EXPECT_NE(error.find(wanted), std::string::npos)
        << "error: \"" << error << "\", wanted \"" << wanted << "\"";
  };
  expect_error({{"containers", {container("app", {{"cpu", "lots"}})}}},
               "pod ml/p container app requests cpu");
  expect_error({{"containers", {container("app", nullptr, {{"memory", "-1Gi"}})}}},
               "pod ml/p container app limits memory");
  expect_error({{"containers", {container("app", {{"memory", Json::array()}})}}},
               "pod ml/p container app requests memory must be a quantity string");
  expect_error({{"containers", {container("app", {{"cpu", 1.5}})}}},
               "pod ml/p container app requests cpu");
  expect_error({{"initContainers", {container("setup", {{"cpu", "1x"}})}}},
               "pod ml/p init container setup requests cpu");
  expect_error({{"initContainers", {sidecar("mesh", {{"memory", ""}})}}},
               "pod ml/p init container mesh requests memory");
  expect_error({{"overhead", {{"cpu", "-100m"}}}}, "pod ml/p overhead cpu");
  expect_error({{"overhead", {{"memory", true}}}}, "pod ml/p overhead memory");
  // Wrong shapes.
  expect_error({{"initContainers", "x"}}, "initContainers");
  expect_error({{"initContainers", {1}}}, "initContainers");
  expect_error({{"overhead", {1, 2}}}, "overhead");
  expect_error({{"initContainers", {{{"name", "i"}, {"restartPolicy", 1}}}}}, "restartPolicy");
}

TEST(PodRequests, ParsePodFillsCpuAndMemory) {
  const Json pod = Json::parse(R"({
    "metadata": {"name": "p", "namespace": "ml", "uid": "u-1"},
    "spec": {"nodeName": "gpu-1",
      "initContainers": [{"name": "init", "resources": {"requests": {"cpu": "3", "memory": "64Mi"}}}],
      "containers": [
        {"name": "a", "resources": {"limits": {"aliyun.com/gpu-mem": "3", "cpu": "2", "memory": "2Gi"},
                                    "requests": {"cpu": "1", "memory": "1Gi"}}},
        {"name": "b", "resources": {"limits": {"cpu": "500m"}}}],
      "overhead": {"memory": "100Mi"}},
    "status": {"phase": "Running"}})");
  const PodInfo info = parse_pod(pod, ResourceNames{});
  // CPU: max(1000 + 500, 3000) = 3000 m. Memory: max(1024, 64) + 100 MiB.
  EXPECT_EQ(info.cpu_milli, 3000);
  EXPECT_EQ(info.memory, 1124 * kMi);
  EXPECT_EQ(info.request, 3);  // GPU parsing is unchanged: limits
  const core::PodDemand demand = info.demand();
  EXPECT_EQ(demand.cpu_milli, 3000);
  EXPECT_EQ(demand.memory, 1124 * kMi);
  EXPECT_EQ(demand.per_gpu, 3);
}

TEST(PodRequests, ParsePodReportsBadCpuWithThePod) {
  Json pod = {{"metadata", {{"name", "p"}, {"namespace", "ml"}}},
              {"spec", {{"containers", {container("app", {{"cpu", "1..5"}})}}}}};
  try {
    parse_pod(pod, ResourceNames{});
    FAIL() << "expected BadInput";
  } catch (const BadInput& e) {
    EXPECT_NE(std::string(e.what()).find("pod ml/p container app requests cpu"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace gpushare::kube
