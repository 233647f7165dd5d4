// GpuInventory over NVML loaded at run time: dlopen, the entry points by name, RAII for the
// library, its initialisation and the event set. NVML's answers are checked before use: a string
// must be NUL-terminated inside its buffer, counts and sizes plausible; a GPU whose answers are
// unusable is left out of list() with the reason, a failing call throws Error.

#include "gpushare/nvml/nvml_inventory.h"

#include <dlfcn.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <climits>
#include <cstring>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "gpushare/nvml/c_api.h"

namespace gpushare::nvml {
namespace {

// The entry points gpushare calls, resolved from one loaded library.
struct Api {
  c_api::InitFn init = nullptr;
  c_api::ShutdownFn shutdown = nullptr;
  c_api::ErrorStringFn error_string = nullptr;
  c_api::DeviceGetCountFn get_count = nullptr;
  c_api::DeviceGetHandleByIndexFn get_handle_by_index = nullptr;
  c_api::DeviceGetStringFn get_uuid = nullptr;
  c_api::DeviceGetStringFn get_name = nullptr;
  c_api::DeviceGetMemoryInfoFn get_memory_info = nullptr;
  c_api::DeviceGetMigModeFn get_mig_mode = nullptr;
  c_api::DeviceGetPciInfoFn get_pci_info = nullptr;
  c_api::DeviceGetMinorNumberFn get_minor_number = nullptr;
  c_api::DeviceGetSupportedEventTypesFn get_supported_event_types = nullptr;
  c_api::DeviceRegisterEventsFn register_events = nullptr;
  c_api::EventSetCreateFn event_set_create = nullptr;
  c_api::EventSetWaitFn event_set_wait = nullptr;
  c_api::EventSetFreeFn event_set_free = nullptr;
};

struct LibraryCloser {
  void operator()(void* library) const { ::dlclose(library); }
};
using LibraryHandle = std::unique_ptr<void, LibraryCloser>;

template <typename Fn>
void resolve(void* library, const std::string& path, const char* symbol, Fn& out) {
  ::dlerror();
  void* address = ::dlsym(library, symbol);
  if (address == nullptr) {
    throw Error("NVML library " + path + " has no " + symbol +
                " (an NVIDIA driver older than gpushare supports, or not NVML)");
  }
  out = reinterpret_cast<Fn>(address);
}

// "Unknown Error (NVML error 999)", tolerating an error string that is null.
std::string describe(const Api& api, c_api::Return rc) {
  const char* text = api.error_string != nullptr ? api.error_string(rc) : nullptr;
  std::string out = text != nullptr ? std::string(text, ::strnlen(text, 256)) : "no description";
  return out + " (NVML error " + std::to_string(rc) + ")";
}

std::string on_gpu(std::optional<unsigned> index) {
  return index ? " for GPU " + std::to_string(*index) : std::string();
}

void check(const Api& api, c_api::Return rc, const char* call,
           std::optional<unsigned> index = std::nullopt) {
  if (rc != c_api::kSuccess)
    throw Error(std::string(call) + " failed" + on_gpu(index) + ": " + describe(api, rc));
}

// A string NVML wrote into a buffer of `size` bytes: the text, or why it is unusable.
struct ReadString {
  std::string text;
  std::string problem;  // empty when text is usable
};

ReadString read_string(const Api& api, c_api::DeviceGetStringFn fn, c_api::Device device,
                       unsigned size, const char* call, unsigned index) {
  // One byte more than NVML is told, always zero: nothing below can read past the buffer.
  std::vector<char> buffer(size + 1, '\0');
  check(api, fn(device, buffer.data(), size), call, index);
  const void* nul = std::memchr(buffer.data(), '\0', size);
  if (nul == nullptr)
    return {{}, std::string(call) + " returned a string without a NUL terminator"};
  ReadString out{std::string(buffer.data(), static_cast<const char*>(nul) - buffer.data()), {}};
  if (out.text.empty()) out.problem = std::string(call) + " returned an empty string";
  return out;
}

// Why a UUID cannot be a device ID, or empty when it can.
std::string uuid_problem(const std::string& uuid) {
  if (uuid.size() > kMaxUuidLength) {
    return "UUID is " + std::to_string(uuid.size()) + " characters, more than the " +
           std::to_string(kMaxUuidLength) + " a device ID has room for";
  }
  for (const char c : uuid) {
    if (std::isalnum(static_cast<unsigned char>(c)) == 0 && c != '-')
      return "UUID has a character other than letters, digits and '-'";
  }
  return {};
}

// Printable form of an unusable answer for a message: control and non-ASCII bytes escaped.
std::string printable(std::string_view text) {
  std::string out;
  for (const char c : text.substr(0, 80)) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte >= 0x20 && byte < 0x7f) {
      out += c;
    } else {
      static constexpr char kHex[] = "0123456789abcdef";
      out += "\\x";
      out += kHex[byte >> 4];
      out += kHex[byte & 0xf];
    }
  }
  return out;
}

