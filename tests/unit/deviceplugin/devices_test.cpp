#include "gpushare/deviceplugin/devices.h"

#include <gtest/gtest.h>

namespace gpushare::deviceplugin {
namespace {

constexpr std::uint64_t kGiB = std::uint64_t{1} << 30;

nvml::GpuInfo gpu(unsigned index, std::string uuid, std::uint64_t bytes, bool mig = false) {
  nvml::GpuInfo info;
  info.index = index;
  info.uuid = std::move(uuid);
  info.name = "Tesla T4";
  info.memory_bytes = bytes;
  info.mig_enabled = mig;
  info.minor_number = index;
  return info;
}

TEST(DeviceIds, RoundTrip) {
  const std::string id = device_id("GPU-8a8c1d72-0000-0000-0000-000000000001", 14);
  EXPECT_EQ(id, "GPU-8a8c1d72-0000-0000-0000-000000000001-_-14");
  const auto ref = parse_device_id(id);
  ASSERT_TRUE(ref);
  EXPECT_EQ(ref->uuid, "GPU-8a8c1d72-0000-0000-0000-000000000001");
  EXPECT_EQ(ref->unit, 14);
  EXPECT_FALSE(parse_device_id("GPU-1"));
  EXPECT_FALSE(parse_device_id("GPU-1-_-"));
  EXPECT_FALSE(parse_device_id("GPU-1-_-x"));
  EXPECT_FALSE(parse_device_id("-_-3"));
}

TEST(Advertisement, OneDevicePerGiBOfEachGpu) {
  // NVML reports a little less than the marketed size: 15 GiB of a "16 GB" T4.
  const std::vector<nvml::GpuInfo> gpus = {gpu(1, "GPU-b", 16106127360),
                                           gpu(0, "GPU-a", 16106127360)};
  const auto ad = plan_advertisement(gpus, MemoryUnit::kGiB, "node-1");
  EXPECT_EQ(ad.units_per_gpu, 15);
  ASSERT_EQ(ad.gpus.size(), 2u);
  EXPECT_EQ(ad.gpus[0].uuid, "GPU-a");  // ordered by NVML index; index = position
  EXPECT_EQ(ad.gpus[0].index, 0);
  EXPECT_EQ(ad.gpus[1].uuid, "GPU-b");
  EXPECT_EQ(ad.device_count(), 30u);
  EXPECT_TRUE(ad.warnings.empty());
  const auto states = device_states(ad, {"GPU-b"});
  ASSERT_EQ(states.size(), 30u);
  EXPECT_EQ(states[0].id, "GPU-a-_-0");
  EXPECT_TRUE(states[0].healthy);
  EXPECT_EQ(states[29].id, "GPU-b-_-14");
  EXPECT_FALSE(states[29].healthy);
}

TEST(Advertisement, MigGpusLeftOutWithAWarning) {
  const std::vector<nvml::GpuInfo> gpus = {gpu(0, "GPU-a", 16 * kGiB, true),
                                           gpu(1, "GPU-b", 16 * kGiB)};
  const auto ad = plan_advertisement(gpus, MemoryUnit::kGiB, "node-1");
  ASSERT_EQ(ad.gpus.size(), 1u);
  EXPECT_EQ(ad.gpus[0].uuid, "GPU-b");
  EXPECT_EQ(ad.gpus[0].index, 0);
  ASSERT_EQ(ad.warnings.size(), 1u);
  EXPECT_NE(ad.warnings[0].find("MIG"), std::string::npos);
}

TEST(Advertisement, MixedSizesUseTheSmallestAndNameTheNode) {
  const std::vector<nvml::GpuInfo> gpus = {gpu(0, "GPU-a", 16 * kGiB), gpu(1, "GPU-b", 80 * kGiB)};
  const auto ad = plan_advertisement(gpus, MemoryUnit::kGiB, "node-7");
  EXPECT_EQ(ad.units_per_gpu, 16);
  EXPECT_EQ(ad.total_units(), 32);
  ASSERT_EQ(ad.warnings.size(), 1u);
  EXPECT_NE(ad.warnings[0].find("node-7"), std::string::npos);
  EXPECT_NE(ad.warnings[0].find("smallest"), std::string::npos);
}

TEST(Advertisement, RefusesTooManyDevicesNamingTheCoarserUnit) {
  const std::vector<nvml::GpuInfo> gpus = {gpu(0, "GPU-a", 80 * kGiB)};
  try {
    (void)plan_advertisement(gpus, MemoryUnit::kMiB, "n");
    FAIL() << "81920 MiB devices accepted";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("--memory-unit GiB"), std::string::npos) << e.what();
  }
  EXPECT_EQ(plan_advertisement(gpus, MemoryUnit::kGiB, "n").device_count(), 80u);
}

TEST(Advertisement, RefusesUuidsTooLongForDeviceIds) {
  const std::vector<nvml::GpuInfo> gpus = {gpu(0, std::string(60, 'x'), 16 * kGiB)};
  EXPECT_THROW((void)plan_advertisement(gpus, MemoryUnit::kGiB, "n"), ConfigError);
}

TEST(Advertisement, NoGpusIsEmpty) {
  const auto ad = plan_advertisement({}, MemoryUnit::kGiB, "n");
  EXPECT_TRUE(ad.gpus.empty());
  EXPECT_EQ(ad.device_count(), 0u);
}

TEST(MemoryUnit, Parses) {
  EXPECT_EQ(parse_memory_unit("GiB"), MemoryUnit::kGiB);
  EXPECT_EQ(parse_memory_unit("MiB"), MemoryUnit::kMiB);
  EXPECT_THROW(parse_memory_unit("GB"), ConfigError);
}

}  // namespace
}  // namespace gpushare::deviceplugin
