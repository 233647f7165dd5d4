#include "gpushare/deviceplugin/response.h"

#include <fmt/format.h>

#include <cctype>

namespace gpushare::deviceplugin {

DeviceListStrategy parse_device_list_strategy(std::string_view text) {
  if (text == "envvar") return DeviceListStrategy::kEnvvar;
  if (text == "cdi-cri") return DeviceListStrategy::kCdiCri;
  if (text == "cdi-annotations") return DeviceListStrategy::kCdiAnnotations;
  throw ConfigError(fmt::format(
      "--device-list-strategy must be envvar, cdi-cri or cdi-annotations, got \"{}\"", text));
}

std::string cdi_annotation_key(const AdvertisedGpu& gpu) {
  std::string name = "gpushare_" + gpu.uuid;
  bool valid = name.size() <= 63 && std::isalnum(static_cast<unsigned char>(name.back()));
  for (const char c : name) {
    valid =
        valid && (std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '-');
  }
  if (!valid) name = fmt::format("gpushare_gpu{}", gpu.index);
  return "cdi.k8s.io/" + name;
}

ContainerResponse build_response(const Advertisement& ad, const AdvertisedGpu& gpu,
                                 std::int64_t container_units, std::int64_t pod_units,
                                 const ResponseOptions& options) {
  ContainerResponse out;
  out.envs["ALIYUN_COM_GPU_MEM_IDX"] = std::to_string(gpu.index);
  out.envs["ALIYUN_COM_GPU_MEM_POD"] = std::to_string(pod_units);
  out.envs["ALIYUN_COM_GPU_MEM_CONTAINER"] = std::to_string(container_units);
  out.envs["ALIYUN_COM_GPU_MEM_DEV"] = std::to_string(ad.units_per_gpu);
  const std::string cdi_name = options.cdi_kind + "=" + gpu.uuid;
  switch (options.strategy) {
    case DeviceListStrategy::kEnvvar:
      out.envs["NVIDIA_VISIBLE_DEVICES"] = gpu.uuid;
      break;
    case DeviceListStrategy::kCdiCri:
      out.cdi_devices.push_back(cdi_name);
      break;
    case DeviceListStrategy::kCdiAnnotations:
      out.annotations[cdi_annotation_key(gpu)] = cdi_name;
      break;
  }
  if (!options.memory_limit_env.empty()) {
    const std::uint64_t mib =
        static_cast<std::uint64_t>(container_units) * (unit_bytes(ad.unit) >> 20);
    out.envs[options.memory_limit_env] =
        options.memory_limit_env == "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT" ? fmt::format("0={}M", mib)
                                                                       : fmt::format("{}m", mib);
  }
  if (options.pass_device_specs) {
    for (const std::string& path :
         {fmt::format("/dev/nvidia{}", gpu.minor_number), std::string("/dev/nvidiactl"),
          std::string("/dev/nvidia-uvm"), std::string("/dev/nvidia-uvm-tools")}) {
      out.devices.push_back(DeviceSpecValue{path, path, "rw"});
    }
  }
  return out;
}

}  // namespace gpushare::deviceplugin
