#pragma once
// The node's NVIDIA GPUs as the device plugin needs them, behind an interface so that the plugin
// is tested without NVML. open_nvml() loads NVML at run time (dlopen), so that binaries build and
// start on machines without the NVIDIA driver.

#include <chrono>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace gpushare::nvml {

// One physical GPU as NVML reports it.
struct GpuInfo {
  unsigned index = 0;              // NVML device index
  std::string uuid;                // "GPU-..." (NVML's UUID string)
  std::string name;                // product name, e.g. "Tesla T4"
  std::uint64_t memory_bytes = 0;  // total framebuffer memory
  bool mig_enabled = false;        // current MIG mode is enabled
  std::string pci_bus_id;          // e.g. "00000000:00:1E.0"
  unsigned minor_number = 0;       // /dev/nvidia<minor>
};

// A critical XID reported for one GPU (or for every GPU when uuid is empty).
struct XidEvent {
  std::string uuid;
  std::uint64_t xid = 0;
};

// Any NVML failure, with NVML's own error string and the call that failed.
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Thread-safety: list() and wait_for_xids() may be called from different threads at once.
class GpuInventory {
 public:
  virtual ~GpuInventory() = default;
  // Every GPU NVML reports, MIG-enabled ones included (flagged); throws Error.
  virtual std::vector<GpuInfo> list() = 0;
  // Waits up to timeout for critical XID events and returns them (empty on timeout); throws Error.
  virtual std::vector<XidEvent> wait_for_xids(std::chrono::milliseconds timeout) = 0;
};

// dlopen()s library_path (e.g. "libnvidia-ml.so.1"), resolves the entry points and calls
// nvmlInit_v2; throws Error naming the library when it is missing or fails to initialise.
std::unique_ptr<GpuInventory> open_nvml(const std::string& library_path);

}  // namespace gpushare::nvml
