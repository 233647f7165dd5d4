#pragma once
// A fake kubelet for the device plugin's tests, over real gRPC on unix sockets:
//  - serves Registration on <dir>/kubelet.sock; on Register it checks the version and resource
//    name, dials <dir>/<endpoint>, calls GetDevicePluginOptions before answering (as kubelet
//    does), then reads ListAndWatch on a thread;
//  - admits containers as kubelet's device manager does: GetPreferredAllocation over the healthy,
//    unused devices, then the preferred IDs (filled up from the rest in arbitrary order), then
//    Allocate with exactly one container request; on success the devices are in use and
//    reported by its pod-resources server (<dir>/pod-resources.sock, List);
//  - restarts: removes kubelet.sock and serves it again (the plugin must re-register);
//  - can leave Register unanswered (the handler waits until the caller gives up).
// All members are thread-safe.

#include <chrono>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "deviceplugin_v1beta1.grpc.pb.h"
#include "podresources_v1.grpc.pb.h"

namespace gpushare::testing {

class FakeKubelet {
 public:
  struct Options {
    bool answer_register = true;
    std::string resource_name = "aliyun.com/gpu-mem";
  };

  FakeKubelet(std::filesystem::path dir, Options options);
  explicit FakeKubelet(std::filesystem::path dir) : FakeKubelet(std::move(dir), Options{}) {}
  ~FakeKubelet();
  FakeKubelet(const FakeKubelet&) = delete;
  FakeKubelet& operator=(const FakeKubelet&) = delete;

  std::filesystem::path dir() const { return dir_; }
  std::string pod_resources_socket() const { return (dir_ / "pod-resources.sock").string(); }

  // Successful registrations so far; Register calls received (answered or not).
  int registrations() const;
  int register_calls() const;
  bool wait_for_registrations(int count, std::chrono::milliseconds timeout) const;

  // The latest ListAndWatch message (ID -> health), and how many messages arrived.
  std::map<std::string, std::string> devices() const;
  int list_and_watch_messages() const;
  // Waits until the latest message has `healthy` healthy and `unhealthy` unhealthy devices.
  bool wait_for_devices(std::size_t healthy, std::size_t unhealthy,
                        std::chrono::milliseconds timeout) const;

  // Admits one container of `size` devices for pod `pod_key` ("ns/name"). Returns the RPC status;
  // `response` gets the container's answer; `ids` the device IDs kubelet chose.
  grpc::Status admit(const std::string& pod_key, const std::string& container, int size,
                     v1beta1::ContainerAllocateResponse* response,
                     std::vector<std::string>* ids = nullptr);

  // kubelet restarting: kubelet.sock removed, then served again (ListAndWatch streams end).
  void restart();
  // Stop/start answering Register from now on.
  void set_answer_register(bool answer);

 private:
  struct Impl;
  std::filesystem::path dir_;
  std::unique_ptr<Impl> impl_;
};

}  // namespace gpushare::testing
