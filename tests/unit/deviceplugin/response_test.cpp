#include "gpushare/deviceplugin/response.h"

#include <gtest/gtest.h>

namespace gpushare::deviceplugin {
namespace {

Advertisement two_gpus() {
  Advertisement ad;
  ad.units_per_gpu = 15;
  ad.gpus = {AdvertisedGpu{0, "GPU-aaaa", "Tesla T4", 0, 0, 16106127360},
             AdvertisedGpu{1, "GPU-bbbb", "Tesla T4", 1, 3, 16106127360}};
  return ad;
}

TEST(Response, EnvvarNamesTheUuidAndTheProtocolVariables) {
  const auto ad = two_gpus();
  const auto r = build_response(ad, ad.gpus[1], 4, 6, {});
  EXPECT_EQ(r.envs.at("NVIDIA_VISIBLE_DEVICES"), "GPU-bbbb");
  EXPECT_EQ(r.envs.at("ALIYUN_COM_GPU_MEM_IDX"), "1");
  EXPECT_EQ(r.envs.at("ALIYUN_COM_GPU_MEM_POD"), "6");
  EXPECT_EQ(r.envs.at("ALIYUN_COM_GPU_MEM_CONTAINER"), "4");
  EXPECT_EQ(r.envs.at("ALIYUN_COM_GPU_MEM_DEV"), "15");
  EXPECT_TRUE(r.cdi_devices.empty());
  EXPECT_TRUE(r.devices.empty());
}

TEST(Response, CdiCriAndAnnotations) {
  const auto ad = two_gpus();
  ResponseOptions cri;
  cri.strategy = DeviceListStrategy::kCdiCri;
  const auto a = build_response(ad, ad.gpus[0], 2, 2, cri);
  EXPECT_EQ(a.cdi_devices, std::vector<std::string>{"nvidia.com/gpu=GPU-aaaa"});
  EXPECT_FALSE(a.envs.contains("NVIDIA_VISIBLE_DEVICES"));
  ResponseOptions annotations;
  annotations.strategy = DeviceListStrategy::kCdiAnnotations;
  const auto b = build_response(ad, ad.gpus[0], 2, 2, annotations);
  EXPECT_EQ(b.annotations.at("cdi.k8s.io/gpushare_GPU-aaaa"), "nvidia.com/gpu=GPU-aaaa");
}

TEST(Response, CdiAnnotationNameStaysWithin63Characters) {
  AdvertisedGpu gpu{2, "GPU-" + std::string(60, 'f'), "x", 2, 2, 1};
  const std::string key = cdi_annotation_key(gpu);
  EXPECT_EQ(key, "cdi.k8s.io/gpushare_gpu2");
  AdvertisedGpu normal{0, "GPU-8a8c1d72-1f7c-4a3b-9d2e-0123456789ab", "x", 0, 0, 1};
  EXPECT_LE(cdi_annotation_key(normal).size() - std::string("cdi.k8s.io/").size(), 63u);
}

TEST(Response, DeviceSpecsAndMemoryLimit) {
  const auto ad = two_gpus();
  ResponseOptions options;
  options.pass_device_specs = true;
  options.memory_limit_env = "CUDA_DEVICE_MEMORY_LIMIT";
  const auto r = build_response(ad, ad.gpus[1], 4, 4, options);
  ASSERT_EQ(r.devices.size(), 4u);
  EXPECT_EQ(r.devices[0].container_path, "/dev/nvidia3");
  EXPECT_EQ(r.devices[0].permissions, "rw");
  EXPECT_EQ(r.devices[1].host_path, "/dev/nvidiactl");
  EXPECT_EQ(r.devices[2].host_path, "/dev/nvidia-uvm");
  EXPECT_EQ(r.devices[3].host_path, "/dev/nvidia-uvm-tools");
  EXPECT_EQ(r.envs.at("CUDA_DEVICE_MEMORY_LIMIT"), "4096m");
  options.memory_limit_env = "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT";
  EXPECT_EQ(build_response(ad, ad.gpus[1], 4, 4, options).envs.at(options.memory_limit_env),
            "0=4096M");
}

TEST(Response, StrategyNames) {
  EXPECT_EQ(parse_device_list_strategy("envvar"), DeviceListStrategy::kEnvvar);
  EXPECT_EQ(parse_device_list_strategy("cdi-cri"), DeviceListStrategy::kCdiCri);
  EXPECT_EQ(parse_device_list_strategy("cdi-annotations"), DeviceListStrategy::kCdiAnnotations);
  EXPECT_THROW(parse_device_list_strategy("volume-mounts"), ConfigError);
}

}  // namespace
}  // namespace gpushare::deviceplugin
