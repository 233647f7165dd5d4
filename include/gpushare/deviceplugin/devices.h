#pragma once
// What the device plugin advertises for aliyun.com/gpu-mem: one kubelet device per memory unit of
// each GPU, with IDs "<UUID>-_-<j>" (the Go plugin's form, so that kubelet checkpoints written by
// it stay readable). Pure: no I/O.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <set>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "gpushare/nvml/gpu_inventory.h"

namespace gpushare::deviceplugin {

// Bad configuration or input the plugin refuses with a message naming the fix.
class ConfigError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

enum class MemoryUnit { kGiB, kMiB };

// "GiB" or "MiB" (exact); throws ConfigError otherwise.
MemoryUnit parse_memory_unit(std::string_view text);
std::string_view to_string(MemoryUnit unit);
std::uint64_t unit_bytes(MemoryUnit unit);

// kubelet reads ListAndWatch with grpc-go's default 4 MiB receive limit: about 69 000 devices of
// ~60 bytes. The plugin refuses to advertise more than this many devices per node, leaving
// headroom for longer IDs.
inline constexpr std::size_t kMaxDevices = 50000;
// Device.ID's documented maximum length.
inline constexpr std::size_t kMaxDeviceIdLength = 63;
inline constexpr std::string_view kDeviceIdSeparator = "-_-";

// One GPU the plugin advertises. `index` is the extender's GPU index (ALIYUN_COM_GPU_MEM_IDX):
// the position among the advertised GPUs, ordered by NVML index.
struct AdvertisedGpu {
  int index = 0;
  std::string uuid;
  std::string name;
  unsigned nvml_index = 0;
  unsigned minor_number = 0;
  std::uint64_t memory_bytes = 0;
};

// The node's advertisement: every GPU gets `units_per_gpu` devices (the smallest GPU's size, so
// that gpu-mem / gpu-count is every GPU's size, as the extender reads it).
struct Advertisement {
  MemoryUnit unit = MemoryUnit::kGiB;
  std::int64_t units_per_gpu = 0;
  std::vector<AdvertisedGpu> gpus;
  std::vector<std::string> warnings;  // MIG GPUs left out, mixed sizes (to log)

  std::size_t device_count() const { return gpus.size() * static_cast<std::size_t>(units_per_gpu); }
  std::int64_t total_units() const {
    return static_cast<std::int64_t>(gpus.size()) * units_per_gpu;
  }
  // The GPU with this UUID / extender index, or nullptr.
  const AdvertisedGpu* by_uuid(std::string_view uuid) const;
  const AdvertisedGpu* by_index(int index) const;
};

// Plans the advertisement from NVML's list. MIG-enabled GPUs are left out (warning); GPUs of
// different sizes are all advertised at the smallest size (warning naming the node). Throws
// ConfigError for a UUID too long for a device ID, a GPU smaller than one unit, or more than
// kMaxDevices devices (naming the coarser unit to use).
Advertisement plan_advertisement(std::span<const nvml::GpuInfo> gpus, MemoryUnit unit,
                                 std::string_view node_name);

// "<uuid>-_-<j>".
std::string device_id(std::string_view uuid, std::int64_t j);

struct DeviceRef {
  std::string uuid;
  std::int64_t unit = 0;
};
// The inverse of device_id; nullopt for an ID not of that form.
std::optional<DeviceRef> parse_device_id(std::string_view id);

// One entry of a ListAndWatch message.
struct DeviceState {
  std::string id;
  bool healthy = true;
};
// Every device of the advertisement, in GPU then unit order; those of GPUs whose UUID is in
// `unhealthy_uuids` are unhealthy.
std::vector<DeviceState> device_states(const Advertisement& ad,
                                       const std::set<std::string>& unhealthy_uuids);

// A human-readable account of the advertisement (--discover).
std::string describe(const Advertisement& ad);

}  // namespace gpushare::deviceplugin
