// libgpushare-fake-nvml.so: the NVML entry points gpushare calls, answering from the JSON file
// $GPUSHARE_FAKE_NVML_CONFIG names (README.md beside this file has the format). The file is read
// again whenever it changes, so a test changes the node by rewriting it. XID events come from
// lines appended to the file the config's "xid_file" names.
//
// Thread-safety: every entry point may be called from any thread; one mutex guards the state,
// and nvmlEventSetWait_v2 does not hold it while it sleeps.

#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "gpushare/nvml/c_api.h"

namespace c_api = gpushare::nvml::c_api;
using c_api::Return;

// A device handle names a GPU by UUID, so that it stays valid (or becomes "lost") across rewrites.
struct gpushare::nvml::c_api::DeviceOpaque {
  std::string uuid;
};

// An event set: the UUIDs registered, how far into the XID file it has read, events not yet
// returned.
struct gpushare::nvml::c_api::EventSetOpaque {
  std::set<std::string> uuids;
  std::streamoff offset = 0;
  std::string partial_line;
  std::deque<c_api::EventData> queued;
};

namespace {

struct FakeGpu {
  std::string uuid;
  std::string name;
  std::uint64_t memory_bytes = 0;
  std::optional<unsigned> mig_mode;  // absent: nvmlDeviceGetMigMode is NOT_SUPPORTED
  std::string pci_bus_id;
  unsigned minor = 0;
  std::map<std::string, Return> fail;  // entry point -> return code
  std::string garble;                  // "uuid", "name" or "pci": no NUL terminator
};

struct Config {
  Return init_error = c_api::kSuccess;
  std::vector<FakeGpu> gpus;
  std::string xid_file;
  std::map<std::string, Return> fail;  // entry points without a GPU
};

// What identifies one version of the config file.
struct Stamp {
  dev_t device = 0;
  ino_t inode = 0;
  off_t size = 0;
  long long mtime_ns = 0;
  bool operator==(const Stamp&) const = default;
};

std::mutex g_mutex;
int g_init_count = 0;
std::optional<Config> g_config;
Stamp g_stamp;
std::string g_path;  // the file g_config came from
// Handles live as long as the library: a handle taken before a rewrite stays a valid pointer.
std::map<std::string, std::unique_ptr<c_api::DeviceOpaque>> g_devices;

std::map<std::string, Return> fail_map(const nlohmann::json& object) {
  std::map<std::string, Return> out;
  if (object.contains("fail")) {
    for (const auto& [call, code] : object.at("fail").items()) out[call] = code.get<Return>();
  }
  return out;
}

Config parse(const std::string& text) {
  const auto json = nlohmann::json::parse(text);
  Config config;
  config.init_error = json.value("init_error", c_api::kSuccess);
  config.xid_file = json.value("xid_file", "");
  config.fail = fail_map(json);
  unsigned index = 0;
  for (const auto& entry : json.at("gpus")) {
    FakeGpu gpu;
    gpu.uuid = entry.at("uuid").get<std::string>();
    gpu.name = entry.value("name", "Fake GPU");
    gpu.memory_bytes = entry.at("memory_bytes").get<std::uint64_t>();
    if (entry.contains("mig_mode") && !entry.at("mig_mode").is_null())
      gpu.mig_mode = entry.at("mig_mode").get<unsigned>();
    gpu.pci_bus_id = entry.value("pci_bus_id", "");
    gpu.minor = entry.value("minor", index);
    gpu.fail = fail_map(entry);
    gpu.garble = entry.value("garble", "");
    config.gpus.push_back(std::move(gpu));
    ++index;
  }
  return config;
}

// Reads the config again if the file changed. Keeps the last good config of the same file when
// the new text does not parse. SUCCESS, or why there is no config at all.
Return refresh() {
  const char* path = std::getenv("GPUSHARE_FAKE_NVML_CONFIG");
  if (path == nullptr || *path == '\0' || path != g_path) g_config.reset();
  if (path == nullptr || *path == '\0') return c_api::kDriverNotLoaded;
  g_path = path;
  struct stat st {};
  if (::stat(path, &st) != 0) {  // removed: as if the driver went away
    g_config.reset();
    return c_api::kDriverNotLoaded;
  }
  const Stamp stamp{
      st.st_dev, st.st_ino, st.st_size,
      static_cast<long long>(st.st_mtim.tv_sec) * 1'000'000'000LL + st.st_mtim.tv_nsec};
  if (g_config && stamp == g_stamp) return c_api::kSuccess;
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  try {
    g_config = parse(text.str());
    g_stamp = stamp;
  } catch (const std::exception&) {
    if (!g_config) return c_api::kUnknown;
  }
  return c_api::kSuccess;
}

c_api::Device handle_for(const std::string& uuid) {
  auto& slot = g_devices[uuid];
  if (!slot) slot = std::make_unique<c_api::DeviceOpaque>(c_api::DeviceOpaque{uuid});
  return slot.get();
}

// The common prologue of a per-GPU entry point: initialised, the config current, the GPU still
// there and the call not configured to fail. SUCCESS and *out set, or the code to return.
Return find_gpu(c_api::Device device, const char* call, const FakeGpu** out) {
  if (g_init_count == 0) return c_api::kUninitialized;
  if (device == nullptr) return c_api::kInvalidArgument;
  refresh();
  if (!g_config) return c_api::kUninitialized;
  const auto& gpus = g_config->gpus;
  const auto it = std::find_if(gpus.begin(), gpus.end(),
                               [&](const FakeGpu& g) { return g.uuid == device->uuid; });
  if (it == gpus.end()) return c_api::kGpuIsLost;
  if (const auto f = it->fail.find(call); f != it->fail.end()) return f->second;
  *out = &*it;
  return c_api::kSuccess;
}

Return global_prologue(const char* call) {
  if (g_init_count == 0) return c_api::kUninitialized;
  refresh();
  if (!g_config) return c_api::kUninitialized;
  if (const auto f = g_config->fail.find(call); f != g_config->fail.end()) return f->second;
  return c_api::kSuccess;
}

Return copy_string(const std::string& text, bool garble, char* buffer, unsigned length) {
  if (buffer == nullptr) return c_api::kInvalidArgument;
  if (garble) {
    std::memset(buffer, 'G', length);
    return c_api::kSuccess;
  }
  if (text.size() + 1 > length) return c_api::kInsufficientSize;
  std::memcpy(buffer, text.c_str(), text.size() + 1);
  return c_api::kSuccess;
}

// Moves the XID file's complete new lines into the set's queue (called with g_mutex held).
void read_xids(c_api::EventSetOpaque& set) {
  if (!g_config || g_config->xid_file.empty() || set.uuids.empty()) return;
  std::ifstream in(g_config->xid_file, std::ios::binary);
  if (!in) return;
  in.seekg(0, std::ios::end);
  const std::streamoff size = in.tellg();
  if (size < set.offset) {  // truncated: start again
    set.offset = 0;
    set.partial_line.clear();
  }
  in.seekg(set.offset);
  std::string fresh(static_cast<std::size_t>(size - set.offset), '\0');
  in.read(fresh.data(), static_cast<std::streamsize>(fresh.size()));
  fresh.resize(static_cast<std::size_t>(in.gcount()));
  set.offset += static_cast<std::streamoff>(fresh.size());
  std::string text = set.partial_line + fresh;
  const auto last = text.rfind('\n');
  set.partial_line = last == std::string::npos ? text : text.substr(last + 1);
  if (last == std::string::npos) return;
  std::istringstream lines(text.substr(0, last));
  for (std::string line; std::getline(lines, line);) {
    std::istringstream words(line);
    std::string uuid;
    unsigned long long xid = 0;
    if (!(words >> uuid >> xid)) continue;
    c_api::EventData data{};
    data.event_type = c_api::kEventXidCriticalError;
    data.event_data = xid;
    data.gpu_instance_id = 0xFFFFFFFF;
    data.compute_instance_id = 0xFFFFFFFF;
    if (uuid == "*") {
      data.device = nullptr;
    } else if (set.uuids.contains(uuid)) {
      data.device = handle_for(uuid);
    } else {
      continue;  // not registered in this set
    }
    set.queued.push_back(data);
  }
}

// Runs `body()` under the lock once `call` passes the checks every call makes (initialised,
// no configured failure); returns its result, or the check's.
template <typename Body>
Return initialised(const char* call, const Body& body) {
  std::lock_guard lock(g_mutex);
  if (const Return rc = global_prologue(call); rc != c_api::kSuccess) return rc;
  return body();
}

// Runs `body(gpu)` under the lock for the GPU `device` names, once `call` passes the checks every
// device call makes (initialised, a known device, no configured failure for it).
template <typename Body>
Return on_gpu(c_api::Device device, const char* call, const Body& body) {
  std::lock_guard lock(g_mutex);
  const FakeGpu* gpu = nullptr;
  if (const Return rc = find_gpu(device, call, &gpu); rc != c_api::kSuccess) return rc;
  return body(*gpu);
}

}  // namespace

#define FAKE_NVML_EXPORT extern "C" __attribute__((visibility("default")))

FAKE_NVML_EXPORT Return nvmlInit_v2() {
  std::lock_guard lock(g_mutex);
  if (const Return rc = refresh(); rc != c_api::kSuccess) return rc;
  if (g_config->init_error != c_api::kSuccess) return g_config->init_error;
  ++g_init_count;
  return c_api::kSuccess;
}

FAKE_NVML_EXPORT Return nvmlShutdown() {
  std::lock_guard lock(g_mutex);
  if (g_init_count == 0) return c_api::kUninitialized;
  --g_init_count;
  return c_api::kSuccess;
}

FAKE_NVML_EXPORT const char* nvmlErrorString(Return rc) {
  switch (rc) {
    case c_api::kSuccess:
      return "Success";
    case c_api::kUninitialized:
      return "Uninitialized";
    case c_api::kInvalidArgument:
      return "Invalid Argument";
    case c_api::kNotSupported:
      return "Not Supported";
    case c_api::kNoPermission:
      return "Insufficient Permissions";
    case c_api::kNotFound:
      return "Not Found";
    case c_api::kInsufficientSize:
      return "Insufficient Size";
    case c_api::kDriverNotLoaded:
      return "Driver Not Loaded";
    case c_api::kTimeout:
      return "Timeout";
    case c_api::kGpuIsLost:
      return "GPU is lost";
    case c_api::kUnknown:
      return "Unknown Error";
    default:
      return "Unknown Error (fake NVML)";
  }
}

FAKE_NVML_EXPORT Return nvmlDeviceGetCount_v2(unsigned* count) {
  return initialised(__func__, [&] {
    if (count == nullptr) return c_api::kInvalidArgument;
    *count = static_cast<unsigned>(g_config->gpus.size());
    return c_api::kSuccess;
  });
}

FAKE_NVML_EXPORT Return nvmlDeviceGetHandleByIndex_v2(unsigned index, c_api::Device* device) {
  const char* call = __func__;
  return initialised(call, [&] {
    if (device == nullptr || index >= g_config->gpus.size()) return c_api::kInvalidArgument;
    const FakeGpu& gpu = g_config->gpus[index];
    if (const auto f = gpu.fail.find(call); f != gpu.fail.end()) return f->second;
    *device = handle_for(gpu.uuid);
    return c_api::kSuccess;
  });
}

FAKE_NVML_EXPORT Return nvmlDeviceGetUUID(c_api::Device device, char* uuid, unsigned length) {
  return on_gpu(device, __func__, [&](const FakeGpu& gpu) {
    return copy_string(gpu.uuid, gpu.garble == "uuid", uuid, length);
  });
}

FAKE_NVML_EXPORT Return nvmlDeviceGetName(c_api::Device device, char* name, unsigned length) {
  return on_gpu(device, __func__, [&](const FakeGpu& gpu) {
    return copy_string(gpu.name, gpu.garble == "name", name, length);
  });
}

FAKE_NVML_EXPORT Return nvmlDeviceGetMemoryInfo(c_api::Device device, c_api::Memory* memory) {
  return on_gpu(device, __func__, [&](const FakeGpu& gpu) {
    if (memory == nullptr) return c_api::kInvalidArgument;
    *memory = {gpu.memory_bytes, gpu.memory_bytes, 0};
    return c_api::kSuccess;
  });
}

FAKE_NVML_EXPORT Return nvmlDeviceGetMigMode(c_api::Device device, unsigned* current,
                                             unsigned* pending) {
  return on_gpu(device, __func__, [&](const FakeGpu& gpu) {
    if (current == nullptr || pending == nullptr) return c_api::kInvalidArgument;
    if (!gpu.mig_mode) return c_api::kNotSupported;
    *current = *pending = *gpu.mig_mode;
    return c_api::kSuccess;
  });
}

FAKE_NVML_EXPORT Return nvmlDeviceGetPciInfo_v3(c_api::Device device, c_api::PciInfo* pci) {
  return on_gpu(device, __func__, [&](const FakeGpu& gpu) {
    if (pci == nullptr) return c_api::kInvalidArgument;
    *pci = {};
    unsigned domain = 0, bus = 0, dev = 0;
    if (std::sscanf(gpu.pci_bus_id.c_str(), "%x:%x:%x", &domain, &bus, &dev) == 3) {
      pci->domain = domain;
      pci->bus = bus;
      pci->device = dev;
      std::snprintf(pci->bus_id_legacy, sizeof pci->bus_id_legacy, "%04X:%02X:%02X.0",
                    domain & 0xffff, bus & 0xff, dev & 0xff);
    }
    if (gpu.garble == "pci") {
      std::memset(pci->bus_id, 'P', sizeof pci->bus_id);
    } else {
      std::snprintf(pci->bus_id, sizeof pci->bus_id, "%s", gpu.pci_bus_id.c_str());
    }
    return c_api::kSuccess;
  });
}

FAKE_NVML_EXPORT Return nvmlDeviceGetMinorNumber(c_api::Device device, unsigned* minor) {
  return on_gpu(device, __func__, [&](const FakeGpu& gpu) {
    if (minor == nullptr) return c_api::kInvalidArgument;
    *minor = gpu.minor;
    return c_api::kSuccess;
  });
}

FAKE_NVML_EXPORT Return nvmlDeviceGetSupportedEventTypes(c_api::Device device,
                                                         unsigned long long* types) {
  return on_gpu(device, __func__, [&](const FakeGpu&) {
    if (types == nullptr) return c_api::kInvalidArgument;
    *types = c_api::kEventSingleBitEccError | c_api::kEventDoubleBitEccError |
             c_api::kEventXidCriticalError;
    return c_api::kSuccess;
  });
}

FAKE_NVML_EXPORT Return nvmlDeviceRegisterEvents(c_api::Device device, unsigned long long types,
                                                 c_api::EventSet set) {
  return on_gpu(device, __func__, [&](const FakeGpu& gpu) {
    if (set == nullptr) return c_api::kInvalidArgument;
    if ((types & c_api::kEventXidCriticalError) != 0) set->uuids.insert(gpu.uuid);
    return c_api::kSuccess;
  });
}

FAKE_NVML_EXPORT Return nvmlEventSetCreate(c_api::EventSet* set) {
  return initialised(__func__, [&] {
    if (set == nullptr) return c_api::kInvalidArgument;
    *set = new c_api::EventSetOpaque();
    return c_api::kSuccess;
  });
}

FAKE_NVML_EXPORT Return nvmlEventSetFree(c_api::EventSet set) {
  std::lock_guard lock(g_mutex);
  if (set == nullptr) return c_api::kInvalidArgument;
  delete set;
  return c_api::kSuccess;
}

FAKE_NVML_EXPORT Return nvmlEventSetWait_v2(c_api::EventSet set, c_api::EventData* data,
                                            unsigned timeout_ms) {
  if (set == nullptr || data == nullptr) return c_api::kInvalidArgument;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  for (;;) {
    {
      std::lock_guard lock(g_mutex);
      if (const Return rc = global_prologue("nvmlEventSetWait_v2"); rc != c_api::kSuccess)
        return rc;
      if (set->queued.empty()) read_xids(*set);
      if (!set->queued.empty()) {
        *data = set->queued.front();
        set->queued.pop_front();
        return c_api::kSuccess;
      }
    }
    if (std::chrono::steady_clock::now() >= deadline) return c_api::kTimeout;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}