unsigned to_timeout_ms(std::chrono::milliseconds timeout) {
  if (timeout.count() <= 0) return 0;
  return static_cast<unsigned>(std::min<long long>(timeout.count(), UINT_MAX - 1));
}

class Inventory final : public NvmlInventory {
 public:
  Inventory(LibraryHandle library, const Api& api) : library_(std::move(library)), api_(api) {}

  ~Inventory() override {
    if (event_set_ != nullptr) api_.event_set_free(event_set_);
    api_.shutdown();
    // library_ is closed after this body: no NVML call can follow.
  }

  Inventory(const Inventory&) = delete;
  Inventory& operator=(const Inventory&) = delete;

  std::vector<GpuInfo> list() override {
    std::vector<GpuInfo> gpus;
    std::vector<SkippedGpu> skipped;
    const unsigned count = device_count();
    std::set<std::string> seen;
    for (unsigned i = 0; i < count; ++i) {
      c_api::Device device = nullptr;
      check(api_, api_.get_handle_by_index(i, &device), "nvmlDeviceGetHandleByIndex_v2", i);
      GpuInfo gpu;
      gpu.index = i;
      auto skip = [&](std::string uuid, std::string reason) {
        skipped.push_back({i, std::move(uuid), std::move(reason)});
      };

      const ReadString uuid =
          read_string(api_, api_.get_uuid, device, c_api::kUuidBufferSize, "nvmlDeviceGetUUID", i);
      if (!uuid.problem.empty()) {
        skip({}, uuid.problem);
        continue;
      }
      if (const std::string problem = uuid_problem(uuid.text); !problem.empty()) {
        skip(printable(uuid.text), problem);
        continue;
      }
      gpu.uuid = uuid.text;
      if (!seen.insert(gpu.uuid).second) {
        skip(gpu.uuid, "UUID is the same as an earlier GPU's");
        continue;
      }

      const ReadString name =
          read_string(api_, api_.get_name, device, c_api::kNameBufferSize, "nvmlDeviceGetName", i);
      if (!name.problem.empty()) {
        skip(gpu.uuid, name.problem);
        continue;
      }
      gpu.name = name.text;

      c_api::Memory memory{};
      check(api_, api_.get_memory_info(device, &memory), "nvmlDeviceGetMemoryInfo", i);
      if (memory.total == 0) {
        skip(gpu.uuid, "nvmlDeviceGetMemoryInfo reported 0 bytes of memory");
        continue;
      }
      gpu.memory_bytes = memory.total;

      unsigned current = 0;
      unsigned pending = 0;
      const c_api::Return mig = api_.get_mig_mode(device, &current, &pending);
      if (mig != c_api::kNotSupported) {
        check(api_, mig, "nvmlDeviceGetMigMode", i);
        gpu.mig_enabled = current == c_api::kMigEnable;
      }

      c_api::PciInfo pci{};
      check(api_, api_.get_pci_info(device, &pci), "nvmlDeviceGetPciInfo_v3", i);
      const void* nul = std::memchr(pci.bus_id, '\0', sizeof pci.bus_id);
      if (nul == nullptr) {
        skip(gpu.uuid, "nvmlDeviceGetPciInfo_v3 returned a bus ID without a NUL terminator");
        continue;
      }
      gpu.pci_bus_id.assign(pci.bus_id, static_cast<const char*>(nul) - pci.bus_id);

      check(api_, api_.get_minor_number(device, &gpu.minor_number), "nvmlDeviceGetMinorNumber", i);
      // /dev/nvidia255 is nvidiactl: GPUs have minors below it.
      if (gpu.minor_number >= 255) {
        skip(gpu.uuid, "nvmlDeviceGetMinorNumber reported " + std::to_string(gpu.minor_number) +
                           ", not a GPU's /dev/nvidia<minor> (0-254)");
        continue;
      }
      gpus.push_back(std::move(gpu));
    }
    std::lock_guard lock(settings_mutex_);
    skipped_ = std::move(skipped);
    return gpus;
  }

