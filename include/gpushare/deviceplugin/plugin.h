#pragma once
// The DevicePlugin gRPC service for aliyun.com/gpu-mem (kubelet is the client), its metrics and
// the pod-resources lookup it uses to check its hand-outs.

#include <prometheus/counter.h>
#include <prometheus/gauge.h>
#include <prometheus/registry.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "deviceplugin_v1beta1.grpc.pb.h"
#include "gpushare/deviceplugin/cluster.h"
#include "gpushare/deviceplugin/devices.h"
#include "gpushare/deviceplugin/matching.h"
#include "gpushare/deviceplugin/response.h"

namespace gpushare::deviceplugin {

// The gpushare_device_plugin_* families. Thread-safe (prometheus-cpp's metrics are atomic).
class Metrics {
 public:
  Metrics();
  std::shared_ptr<prometheus::Registry> registry() const { return registry_; }
  std::string text() const;  // Prometheus text format

  prometheus::Counter& allocations_ok;
  prometheus::Counter& allocations_failed;
  prometheus::Counter& registrations;
  prometheus::Counter& corrections;
  prometheus::Gauge& unhealthy_gpus;
  prometheus::Gauge& devices_advertised;

 private:
  Metrics(std::shared_ptr<prometheus::Registry> registry);
  std::shared_ptr<prometheus::Registry> registry_;
};

// What kubelet's pod-resources API (List) reports for `resource_name`, from the unix socket at
// `socket_path`. nullopt with `error` set when it cannot be asked.
std::optional<std::vector<HeldDevices>> list_pod_resources(const std::string& socket_path,
                                                           std::string_view resource_name,
                                                           std::chrono::milliseconds timeout,
                                                           std::string* error);

struct PluginOptions {
  std::string resource_name = "aliyun.com/gpu-mem";
  std::string unhealthy_namespace = "kube-system";
  ResponseOptions response;
  // kubelet's pod-resources socket, to check which pod got each hand-out; empty: not checked.
  std::string pod_resources_socket;
  std::chrono::milliseconds pod_resources_timeout{3000};
};

// Thread-safety: every RPC may run concurrently with the others and with mark_unhealthy/stop.
// allocate_mutex_ serialises GetPreferredAllocation and Allocate (kubelet admits one pod at a
// time anyway) and guards in_progress_ and handouts_; state_mutex_ guards unhealthy_,
// generation_ and stopping_.
class DevicePluginService final : public v1beta1::DevicePlugin::Service {
 public:
  DevicePluginService(Advertisement ad, Cluster& cluster, PluginOptions options, Metrics& metrics);

  grpc::Status GetDevicePluginOptions(grpc::ServerContext* context, const v1beta1::Empty* request,
                                      v1beta1::DevicePluginOptions* response) override;
  grpc::Status ListAndWatch(grpc::ServerContext* context, const v1beta1::Empty* request,
                            grpc::ServerWriter<v1beta1::ListAndWatchResponse>* writer) override;
  grpc::Status GetPreferredAllocation(grpc::ServerContext* context,
                                      const v1beta1::PreferredAllocationRequest* request,
                                      v1beta1::PreferredAllocationResponse* response) override;
  grpc::Status Allocate(grpc::ServerContext* context, const v1beta1::AllocateRequest* request,
                        v1beta1::AllocateResponse* response) override;
  grpc::Status PreStartContainer(grpc::ServerContext* context,
                                 const v1beta1::PreStartContainerRequest* request,
                                 v1beta1::PreStartContainerResponse* response) override;

  // The options GetDevicePluginOptions answers (also sent in RegisterRequest).
  static v1beta1::DevicePluginOptions options();

  const Advertisement& advertisement() const { return ad_; }
  // Marks these GPUs' devices Unhealthy (never healthy again) and wakes every ListAndWatch.
  void mark_unhealthy(const std::set<std::string>& uuids);
  std::set<std::string> unhealthy() const;
  // Ends every ListAndWatch stream (before the server shuts down) / lets new ones run again.
  void stop_streams();
  void resume_streams();

 private:
  std::vector<PendingPod> read_pods_locked(std::string* error);
  void check_handouts_locked(std::vector<PendingPod>& pods);
  ContainerResponse allocate_one_locked(const std::vector<std::string>& ids);
  void warn_best_candidate(const std::vector<PendingPod>& pods, const std::string& message);

  const Advertisement ad_;
  Cluster& cluster_;
  const PluginOptions options_;
  Metrics& metrics_;

  std::mutex allocate_mutex_;
  std::vector<InProgress> in_progress_;
  std::vector<std::chrono::steady_clock::time_point> in_progress_since_;  // same positions
  std::vector<Handout> handouts_;

  mutable std::mutex state_mutex_;
  std::condition_variable changed_;
  std::set<std::string> unhealthy_;
  std::uint64_t generation_ = 0;
  bool stopping_ = false;
};

// Converts the plain response to the protobuf message.
void to_proto(const ContainerResponse& in, v1beta1::ContainerAllocateResponse* out);

}  // namespace gpushare::deviceplugin
