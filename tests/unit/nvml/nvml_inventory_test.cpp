// src/nvml against the fake NVML (tests/fakenvml), loaded by path as the real library would be:
// discovery, MIG, load and init failures, failing calls, garbled answers, a GPU vanishing on a
// rewrite, XID events and list() beside wait_for_xids() on two threads.

#include "gpushare/nvml/nvml_inventory.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "gpushare/nvml/gpu_inventory.h"

namespace gpushare::nvml {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using ::testing::HasSubstr;

constexpr const char* kLibrary = GPUSHARE_FAKE_NVML_LIBRARY;
constexpr const char* kUuidA = "GPU-11111111-2222-3333-4444-555555555555";
constexpr const char* kUuidB = "GPU-aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee";
constexpr std::uint64_t kGiB = 1024ull * 1024 * 1024;

json gpu(const std::string& uuid, std::uint64_t bytes, unsigned minor) {
  return {{"uuid", uuid},
          {"name", "Tesla T4"},
          {"memory_bytes", bytes},
          {"pci_bus_id", "00000000:00:1E.0"},
          {"minor", minor}};
}

// A temporary directory holding the fake's config (named by GPUSHARE_FAKE_NVML_CONFIG) and XID
// file.
class FakeNvml : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (fs::temp_directory_path() / "gpushare-fake-nvml.XXXXXX").string();
    ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
    ::setenv("GPUSHARE_FAKE_NVML_CONFIG", config_path().c_str(), 1);
  }
  void TearDown() override {
    std::error_code ignored;
    fs::remove_all(dir_, ignored);
  }

  fs::path config_path() const { return dir_ / "config.json"; }
  fs::path xid_path() const { return dir_ / "xids"; }

  // Writes the config as a whole (a rename), as the fake's README asks.
  void write_config(json config) {
    if (!config.contains("xid_file")) config["xid_file"] = xid_path().string();
    write_text(config.dump());
  }
  void write_text(const std::string& text) {
    const fs::path staging = dir_ / "config.json.new";
    std::ofstream(staging) << text;
    fs::rename(staging, config_path());
  }
  void append_xids(const std::string& lines) { std::ofstream(xid_path(), std::ios::app) << lines; }

  json two_gpus() { return {{"gpus", {gpu(kUuidA, 16 * kGiB, 0), gpu(kUuidB, 32 * kGiB, 1)}}}; }

  // Waits for XID events until `want` have arrived or many rounds passed (no timing asserted:
  // the rounds only bound a broken fake).
  static std::vector<XidEvent> collect(GpuInventory& inventory, std::size_t want) {
    std::vector<XidEvent> all;
    for (int round = 0; round < 400 && all.size() < want; ++round) {
      auto more = inventory.wait_for_xids(std::chrono::milliseconds(50));
      all.insert(all.end(), more.begin(), more.end());
    }
    return all;
  }

  fs::path dir_;
};

template <typename F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  ADD_FAILURE() << "no nvml::Error thrown";
  return {};
}

TEST_F(FakeNvml, DiscoversTwoGpusOfDifferentSizes) {
  json config = two_gpus();
  config["gpus"][1]["name"] = "NVIDIA A100-SXM4-40GB";
  config["gpus"][1]["pci_bus_id"] = "00000000:3B:00.0";
  write_config(config);
  auto inventory = open_nvml(kLibrary);
  const auto gpus = inventory->list();
  ASSERT_EQ(gpus.size(), 2u);
  EXPECT_EQ(gpus[0].index, 0u);
  EXPECT_EQ(gpus[0].uuid, kUuidA);
  EXPECT_EQ(gpus[0].name, "Tesla T4");
  EXPECT_EQ(gpus[0].memory_bytes, 16 * kGiB);
  EXPECT_FALSE(gpus[0].mig_enabled);
  EXPECT_EQ(gpus[0].pci_bus_id, "00000000:00:1E.0");
  EXPECT_EQ(gpus[0].minor_number, 0u);
  EXPECT_EQ(gpus[1].index, 1u);
  EXPECT_EQ(gpus[1].uuid, kUuidB);
  EXPECT_EQ(gpus[1].name, "NVIDIA A100-SXM4-40GB");
  EXPECT_EQ(gpus[1].memory_bytes, 32 * kGiB);
  EXPECT_EQ(gpus[1].pci_bus_id, "00000000:3B:00.0");
  EXPECT_EQ(gpus[1].minor_number, 1u);
}