  std::vector<XidEvent> wait_for_xids(std::chrono::milliseconds timeout) override {
    std::lock_guard events_lock(events_mutex_);
    // Bounded so that the deadline cannot overflow the clock.
    timeout = std::min<std::chrono::milliseconds>(timeout, std::chrono::hours(24 * 365));
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    if (event_set_ == nullptr) register_events();
    std::vector<std::uint64_t> extra;
    {
      std::lock_guard lock(settings_mutex_);
      extra = ignored_xids_;
    }
    std::vector<XidEvent> out;
    // Events already queued after the first are collected without waiting; the bound keeps a
    // library that never runs dry from holding the caller.
    constexpr int kMaxEventsPerCall = 256;
    for (int seen = 0; seen < kMaxEventsPerCall; ++seen) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      const unsigned wait_ms = out.empty() ? to_timeout_ms(left) : 0;
      c_api::EventData data{};
      const c_api::Return rc = api_.event_set_wait(event_set_, &data, wait_ms);
      if (rc == c_api::kTimeout) {
        // NVML also returns TIMEOUT early when a signal interrupts the wait.
        if (!out.empty() || std::chrono::steady_clock::now() >= deadline) break;
        continue;
      }
      check(api_, rc, "nvmlEventSetWait_v2");
      if ((data.event_type & c_api::kEventXidCriticalError) == 0) continue;
      if (!is_critical_xid(data.event_data, extra)) continue;
      if (data.device == nullptr) {
        out.push_back({"", data.event_data});  // every GPU
        continue;
      }
      const auto found = registered_.find(data.device);
      if (found != registered_.end()) out.push_back({found->second, data.event_data});
      // An event for a handle never registered cannot be attributed: dropped.
    }
    return out;
  }

  void set_ignored_xids(std::vector<std::uint64_t> xids) override {
    std::lock_guard lock(settings_mutex_);
    ignored_xids_ = std::move(xids);
  }

  std::vector<SkippedGpu> last_skipped() const override {
    std::lock_guard lock(settings_mutex_);
    return skipped_;
  }

 private:
  unsigned device_count() {
    unsigned count = 0;
    check(api_, api_.get_count(&count), "nvmlDeviceGetCount_v2");
    if (count > kMaxGpus) {
      throw Error("nvmlDeviceGetCount_v2 reported " + std::to_string(count) +
                  " GPUs, more than the " + std::to_string(kMaxGpus) +
                  " a node can hold: refusing a garbled answer");
    }
    return count;
  }

  // Creates the event set and registers every GPU that supports XID events for them. A GPU whose
  // UUID is unusable, or that does not support XID events, is not registered (list() skips the
  // former; the latter cannot be watched). Called with events_mutex_ held.
  void register_events() {
    c_api::EventSet set = nullptr;
    check(api_, api_.event_set_create(&set), "nvmlEventSetCreate");
    struct Freer {
      const Api& api;
      c_api::EventSet& set;
      ~Freer() {
        if (set != nullptr) api.event_set_free(set);
      }
    } freer{api_, set};
    std::map<c_api::Device, std::string> registered;
    const unsigned count = device_count();
    for (unsigned i = 0; i < count; ++i) {
      c_api::Device device = nullptr;
      check(api_, api_.get_handle_by_index(i, &device), "nvmlDeviceGetHandleByIndex_v2", i);
      const ReadString uuid =
          read_string(api_, api_.get_uuid, device, c_api::kUuidBufferSize, "nvmlDeviceGetUUID", i);
      if (!uuid.problem.empty() || !uuid_problem(uuid.text).empty()) continue;
      unsigned long long supported = 0;
      const c_api::Return types = api_.get_supported_event_types(device, &supported);
      if (types == c_api::kNotSupported) continue;
      check(api_, types, "nvmlDeviceGetSupportedEventTypes", i);
      const unsigned long long mask = supported & c_api::kEventXidCriticalError;
      if (mask == 0) continue;
      const c_api::Return rc = api_.register_events(device, mask, set);
      if (rc == c_api::kNotSupported) continue;
      check(api_, rc, "nvmlDeviceRegisterEvents", i);
      registered.emplace(device, uuid.text);
    }
    registered_ = std::move(registered);
    event_set_ = std::exchange(set, nullptr);
  }

  LibraryHandle library_;
  const Api api_;

  std::mutex events_mutex_;  // the event set, its registrations, one wait at a time
  c_api::EventSet event_set_ = nullptr;
  std::map<c_api::Device, std::string> registered_;  // handle -> UUID

  mutable std::mutex settings_mutex_;
  std::vector<std::uint64_t> ignored_xids_;
  std::vector<SkippedGpu> skipped_;
};

}  // namespace

