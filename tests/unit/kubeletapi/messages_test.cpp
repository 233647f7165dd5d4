// The generated kubelet API messages (src/kubeletapi/*.proto) against the wire format kubelet
// speaks: each field under the number the upstream .proto gives it, so that bytes written by
// kubelet decode here and ours decode there.

#include <gtest/gtest.h>

#include <string>

#include "deviceplugin_v1beta1.pb.h"
#include "podresources_v1.pb.h"

namespace {

// A length-delimited field (wire type 2) of a field number below 16, with a length below 128.
std::string field(int number, const std::string& bytes) {
  return std::string{static_cast<char>(number << 3 | 2), static_cast<char>(bytes.size())} + bytes;
}

TEST(DevicePluginApi, RegisterRequestIsWrittenUnderKubeletsFieldNumbers) {
  v1beta1::RegisterRequest request;
  request.set_version("v1beta1");
  request.set_endpoint("gpushare.sock");
  request.set_resource_name("aliyun.com/gpu-mem");
  request.mutable_options()->set_get_preferred_allocation_available(true);
  std::string bytes;
  ASSERT_TRUE(request.SerializeToString(&bytes));
  // options (4) holds get_preferred_allocation_available (2, varint): tag 0x10, value 1.
  EXPECT_EQ(bytes, field(1, "v1beta1") + field(2, "gpushare.sock") +
                       field(3, "aliyun.com/gpu-mem") + field(4, std::string{0x10, 0x01}));
}

TEST(DevicePluginApi, AnAllocateRequestFromKubeletDecodes) {
  // container_requests (1), each with devices_ids (1).
  const std::string bytes =
      field(1, field(1, "gpu-0-a") + field(1, "gpu-0-b")) + field(1, field(1, "gpu-1-a"));
  v1beta1::AllocateRequest request;
  ASSERT_TRUE(request.ParseFromString(bytes));
  ASSERT_EQ(request.container_requests_size(), 2);
  ASSERT_EQ(request.container_requests(0).devices_ids_size(), 2);
  EXPECT_EQ(request.container_requests(0).devices_ids(1), "gpu-0-b");
  EXPECT_EQ(request.container_requests(1).devices_ids(0), "gpu-1-a");
}

TEST(DevicePluginApi, AnAllocateResponseRoundTrips) {
  v1beta1::AllocateResponse response;
  auto* container = response.add_container_responses();
  (*container->mutable_envs())["ALIYUN_COM_GPU_MEM_IDX"] = "1";
  auto* device = container->add_devices();
  device->set_container_path("/dev/nvidia1");
  device->set_host_path("/dev/nvidia1");
  device->set_permissions("rw");
  std::string bytes;
  ASSERT_TRUE(response.SerializeToString(&bytes));
  v1beta1::AllocateResponse decoded;
  ASSERT_TRUE(decoded.ParseFromString(bytes));
  ASSERT_EQ(decoded.container_responses_size(), 1);
  EXPECT_EQ(decoded.container_responses(0).envs().at("ALIYUN_COM_GPU_MEM_IDX"), "1");
  ASSERT_EQ(decoded.container_responses(0).devices_size(), 1);
  EXPECT_EQ(decoded.container_responses(0).devices(0).permissions(), "rw");
}

TEST(PodResourcesApi, AListFromKubeletDecodes) {
  // pod_resources (1): name (1), namespace (2), containers (3) with name (1) and devices (2),
  // each with resource_name (1) and device_ids (2).
  const std::string devices = field(1, "aliyun.com/gpu-mem") + field(2, "gpu-0-a");
  const std::string container = field(1, "main") + field(2, devices);
  const std::string bytes = field(1, field(1, "trainer") + field(2, "ml") + field(3, container));
  v1::ListPodResourcesResponse response;
  ASSERT_TRUE(response.ParseFromString(bytes));
  ASSERT_EQ(response.pod_resources_size(), 1);
  const auto& pod = response.pod_resources(0);
  EXPECT_EQ(pod.name(), "trainer");
  EXPECT_EQ(pod.namespace_(), "ml");
  ASSERT_EQ(pod.containers_size(), 1);
  EXPECT_EQ(pod.containers(0).name(), "main");
  ASSERT_EQ(pod.containers(0).devices_size(), 1);
  EXPECT_EQ(pod.containers(0).devices(0).resource_name(), "aliyun.com/gpu-mem");
  EXPECT_EQ(pod.containers(0).devices(0).device_ids(0), "gpu-0-a");
}

}  // namespace