TEST_F(FakeNvml, FlagsMigEnabledGpus) {
  json config = two_gpus();
  config["gpus"][0]["mig_mode"] = 1;  // enabled
  config["gpus"][1]["mig_mode"] = 0;  // supported, disabled
  config["gpus"].push_back(gpu("GPU-33333333-2222-3333-4444-555555555555", 8 * kGiB, 2));
  write_config(config);  // the third has no MIG (NOT_SUPPORTED)
  const auto gpus = open_nvml(kLibrary)->list();
  ASSERT_EQ(gpus.size(), 3u);
  EXPECT_TRUE(gpus[0].mig_enabled);
  EXPECT_FALSE(gpus[1].mig_enabled);
  EXPECT_FALSE(gpus[2].mig_enabled);
}

TEST_F(FakeNvml, AMissingLibraryIsNamedWithTheLikelyCause) {
  const std::string message = error_of([] { open_nvml("/nonexistent/driver/libnvidia-ml.so.1"); });
  EXPECT_THAT(message, HasSubstr("/nonexistent/driver/libnvidia-ml.so.1"));
  EXPECT_THAT(message, HasSubstr("NVIDIA driver or the NVIDIA container toolkit is not mounted"));
}

TEST_F(FakeNvml, ALibraryWithoutNvmlIsRefusedNamingTheSymbol) {
  const std::string message = error_of([] { open_nvml("libc.so.6"); });
  EXPECT_THAT(message, HasSubstr("libc.so.6 has no nvmlInit_v2"));
}

TEST_F(FakeNvml, AnInitErrorNamesTheCallAndNvmlsText) {
  write_config({{"init_error", 9}, {"gpus", json::array()}});
  const std::string message = error_of([] { open_nvml(kLibrary); });
  EXPECT_THAT(message, HasSubstr("nvmlInit_v2 failed"));
  EXPECT_THAT(message, HasSubstr("Driver Not Loaded (NVML error 9)"));
}

TEST_F(FakeNvml, AMissingOrGarbledConfigFailsInit) {
  EXPECT_THAT(error_of([] { open_nvml(kLibrary); }), HasSubstr("Driver Not Loaded"));
  write_text("{\"gpus\": [");
  EXPECT_THAT(error_of([] { open_nvml(kLibrary); }), HasSubstr("Unknown Error (NVML error 999)"));
}

TEST_F(FakeNvml, AFailingEntryPointNamesTheCallTheGpuAndNvmlsText) {
  json config = two_gpus();
  config["gpus"][1]["fail"] = {{"nvmlDeviceGetMemoryInfo", 999}};
  write_config(config);
  auto inventory = open_nvml(kLibrary);
  const std::string message = error_of([&] { inventory->list(); });
  EXPECT_THAT(message, HasSubstr("nvmlDeviceGetMemoryInfo failed for GPU 1"));
  EXPECT_THAT(message, HasSubstr("Unknown Error (NVML error 999)"));

  config["gpus"][1]["fail"] = {{"nvmlDeviceGetHandleByIndex_v2", 4}};
  write_config(config);
  EXPECT_THAT(
      error_of([&] { inventory->list(); }),
      HasSubstr("nvmlDeviceGetHandleByIndex_v2 failed for GPU 1: Insufficient Permissions"));

  config["gpus"][1].erase("fail");
  write_config(config);  // answers change on a rewrite: the same inventory recovers
  EXPECT_EQ(inventory->list().size(), 2u);
}

TEST_F(FakeNvml, AGarbledUuidSkipsThatGpuWithTheReason) {
  json config = two_gpus();
  config["gpus"][0]["garble"] = "uuid";
  write_config(config);
  auto inventory = open_nvml_inventory(kLibrary);
  const auto gpus = inventory->list();
  ASSERT_EQ(gpus.size(), 1u);
  EXPECT_EQ(gpus[0].uuid, kUuidB);
  EXPECT_EQ(gpus[0].index, 1u) << "NVML's index, not the position in the list";
  const auto skipped = inventory->last_skipped();
  ASSERT_EQ(skipped.size(), 1u);
  EXPECT_EQ(skipped[0].index, 0u);
  EXPECT_THAT(skipped[0].reason, HasSubstr("nvmlDeviceGetUUID returned a string without a NUL"));
}