std::unique_ptr<NvmlInventory> open_nvml_inventory(const std::string& library_path) {
  ::dlerror();
  LibraryHandle library(::dlopen(library_path.c_str(), RTLD_NOW | RTLD_LOCAL));
  if (!library) {
    const char* why = ::dlerror();
    throw Error("cannot load the NVML library " + library_path + " (" +
                (why != nullptr ? std::string(why) : std::string("dlopen failed")) +
                "): the NVIDIA driver or the NVIDIA container toolkit is not mounted into this "
                "container, or --nvml-library names the wrong file");
  }
  Api api;
  void* handle = library.get();
  resolve(handle, library_path, "nvmlInit_v2", api.init);
  resolve(handle, library_path, "nvmlShutdown", api.shutdown);
  resolve(handle, library_path, "nvmlErrorString", api.error_string);
  resolve(handle, library_path, "nvmlDeviceGetCount_v2", api.get_count);
  resolve(handle, library_path, "nvmlDeviceGetHandleByIndex_v2", api.get_handle_by_index);
  resolve(handle, library_path, "nvmlDeviceGetUUID", api.get_uuid);
  resolve(handle, library_path, "nvmlDeviceGetName", api.get_name);
  resolve(handle, library_path, "nvmlDeviceGetMemoryInfo", api.get_memory_info);
  resolve(handle, library_path, "nvmlDeviceGetMigMode", api.get_mig_mode);
  resolve(handle, library_path, "nvmlDeviceGetPciInfo_v3", api.get_pci_info);
  resolve(handle, library_path, "nvmlDeviceGetMinorNumber", api.get_minor_number);
  resolve(handle, library_path, "nvmlDeviceGetSupportedEventTypes", api.get_supported_event_types);
  resolve(handle, library_path, "nvmlDeviceRegisterEvents", api.register_events);
  resolve(handle, library_path, "nvmlEventSetCreate", api.event_set_create);
  resolve(handle, library_path, "nvmlEventSetWait_v2", api.event_set_wait);
  resolve(handle, library_path, "nvmlEventSetFree", api.event_set_free);
  const c_api::Return rc = api.init();
  if (rc != c_api::kSuccess) {
    throw Error("nvmlInit_v2 failed (NVML library " + library_path + "): " + describe(api, rc));
  }
  // From here the Inventory owns the initialisation: its destructor calls nvmlShutdown.
  return std::make_unique<Inventory>(std::move(library), api);
}

std::unique_ptr<GpuInventory> open_nvml(const std::string& library_path) {
  return open_nvml_inventory(library_path);
}

}  // namespace gpushare::nvml
