#pragma once
// The annotation protocol shared with Aliyun's gpushare-device-plugin (exact keys).

#include <string_view>

namespace gpushare::kube {

inline constexpr std::string_view kAnnotationGpuIndex = "ALIYUN_COM_GPU_MEM_IDX";
inline constexpr std::string_view kAnnotationPodRequest = "ALIYUN_COM_GPU_MEM_POD";
inline constexpr std::string_view kAnnotationDeviceMemory = "ALIYUN_COM_GPU_MEM_DEV";
inline constexpr std::string_view kAnnotationAssigned = "ALIYUN_COM_GPU_MEM_ASSIGNED";
inline constexpr std::string_view kAnnotationAssumeTime = "ALIYUN_COM_GPU_MEM_ASSUME_TIME";

inline constexpr std::string_view kDefaultResourceName = "aliyun.com/gpu-mem";
inline constexpr std::string_view kDefaultCountName = "aliyun.com/gpu-count";
inline constexpr std::string_view kUnhealthyConfigMapPrefix = "unhealthy-gpu-";
inline constexpr std::string_view kDefaultUnhealthyNamespace = "kube-system";
// Node label that carries the GPU model by default (NVIDIA GPU feature discovery).
inline constexpr std::string_view kDefaultGpuModelLabel = "nvidia.com/gpu.product";

}  // namespace gpushare::kube