TEST_F(FakeNvml, UnusableAnswersSkipTheGpu) {
  const std::string long_uuid = "GPU-11111111-2222-3333-4444-5555555555556";  // 41 characters
  json config = {{"gpus",
                  {gpu(kUuidA, 16 * kGiB, 0), gpu(kUuidA, 16 * kGiB, 1), gpu(long_uuid, kGiB, 2),
                   gpu("GPU-00000000-0000-0000-0000-000000000000", 0, 3),
                   gpu("GPU-77777777-2222-3333-4444-555555555555", kGiB, 4),
                   gpu("GPU-88888888-2222-3333-4444-555555555555", kGiB, 5),
                   gpu("GPU-99999999-2222-3333-4444-555555555555", kGiB, 255),
                   gpu("GPU-aaaaaaaa-2222-3333-4444-555555555555", kGiB, 7)}}};
  config["gpus"][4]["name"] = "";
  config["gpus"][5]["garble"] = "name";
  config["gpus"][7]["garble"] = "pci";
  write_config(config);
  auto inventory = open_nvml_inventory(kLibrary);
  const auto gpus = inventory->list();
  ASSERT_EQ(gpus.size(), 1u);
  EXPECT_EQ(gpus[0].uuid, kUuidA);
  const auto skipped = inventory->last_skipped();
  ASSERT_EQ(skipped.size(), 7u);
  EXPECT_THAT(skipped[0].reason, HasSubstr("same as an earlier GPU"));
  EXPECT_THAT(skipped[1].reason, HasSubstr("41 characters, more than the 40"));
  EXPECT_THAT(skipped[2].reason, HasSubstr("0 bytes"));
  EXPECT_THAT(skipped[3].reason, HasSubstr("nvmlDeviceGetName returned an empty string"));
  EXPECT_THAT(skipped[4].reason, HasSubstr("nvmlDeviceGetName returned a string without a NUL"));
  EXPECT_THAT(skipped[5].reason, HasSubstr("reported 255"));
  EXPECT_THAT(skipped[6].reason, HasSubstr("bus ID without a NUL"));
  for (std::size_t i = 0; i < skipped.size(); ++i) EXPECT_EQ(skipped[i].index, i + 1);
}

TEST_F(FakeNvml, AnAbsurdGpuCountIsAnError) {
  json gpus = json::array();
  for (int i = 0; i < 65; ++i) {
    char uuid[64];
    std::snprintf(uuid, sizeof uuid, "GPU-%08d-2222-3333-4444-555555555555", i);
    gpus.push_back(gpu(uuid, kGiB, static_cast<unsigned>(i)));
  }
  write_config({{"gpus", gpus}});
  auto inventory = open_nvml(kLibrary);
  EXPECT_THAT(error_of([&] { inventory->list(); }),
              HasSubstr("nvmlDeviceGetCount_v2 reported 65 GPUs, more than the 64"));
}

TEST_F(FakeNvml, AGpuThatVanishesOnARewriteIsNoLongerListed) {
  write_config(two_gpus());
  auto inventory = open_nvml(kLibrary);
  ASSERT_EQ(inventory->list().size(), 2u);
  write_config({{"gpus", {gpu(kUuidB, 32 * kGiB, 1)}}});
  const auto gpus = inventory->list();
  ASSERT_EQ(gpus.size(), 1u);
  EXPECT_EQ(gpus[0].uuid, kUuidB);
  EXPECT_EQ(gpus[0].index, 0u);
}

