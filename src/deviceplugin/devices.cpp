#include "gpushare/deviceplugin/devices.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>

namespace gpushare::deviceplugin {

MemoryUnit parse_memory_unit(std::string_view text) {
  if (text == "GiB") return MemoryUnit::kGiB;
  if (text == "MiB") return MemoryUnit::kMiB;
  throw ConfigError(fmt::format("--memory-unit must be GiB or MiB, got \"{}\"", text));
}

std::string_view to_string(MemoryUnit unit) {
  return unit == MemoryUnit::kGiB ? "GiB" : "MiB";
}

std::uint64_t unit_bytes(MemoryUnit unit) {
  return unit == MemoryUnit::kGiB ? (std::uint64_t{1} << 30) : (std::uint64_t{1} << 20);
}

const AdvertisedGpu* Advertisement::by_uuid(std::string_view uuid) const {
  for (const auto& gpu : gpus) {
    if (gpu.uuid == uuid) return &gpu;
  }
  return nullptr;
}

const AdvertisedGpu* Advertisement::by_index(int index) const {
  if (index < 0 || static_cast<std::size_t>(index) >= gpus.size()) return nullptr;
  return &gpus[static_cast<std::size_t>(index)];
}

Advertisement plan_advertisement(std::span<const nvml::GpuInfo> gpus, MemoryUnit unit,
                                 std::string_view node_name) {
  Advertisement ad;
  ad.unit = unit;
  std::vector<nvml::GpuInfo> kept;
  for (const auto& gpu : gpus) {
    if (gpu.mig_enabled) {
      ad.warnings.push_back(
          fmt::format("GPU {} ({}) has MIG enabled: left out (gpushare shares whole GPUs only)",
                      gpu.index, gpu.uuid));
      continue;
    }
    if (gpu.uuid.empty()) throw ConfigError(fmt::format("GPU {} has an empty UUID", gpu.index));
    // The longest ID: kMaxDevices - 1 has 5 digits.
    const std::string longest = device_id(gpu.uuid, kMaxDevices - 1);
    if (longest.size() > kMaxDeviceIdLength) {
      throw ConfigError(fmt::format(
          "GPU {}: UUID \"{}\" makes device IDs like \"{}\" longer than kubelet's {} characters",
          gpu.index, gpu.uuid, longest, kMaxDeviceIdLength));
    }
    kept.push_back(gpu);
  }
  std::sort(kept.begin(), kept.end(),
            [](const auto& a, const auto& b) { return a.index < b.index; });
  if (kept.empty()) return ad;

  std::uint64_t smallest = kept.front().memory_bytes;
  std::uint64_t largest = smallest;
  for (const auto& gpu : kept) {
    smallest = std::min(smallest, gpu.memory_bytes);
    largest = std::max(largest, gpu.memory_bytes);
  }
  const std::uint64_t units = smallest / unit_bytes(unit);
  if (units == 0) {
    throw ConfigError(fmt::format("a GPU of {} bytes is smaller than one {}: use --memory-unit MiB",
                                  smallest, to_string(unit)));
  }
  if (units * kept.size() > kMaxDevices) {
    throw ConfigError(fmt::format(
        "{} GPU(s) of {} {} each would be {} devices, more than the {} kubelet can receive in one "
        "ListAndWatch message (4 MiB){}",
        kept.size(), units, to_string(unit), units * kept.size(), kMaxDevices,
        unit == MemoryUnit::kMiB ? ": use --memory-unit GiB" : ""));
  }
  if (largest / unit_bytes(unit) != units) {
    ad.warnings.push_back(fmt::format(
        "node {}: GPUs of different sizes ({} to {} {}); every GPU is advertised at the smallest "
        "size, {} {}, because the extender reads one size per node (gpu-mem / gpu-count)",
        node_name, units, largest / unit_bytes(unit), to_string(unit), units, to_string(unit)));
  }
  ad.units_per_gpu = static_cast<std::int64_t>(units);
  int index = 0;
  for (const auto& gpu : kept) {
    ad.gpus.push_back(
        AdvertisedGpu{index++, gpu.uuid, gpu.name, gpu.index, gpu.minor_number, gpu.memory_bytes});
  }
  return ad;
}

std::string device_id(std::string_view uuid, std::int64_t j) {
  return fmt::format("{}{}{}", uuid, kDeviceIdSeparator, j);
}

std::optional<DeviceRef> parse_device_id(std::string_view id) {
  const auto at = id.rfind(kDeviceIdSeparator);
  if (at == std::string_view::npos || at == 0) return std::nullopt;
  const std::string_view number = id.substr(at + kDeviceIdSeparator.size());
  std::int64_t j = -1;
  const auto [ptr, ec] = std::from_chars(number.data(), number.data() + number.size(), j);
  if (number.empty() || ec != std::errc() || ptr != number.data() + number.size() || j < 0) {
    return std::nullopt;
  }
  return DeviceRef{std::string(id.substr(0, at)), j};
}

std::vector<DeviceState> device_states(const Advertisement& ad,
                                       const std::set<std::string>& unhealthy_uuids) {
  std::vector<DeviceState> states;
  states.reserve(ad.device_count());
  for (const auto& gpu : ad.gpus) {
    const bool healthy = !unhealthy_uuids.contains(gpu.uuid);
    for (std::int64_t j = 0; j < ad.units_per_gpu; ++j) {
      states.push_back(DeviceState{device_id(gpu.uuid, j), healthy});
    }
  }
  return states;
}

std::string describe(const Advertisement& ad) {
  std::string out = fmt::format(
      "aliyun.com/gpu-mem: {} devices ({} x {} {}); aliyun.com/gpu-count: {}\n", ad.device_count(),
      ad.gpus.size(), ad.units_per_gpu, to_string(ad.unit), ad.gpus.size());
  for (const auto& gpu : ad.gpus) {
    out += fmt::format("GPU {}: {} {} (NVML index {}, /dev/nvidia{}, {} bytes) devices {} .. {}\n",
                       gpu.index, gpu.uuid, gpu.name, gpu.nvml_index, gpu.minor_number,
                       gpu.memory_bytes, device_id(gpu.uuid, 0),
                       device_id(gpu.uuid, ad.units_per_gpu - 1));
  }
  for (const auto& warning : ad.warnings) out += "warning: " + warning + "\n";
  return out;
}

}  // namespace gpushare::deviceplugin
