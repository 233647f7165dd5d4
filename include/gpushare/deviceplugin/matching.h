#pragma once
// Which pod a kubelet call is for. kubelet names device IDs, never the pod: the plugin finds the
// pod among those the extender bound to this node (annotations ALIYUN_COM_GPU_MEM_*), steers
// kubelet's choice of device IDs to the GPU the extender chose (GetPreferredAllocation), and
// hands out the matched pod's GPU. Pure: no I/O, no clock, no locks (the caller serialises).

#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "gpushare/deviceplugin/devices.h"

namespace gpushare::deviceplugin {

// A pod bound to this node by the extender, as the plugin sees it.
struct PendingPod {
  std::string namespace_name;
  std::string name;
  std::string uid;
  std::string resource_version;
  std::string phase;
  std::optional<int> gpu_index;         // ALIYUN_COM_GPU_MEM_IDX
  std::int64_t assume_time_ns = 0;      // ALIYUN_COM_GPU_MEM_ASSUME_TIME
  bool assigned = false;                // ALIYUN_COM_GPU_MEM_ASSIGNED == "true"
  std::vector<std::string> containers;  // regular containers with a gpu-mem limit, in order
  std::vector<std::int64_t> requests;   // their limits, same order
  std::int64_t total = 0;               // sum of requests

  std::string key() const { return namespace_name + "/" + name; }
};

// Reads a pod object. nullopt (with `problem` set when the pod is malformed, so it can be
// logged) for pods that hold no gpu-mem: no gpu-mem limit, finished, terminating.
// Annotations are read as written; whether the pod still waits is `assigned`/`assume_time_ns`.
std::optional<PendingPod> read_pod(const nlohmann::json& pod, std::string_view resource_name,
                                   std::string* problem);

// Pods whose first GPU container still waits for its Allocate: Pending, bound by the extender
// (assume time set, index set), ASSIGNED=false.
bool waiting(const PendingPod& pod);

// A pod some of whose GPU containers got their Allocate (kubelet allocates one container per
// call, all of a pod's containers before the next pod's).
struct InProgress {
  PendingPod pod;
  int gpu = 0;           // the GPU handed out to its first container
  std::size_t next = 1;  // position in pod.requests of the container still to allocate
};

struct Match {
  PendingPod pod;
  int gpu = 0;                // the pod's GPU (extender index): what the response names
  std::size_t container = 0;  // position in pod.requests
  bool continuing = false;    // a later container of an InProgress pod
  // Other waiting pods the call could equally have been for (same first-container size, another
  // GPU): kubelet does not say which one it admits, so the choice may be corrected afterwards
  // from the pod-resources API (reconcile()).
  std::vector<std::string> ambiguous_with;
};

// The pod a call of `size` units is for:
//  1. a pod in progress whose next container asks for `size` (the most recent one first);
//  2. else the waiting pod whose first GPU container asks for `size`, preferring one on
//     `device_gpu` (the GPU of the device IDs kubelet chose), oldest assume time first (ties by
//     namespace/name).
// nullopt when no pod fits.
std::optional<Match> match_call(std::span<const PendingPod> pods,
                                std::span<const InProgress> in_progress, std::int64_t size,
                                std::optional<int> device_gpu);

// The GPU (extender index) all `ids` belong to. Throws std::invalid_argument naming the ID for an
// unknown ID or IDs on several GPUs.
int gpu_of_devices(const Advertisement& ad, std::span<const std::string> ids);

// GetPreferredAllocation's answer for one container: `must_include` first, then available IDs on
// `gpu` (when given) in unit order, then on the GPU with the most available IDs, up to `size`.
std::vector<std::string> preferred_ids(const Advertisement& ad,
                                       std::span<const std::string> available,
                                       std::span<const std::string> must_include, std::int64_t size,
                                       std::optional<int> gpu);

// What kubelet's pod-resources API says a container holds.
struct HeldDevices {
  std::string pod_key;  // namespace/name
  std::string container;
  std::vector<std::string> device_ids;
};

// One hand-out the plugin made, to check against pod-resources.
struct Handout {
  std::string marked_pod;  // the pod the plugin marked ASSIGNED=true for it
  int gpu = 0;
  std::vector<std::string> device_ids;
};

// A correction: `pod` (which really got the hand-out on `gpu`) must carry IDX=gpu,
// ASSIGNED=true; `released` (marked in its place) must carry IDX=`released_gpu`,
// ASSIGNED=false, so that it matches its own call later.
struct Correction {
  std::string pod;
  int gpu = 0;
  std::string released;
  int released_gpu = 0;
};

// For each hand-out whose device IDs pod-resources reports in a pod other than the one marked:
// the correction that makes the annotations tell the truth. `pods` supplies the true pod's
// current index. Hand-outs not (yet) reported are left out (nullopt in `still_unknown`).
std::vector<Correction> reconcile(std::span<const Handout> handouts,
                                  std::span<const HeldDevices> held,
                                  std::span<const PendingPod> pods,
                                  std::vector<Handout>* still_unknown);

}  // namespace gpushare::deviceplugin
