#pragma once
// The NVML-backed GpuInventory with the knobs open_nvml() leaves at their defaults: the XIDs an
// operator adds to the ignored ones, and why GPUs were left out of the last list().

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "gpushare/nvml/gpu_inventory.h"

namespace gpushare::nvml {

// The longest UUID a GPU may have to be advertised: CDI annotation keys are
// "gpushare-device-plugin_" (23 characters) + the device ID, at most 63 characters.
inline constexpr std::size_t kMaxUuidLength = 63 - 23;
// More GPUs than this in one node is taken for a garbled nvmlDeviceGetCount_v2 answer.
inline constexpr unsigned kMaxGpus = 64;

// XIDs that are application errors, not GPU faults (NVIDIA's k8s-device-plugin ignores them too):
// 13 graphics engine exception, 31 GPU memory page fault, 43 GPU stopped processing,
// 45 preemptive cleanup, 68 video processor exception, 109 context switch timeout.
inline constexpr std::uint64_t kDefaultIgnoredXids[] = {13, 31, 43, 45, 68, 109};

// Whether an XID marks a GPU unhealthy: every XID but the default ignored ones and extra_ignored.
// XID 999 (one NVML does not know) is critical.
bool is_critical_xid(std::uint64_t xid, std::span<const std::uint64_t> extra_ignored);

// Parses an operator's list of XIDs to ignore: decimal numbers separated by commas and/or
// blanks ("48, 79"). Throws std::invalid_argument naming the first entry that is not one.
std::vector<std::uint64_t> parse_xid_list(std::string_view text);

// A GPU NVML reported but list() left out, because an answer was unusable (not NUL-terminated,
// empty, too long, a duplicate UUID, zero memory).
struct SkippedGpu {
  unsigned index = 0;
  std::string uuid;    // as far as it could be read; may be empty
  std::string reason;  // e.g. "nvmlDeviceGetUUID returned a UUID without a NUL terminator"
};

// Thread-safety: list() and wait_for_xids() may run at once from different threads (as
// GpuInventory promises); the setters and last_skipped() may be called from any thread. Two
// concurrent wait_for_xids() calls are serialised.
class NvmlInventory : public GpuInventory {
 public:
  // XIDs ignored on top of kDefaultIgnoredXids, for the wait_for_xids() calls that start after.
  virtual void set_ignored_xids(std::vector<std::uint64_t> xids) = 0;
  // The GPUs the most recent list() left out, with the reason.
  virtual std::vector<SkippedGpu> last_skipped() const = 0;
};

// As open_nvml(), with the knobs.
std::unique_ptr<NvmlInventory> open_nvml_inventory(const std::string& library_path);

}  // namespace gpushare::nvml