TEST_F(FakeNvml, CriticalXidsArriveIgnoredOnesDoNotAndAStarMeansEveryGpu) {
  write_config(two_gpus());
  auto inventory = open_nvml_inventory(kLibrary);
  inventory->set_ignored_xids({48});
  EXPECT_TRUE(inventory->wait_for_xids(std::chrono::milliseconds(0)).empty());
  append_xids(std::string(kUuidA) + " 13\n" +  // application error: ignored by default
              kUuidB + " 48\n" +               // ignored by the operator
              "GPU-not-on-this-node 79\n" +    // no such GPU: never delivered
              kUuidA + " 79\n" +               // critical
              "* 94\n");                       // critical, every GPU
  const auto events = collect(*inventory, 2);
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0].uuid, kUuidA);
  EXPECT_EQ(events[0].xid, 79u);
  EXPECT_EQ(events[1].uuid, "") << "all-GPU scope";
  EXPECT_EQ(events[1].xid, 94u);
  EXPECT_TRUE(inventory->wait_for_xids(std::chrono::milliseconds(20)).empty())
      << "each line is delivered once";

  inventory->set_ignored_xids({});
  append_xids(std::string(kUuidB) + " 48\n");
  const auto later = collect(*inventory, 1);
  ASSERT_EQ(later.size(), 1u);
  EXPECT_EQ(later[0].uuid, kUuidB);
  EXPECT_EQ(later[0].xid, 48u);
}

TEST_F(FakeNvml, AWaitWithoutEventsReturnsNothingAndTheLongestTimeoutIsAccepted) {
  write_config(two_gpus());
  auto inventory = open_nvml(kLibrary);
  EXPECT_TRUE(inventory->wait_for_xids(std::chrono::milliseconds(-5)).empty());
  EXPECT_TRUE(inventory->wait_for_xids(std::chrono::milliseconds(20)).empty());
  append_xids(std::string(kUuidA) + " 79\n");
  const auto events = inventory->wait_for_xids(std::chrono::milliseconds::max());
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].uuid, kUuidA);
}

TEST_F(FakeNvml, AFailedWaitIsAnErrorNamingTheCall) {
  json config = two_gpus();
  config["fail"] = {{"nvmlEventSetWait_v2", 15}};
  write_config(config);
  auto inventory = open_nvml(kLibrary);
  EXPECT_THAT(error_of([&] { inventory->wait_for_xids(std::chrono::milliseconds(10)); }),
              HasSubstr("nvmlEventSetWait_v2 failed: GPU is lost"));
}

TEST_F(FakeNvml, ListAndWaitForXidsRunAtOnceOnTwoThreads) {
  write_config(two_gpus());
  auto inventory = open_nvml(kLibrary);
  std::atomic<bool> done{false};
  std::atomic<int> lists{0};
  std::atomic<int> bad_lists{0};
  std::thread lister([&] {
    while (!done) {
      const auto gpus = inventory->list();
      if (gpus.size() != 2 || gpus[0].uuid != kUuidA || gpus[1].uuid != kUuidB) ++bad_lists;
      ++lists;
    }
  });
  std::vector<XidEvent> events;
  // Let list() run while waits are in progress before the event is written.
  for (int i = 0; i < 20 || lists < 20; ++i) {
    auto more = inventory->wait_for_xids(std::chrono::milliseconds(2));
    events.insert(events.end(), more.begin(), more.end());
    if (i > 100000) break;
  }
  append_xids(std::string(kUuidB) + " 79\n");
  auto more = collect(*inventory, 1);
  events.insert(events.end(), more.begin(), more.end());
  done = true;
  lister.join();
  EXPECT_GE(lists.load(), 20);
  EXPECT_EQ(bad_lists.load(), 0);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].uuid, kUuidB);
  EXPECT_EQ(events[0].xid, 79u);
}

TEST(Xid, TheApplicationErrorsAndTheOperatorsListAreNotCritical) {
  const std::vector<std::uint64_t> extra{48};
  for (std::uint64_t xid : {13, 31, 43, 45, 68, 109, 48}) EXPECT_FALSE(is_critical_xid(xid, extra));
  for (std::uint64_t xid : {48, 63, 64, 74, 79, 94, 95, 999}) EXPECT_TRUE(is_critical_xid(xid, {}));
}

TEST(Xid, ParsesAnOperatorsList) {
  EXPECT_EQ(parse_xid_list("48, 79 ,94"), (std::vector<std::uint64_t>{48, 79, 94}));
  EXPECT_TRUE(parse_xid_list("").empty());
  EXPECT_TRUE(parse_xid_list(" , ").empty());
  EXPECT_THROW(parse_xid_list("48,all"), std::invalid_argument);
  EXPECT_THROW(parse_xid_list("-1"), std::invalid_argument);
}

}  // namespace
}  // namespace gpushare::nvml
