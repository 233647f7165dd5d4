#pragma once
// The part of NVML's C ABI that gpushare uses, declared from NVIDIA's NVML API reference (not a
// copy of nvml.h): opaque handles, the three structs read, the return codes and event bits
// compared, and the entry points' signatures. The loader (src/nvml) resolves these by name with
// dlsym; the fake library (tests/fakenvml) defines them with C linkage. Layouts must match the
// documented structs field for field: NVML writes into them.

#include <cstdint>

namespace gpushare::nvml::c_api {

// nvmlReturn_t is a C enum: int-sized on every ABI gpushare builds for.
using Return = int;

// Opaque handles (nvmlDevice_t, nvmlEventSet_t): pointers NVML hands out and takes back.
struct DeviceOpaque;
struct EventSetOpaque;
using Device = DeviceOpaque*;
using EventSet = EventSetOpaque*;

// nvmlMemory_t (v1): bytes.
struct Memory {
  unsigned long long total;
  unsigned long long free;
  unsigned long long used;
};

// nvmlPciInfo_t as nvmlDeviceGetPciInfo_v3 fills it.
struct PciInfo {
  char bus_id_legacy[16];  // "%04X:%02X:%02X.0"
  unsigned int domain;
  unsigned int bus;
  unsigned int device;
  unsigned int pci_device_id;
  unsigned int pci_sub_system_id;
  char bus_id[32];  // "%08X:%02X:%02X.0"
};

// nvmlEventData_t. device is null for an event not attributed to one GPU.
struct EventData {
  Device device;
  unsigned long long event_type;
  unsigned long long event_data;  // the XID for XID events (999: an XID NVML does not know)
  unsigned int gpu_instance_id;
  unsigned int compute_instance_id;
};

// The documented layouts on LP64 (x86-64, arm64): a mismatch here would let NVML write past them.
static_assert(sizeof(Memory) == 24);
static_assert(sizeof(PciInfo) == 68);
static_assert(sizeof(EventData) == 32);

// Return codes compared by name (NVML_SUCCESS, NVML_ERROR_*).
inline constexpr Return kSuccess = 0;
inline constexpr Return kUninitialized = 1;
inline constexpr Return kInvalidArgument = 2;
inline constexpr Return kNotSupported = 3;
inline constexpr Return kNoPermission = 4;
inline constexpr Return kNotFound = 6;
inline constexpr Return kInsufficientSize = 7;
inline constexpr Return kDriverNotLoaded = 9;
inline constexpr Return kTimeout = 10;
inline constexpr Return kGpuIsLost = 15;
inline constexpr Return kUnknown = 999;

// Event bits (nvmlEventType*).
inline constexpr unsigned long long kEventSingleBitEccError = 0x1;
inline constexpr unsigned long long kEventDoubleBitEccError = 0x2;
inline constexpr unsigned long long kEventXidCriticalError = 0x8;

// nvmlDeviceGetMigMode's current mode.
inline constexpr unsigned int kMigEnable = 1;

// Buffer sizes NVML documents as large enough (the v2 sizes).
inline constexpr unsigned int kUuidBufferSize = 96;
inline constexpr unsigned int kNameBufferSize = 96;

// Entry points, as function pointer types for dlsym.
using InitFn = Return (*)();
using ShutdownFn = Return (*)();
using ErrorStringFn = const char* (*)(Return);
using DeviceGetCountFn = Return (*)(unsigned int*);
using DeviceGetHandleByIndexFn = Return (*)(unsigned int, Device*);
using DeviceGetStringFn = Return (*)(Device, char*, unsigned int);  // GetUUID, GetName
using DeviceGetMemoryInfoFn = Return (*)(Device, Memory*);
using DeviceGetMigModeFn = Return (*)(Device, unsigned int*, unsigned int*);
using DeviceGetPciInfoFn = Return (*)(Device, PciInfo*);
using DeviceGetMinorNumberFn = Return (*)(Device, unsigned int*);
using DeviceGetSupportedEventTypesFn = Return (*)(Device, unsigned long long*);
using DeviceRegisterEventsFn = Return (*)(Device, unsigned long long, EventSet);
using EventSetCreateFn = Return (*)(EventSet*);
using EventSetWaitFn = Return (*)(EventSet, EventData*, unsigned int);
using EventSetFreeFn = Return (*)(EventSet);

}  // namespace gpushare::nvml::c_api
