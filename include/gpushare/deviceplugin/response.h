#pragma once
// The container's part of an Allocate answer, as plain values (converted to the protobuf message
// by the service). Pure: no I/O.

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "gpushare/deviceplugin/devices.h"

namespace gpushare::deviceplugin {

// How the container is told its GPU (NVIDIA's --device-list-strategy values that apply).
enum class DeviceListStrategy {
  kEnvvar,  // NVIDIA_VISIBLE_DEVICES=<UUID>
  kCdiCri,  // cdi_devices: nvidia.com/gpu=<UUID> (kubelet >= 1.28 with DevicePluginCDIDevices)
  kCdiAnnotations,  // annotation cdi.k8s.io/gpushare_<UUID> = nvidia.com/gpu=<UUID>
};

// "envvar", "cdi-cri", "cdi-annotations"; throws ConfigError otherwise.
DeviceListStrategy parse_device_list_strategy(std::string_view text);

struct ResponseOptions {
  DeviceListStrategy strategy = DeviceListStrategy::kEnvvar;
  bool pass_device_specs = false;  // add /dev/nvidia<minor>, nvidiactl, nvidia-uvm(-tools), "rw"
  // When set, the container's reservation as a memory limit: HAMi-core's syntax ("<MiB>m") for
  // any name but CUDA_MPS_PINNED_DEVICE_MEM_LIMIT, which gets MPS's "0=<MiB>M".
  std::string memory_limit_env;
  std::string cdi_kind = "nvidia.com/gpu";  // nvidia-ctk cdi generate's kind
};

struct DeviceSpecValue {
  std::string container_path;
  std::string host_path;
  std::string permissions;
};

struct ContainerResponse {
  std::map<std::string, std::string> envs;
  std::map<std::string, std::string> annotations;
  std::vector<DeviceSpecValue> devices;
  std::vector<std::string> cdi_devices;
};

// The annotation key for a GPU's CDI device (cdi.k8s.io/<plugin>_<device>, name <= 63 chars).
std::string cdi_annotation_key(const AdvertisedGpu& gpu);

// The answer for one container of `container_units` units of a pod of `pod_units`, on `gpu`.
// Always sets ALIYUN_COM_GPU_MEM_IDX, _POD, _CONTAINER and _DEV (the Go plugin's variables).
ContainerResponse build_response(const Advertisement& ad, const AdvertisedGpu& gpu,
                                 std::int64_t container_units, std::int64_t pod_units,
                                 const ResponseOptions& options);

}  // namespace gpushare::deviceplugin
