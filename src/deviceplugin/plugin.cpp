#include "gpushare/deviceplugin/plugin.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <grpcpp/grpcpp.h>
#include <prometheus/text_serializer.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <sstream>

#include "gpushare/kube/annotations.h"
#include "podresources_v1.grpc.pb.h"

namespace gpushare::deviceplugin {
namespace {

constexpr std::string_view kFailedReason = "GpushareAllocateFailed";
// A pod whose later GPU containers do not come within this long stops being in progress
// (kubelet allocates all of a pod's containers in one admission).
constexpr auto kInProgressLifetime = std::chrono::minutes(2);

// An error that fails the Allocate call (kubelet then fails the pod's admission).
struct CallError {
  grpc::StatusCode code;
  std::string message;
};

}  // namespace

Metrics::Metrics() : Metrics(std::make_shared<prometheus::Registry>()) {}

Metrics::Metrics(std::shared_ptr<prometheus::Registry> registry)
    : allocations_ok(prometheus::BuildCounter()
                         .Name("gpushare_device_plugin_allocations_total")
                         .Help("Allocate calls answered, by result")
                         .Register(*registry)
                         .Add({{"result", "ok"}})),
      allocations_failed(prometheus::BuildCounter()
                             .Name("gpushare_device_plugin_allocations_total")
                             .Help("Allocate calls answered, by result")
                             .Register(*registry)
                             .Add({{"result", "failed"}})),
      registrations(prometheus::BuildCounter()
                        .Name("gpushare_device_plugin_registrations_total")
                        .Help("Successful registrations with kubelet")
                        .Register(*registry)
                        .Add({})),
      corrections(prometheus::BuildCounter()
                      .Name("gpushare_device_plugin_corrections_total")
                      .Help("Hand-outs that kubelet's pod-resources API showed in another pod "
                            "than the one marked, whose annotations were corrected")
                      .Register(*registry)
                      .Add({})),
      unhealthy_gpus(prometheus::BuildGauge()
                         .Name("gpushare_device_plugin_unhealthy_gpus")
                         .Help("GPUs whose devices are advertised Unhealthy")
                         .Register(*registry)
                         .Add({})),
      devices_advertised(prometheus::BuildGauge()
                             .Name("gpushare_device_plugin_devices_advertised")
                             .Help("aliyun.com/gpu-mem devices advertised to kubelet")
                             .Register(*registry)
                             .Add({})),
      registry_(std::move(registry)) {}

std::string Metrics::text() const {
  std::ostringstream out;
  prometheus::TextSerializer().Serialize(out, registry_->Collect());
  return out.str();
}

std::optional<std::vector<HeldDevices>> list_pod_resources(const std::string& socket_path,
                                                           std::string_view resource_name,
                                                           std::chrono::milliseconds timeout,
                                                           std::string* error) {
  auto channel = grpc::CreateChannel("unix://" + socket_path, grpc::InsecureChannelCredentials());
  auto stub = v1::PodResourcesLister::NewStub(channel);
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + timeout);
  v1::ListPodResourcesRequest request;
  v1::ListPodResourcesResponse response;
  const grpc::Status status = stub->List(&context, request, &response);
  if (!status.ok()) {
    if (error) {
      *error = fmt::format("pod-resources List on {}: {}", socket_path, status.error_message());
    }
    return std::nullopt;
  }
  std::vector<HeldDevices> out;
  for (const auto& pod : response.pod_resources()) {
    for (const auto& container : pod.containers()) {
      for (const auto& devices : container.devices()) {
        if (devices.resource_name() != resource_name) continue;
        out.push_back(HeldDevices{pod.namespace_() + "/" + pod.name(),
                                  container.name(),
                                  {devices.device_ids().begin(), devices.device_ids().end()}});
      }
    }
  }
  return out;
}

void to_proto(const ContainerResponse& in, v1beta1::ContainerAllocateResponse* out) {
  for (const auto& [key, value] : in.envs) (*out->mutable_envs())[key] = value;
  for (const auto& [key, value] : in.annotations) (*out->mutable_annotations())[key] = value;
  for (const auto& spec : in.devices) {
    auto* device = out->add_devices();
    device->set_container_path(spec.container_path);
    device->set_host_path(spec.host_path);
    device->set_permissions(spec.permissions);
  }
  for (const auto& name : in.cdi_devices) out->add_cdi_devices()->set_name(name);
}

DevicePluginService::DevicePluginService(Advertisement ad, Cluster& cluster, PluginOptions options,
                                         Metrics& metrics)
    : ad_(std::move(ad)), cluster_(cluster), options_(std::move(options)), metrics_(metrics) {
  metrics_.devices_advertised.Set(static_cast<double>(ad_.device_count()));
}

v1beta1::DevicePluginOptions DevicePluginService::options() {
  v1beta1::DevicePluginOptions out;
  out.set_pre_start_required(false);
  out.set_get_preferred_allocation_available(true);
  return out;
}

grpc::Status DevicePluginService::GetDevicePluginOptions(grpc::ServerContext*,
                                                         const v1beta1::Empty*,
                                                         v1beta1::DevicePluginOptions* response) {
  *response = options();
  return grpc::Status::OK;
}

grpc::Status DevicePluginService::ListAndWatch(
    grpc::ServerContext* context, const v1beta1::Empty*,
    grpc::ServerWriter<v1beta1::ListAndWatchResponse>* writer) {
  std::uint64_t sent = 0;
  bool first = true;
  while (true) {
    std::set<std::string> unhealthy;
    {
      std::unique_lock lock(state_mutex_);
      changed_.wait_for(lock, std::chrono::seconds(1),
                        [&] { return stopping_ || first || generation_ != sent; });
      if (stopping_) return grpc::Status::OK;
      if (context->IsCancelled()) return grpc::Status::CANCELLED;
      if (!first && generation_ == sent) continue;
      sent = generation_;
      unhealthy = unhealthy_;
    }
    first = false;
    v1beta1::ListAndWatchResponse message;
    for (const auto& state : device_states(ad_, unhealthy)) {
      auto* device = message.add_devices();
      device->set_id(state.id);
      device->set_health(state.healthy ? "Healthy" : "Unhealthy");
    }
    spdlog::info("ListAndWatch: sending {} devices ({} GPU(s) unhealthy)", message.devices_size(),
                 unhealthy.size());
    if (!writer->Write(message)) return grpc::Status::CANCELLED;
  }
}

void DevicePluginService::mark_unhealthy(const std::set<std::string>& uuids) {
  {
    std::lock_guard lock(state_mutex_);
    const std::size_t before = unhealthy_.size();
    for (const auto& uuid : uuids) {
      if (ad_.by_uuid(uuid)) unhealthy_.insert(uuid);
    }
    if (unhealthy_.size() == before) return;
    ++generation_;
    metrics_.unhealthy_gpus.Set(static_cast<double>(unhealthy_.size()));
  }
  changed_.notify_all();
}

std::set<std::string> DevicePluginService::unhealthy() const {
  std::lock_guard lock(state_mutex_);
  return unhealthy_;
}

void DevicePluginService::stop_streams() {
  {
    std::lock_guard lock(state_mutex_);
    stopping_ = true;
  }
  changed_.notify_all();
}

void DevicePluginService::resume_streams() {
  std::lock_guard lock(state_mutex_);
  stopping_ = false;
}

std::vector<PendingPod> DevicePluginService::read_pods_locked(std::string* error) {
  auto pods = cluster_.pods_on_node();
  if (!pods.ok()) {
    *error = pods.error().describe();
    return {};
  }
  std::vector<PendingPod> out;
  for (const auto& object : pods.value()) {
    std::string problem;
    if (auto pod = read_pod(object, options_.resource_name, &problem)) {
      out.push_back(std::move(*pod));
    }
    if (!problem.empty()) spdlog::warn("{}", problem);
  }
  return out;
}

void DevicePluginService::check_handouts_locked(std::vector<PendingPod>& pods) {
  const auto now = std::chrono::steady_clock::now();
  for (std::size_t i = in_progress_.size(); i-- > 0;) {
    const bool done = in_progress_[i].next >= in_progress_[i].pod.requests.size();
    if (done || now - in_progress_since_[i] > kInProgressLifetime) {
      in_progress_.erase(in_progress_.begin() + static_cast<std::ptrdiff_t>(i));
      in_progress_since_.erase(in_progress_since_.begin() + static_cast<std::ptrdiff_t>(i));
    }
  }
  if (options_.pod_resources_socket.empty() || handouts_.empty()) return;
  std::string error;
  const auto held = list_pod_resources(options_.pod_resources_socket, options_.resource_name,
                                       options_.pod_resources_timeout, &error);
  if (!held) {
    spdlog::warn("cannot check earlier hand-outs against kubelet: {}", error);
    return;
  }
  std::vector<Handout> unknown;
  const auto corrections = reconcile(handouts_, *held, pods, &unknown);
  handouts_ = std::move(unknown);
  if (handouts_.size() > 64) handouts_.erase(handouts_.begin(), handouts_.end() - 64);
  if (corrections.empty()) return;
  for (const auto& fix : corrections) {
    const PendingPod* truth = nullptr;
    const PendingPod* released = nullptr;
    for (const auto& pod : pods) {
      if (pod.key() == fix.pod) truth = &pod;
      if (pod.key() == fix.released) released = &pod;
    }
    spdlog::warn(
        "kubelet admitted pod {} with the devices handed out for pod {} (GPU {}): pod {} now has "
        "GPU {} and pod {} GPU {} (ALIYUN_COM_GPU_MEM_IDX corrected; equal requests, so no GPU "
        "holds more than the extender planned)",
        fix.pod, fix.released, fix.gpu, fix.pod, fix.gpu, fix.released, fix.released_gpu);
    metrics_.corrections.Increment();
    if (truth) {
      auto patched =
          cluster_.patch_pod(truth->namespace_name, truth->name,
                             {{std::string(kube::kAnnotationGpuIndex), std::to_string(fix.gpu)},
                              {std::string(kube::kAnnotationAssigned), "true"}},
                             std::nullopt);
      if (!patched.ok()) {
        spdlog::error("correcting pod {}: {}", fix.pod, patched.error().describe());
      }
    }
    if (released) {
      auto patched = cluster_.patch_pod(
          released->namespace_name, released->name,
          {{std::string(kube::kAnnotationGpuIndex), std::to_string(fix.released_gpu)},
           {std::string(kube::kAnnotationAssigned), "false"}},
          std::nullopt);
      if (!patched.ok()) {
        spdlog::error("correcting pod {}: {}", fix.released, patched.error().describe());
      }
    }
    for (auto& entry : in_progress_) {
      if (entry.pod.key() == fix.released && truth) entry.pod = *truth;
    }
  }
  std::string error2;
  auto fresh = read_pods_locked(&error2);
  if (error2.empty()) pods = std::move(fresh);
}

void DevicePluginService::warn_best_candidate(const std::vector<PendingPod>& pods,
                                              const std::string& message) {
  const PendingPod* best = nullptr;
  for (const auto& pod : pods) {
    if (!waiting(pod)) continue;
    if (!best || pod.assume_time_ns < best->assume_time_ns) best = &pod;
  }
  if (!best) return;
  auto posted =
      cluster_.warn_pod(best->namespace_name, best->name, best->uid, kFailedReason, message);
  if (!posted.ok()) {
    spdlog::warn("cannot post an Event on pod {}: {}", best->key(), posted.error().describe());
  }
}

grpc::Status DevicePluginService::GetPreferredAllocation(
    grpc::ServerContext*, const v1beta1::PreferredAllocationRequest* request,
    v1beta1::PreferredAllocationResponse* response) {
  std::lock_guard lock(allocate_mutex_);
  std::string error;
  std::vector<PendingPod> pods = read_pods_locked(&error);
  if (error.empty()) {
    check_handouts_locked(pods);
  } else {
    spdlog::warn("GetPreferredAllocation: cannot read pods of node {}: {}", cluster_.node_name(),
                 error);
  }
  for (const auto& container : request->container_requests()) {
    const std::vector<std::string> available(container.available_deviceids().begin(),
                                             container.available_deviceids().end());
    const std::vector<std::string> must(container.must_include_deviceids().begin(),
                                        container.must_include_deviceids().end());
    const std::int64_t size = container.allocation_size();
    std::optional<int> gpu;
    if (auto match = match_call(pods, in_progress_, size, std::nullopt)) gpu = match->gpu;
    const auto ids = preferred_ids(ad_, available, must, size, gpu);
    auto* out = response->add_container_responses();
    for (const auto& id : ids) out->add_deviceids(id);
    spdlog::info("GetPreferredAllocation: {} unit(s), preferring GPU {}", size,
                 gpu ? std::to_string(*gpu) : std::string("(no waiting pod of that size)"));
  }
  return grpc::Status::OK;
}

ContainerResponse DevicePluginService::allocate_one_locked(const std::vector<std::string>& ids) {
  int device_gpu = 0;
  try {
    device_gpu = gpu_of_devices(ad_, ids);
  } catch (const std::invalid_argument& e) {
    throw CallError{grpc::StatusCode::INVALID_ARGUMENT, e.what()};
  }
  const auto size = static_cast<std::int64_t>(ids.size());
  for (int attempt = 0; attempt < 4; ++attempt) {
    std::string error;
    std::vector<PendingPod> pods = read_pods_locked(&error);
    if (!error.empty()) {
      throw CallError{grpc::StatusCode::UNAVAILABLE,
                      fmt::format("cannot read the pods of node {} from the API server ({}): no "
                                  "GPU handed out for {} unit(s) of {}",
                                  cluster_.node_name(), error, size, options_.resource_name)};
    }
    check_handouts_locked(pods);
    auto match = match_call(pods, in_progress_, size, device_gpu);
    if (!match) {
      const std::string message = fmt::format(
          "gpushare-device-plugin: kubelet asked for {} unit(s) of {} on node {} and no pod "
          "bound there by the gpushare extender waits for that amount ({}=false, {} set); no GPU "
          "handed out",
          size, options_.resource_name, cluster_.node_name(), kube::kAnnotationAssigned,
          kube::kAnnotationAssumeTime);
      warn_best_candidate(pods, message);
      throw CallError{grpc::StatusCode::FAILED_PRECONDITION, message};
    }
    const AdvertisedGpu* gpu = ad_.by_index(match->gpu);
    if (!gpu) {
      const std::string message = fmt::format(
          "pod {} has {}={} but node {} advertises {} GPU(s): no GPU handed out", match->pod.key(),
          kube::kAnnotationGpuIndex, match->gpu, cluster_.node_name(), ad_.gpus.size());
      auto posted = cluster_.warn_pod(match->pod.namespace_name, match->pod.name, match->pod.uid,
                                      kFailedReason, message);
      (void)posted;
      throw CallError{grpc::StatusCode::FAILED_PRECONDITION, message};
    }
    if (!match->continuing) {
      auto patched = cluster_.patch_pod(match->pod.namespace_name, match->pod.name,
                                        {{std::string(kube::kAnnotationAssigned), "true"}},
                                        match->pod.resource_version);
      if (!patched.ok()) {
        if (patched.error().is_conflict()) {
          spdlog::info("pod {} changed while being assigned; reading it again", match->pod.key());
          continue;
        }
        throw CallError{
            grpc::StatusCode::UNAVAILABLE,
            fmt::format("cannot mark pod {} {}=true ({}): no GPU handed out", match->pod.key(),
                        kube::kAnnotationAssigned, patched.error().describe())};
      }
      if (match->pod.requests.size() > 1) {
        in_progress_.push_back(InProgress{match->pod, match->gpu, 1});
        in_progress_since_.push_back(std::chrono::steady_clock::now());
      }
    } else {
      for (auto& entry : in_progress_) {
        if (entry.pod.key() == match->pod.key()) ++entry.next;
      }
    }
    if (!match->ambiguous_with.empty()) {
      handouts_.push_back(Handout{match->pod.key(), match->gpu, ids});
    }
    if (unhealthy().contains(gpu->uuid)) {
      spdlog::warn(
          "pod {}: its GPU {} ({}) is marked unhealthy; handing it out as the extender "
          "chose it",
          match->pod.key(), gpu->index, gpu->uuid);
    }
    const std::string container = match->container < match->pod.containers.size()
                                      ? match->pod.containers[match->container]
                                      : std::string();
    spdlog::info(
        "Allocate: pod {} container {} gets {} of {} unit(s) on GPU {} ({}){}", match->pod.key(),
        container, size, match->pod.total, gpu->index, gpu->uuid,
        match->ambiguous_with.empty()
            ? std::string()
            : fmt::format(" (kubelet may be admitting {} instead: same size; checked against "
                          "pod-resources at the next call)",
                          fmt::join(match->ambiguous_with, ", ")));
    return build_response(ad_, *gpu, size, match->pod.total, options_.response);
  }
  throw CallError{grpc::StatusCode::ABORTED,
                  fmt::format("the pods of node {} kept changing while one was being marked "
                              "assigned: no GPU handed out",
                              cluster_.node_name())};
}

grpc::Status DevicePluginService::Allocate(grpc::ServerContext*,
                                           const v1beta1::AllocateRequest* request,
                                           v1beta1::AllocateResponse* response) {
  std::lock_guard lock(allocate_mutex_);
  try {
    if (request->container_requests_size() == 0) {
      throw CallError{grpc::StatusCode::INVALID_ARGUMENT, "Allocate without container requests"};
    }
    for (const auto& container : request->container_requests()) {
      const std::vector<std::string> ids(container.devices_ids().begin(),
                                         container.devices_ids().end());
      to_proto(allocate_one_locked(ids), response->add_container_responses());
    }
  } catch (const CallError& error) {
    metrics_.allocations_failed.Increment();
    spdlog::error("Allocate failed: {}", error.message);
    response->Clear();
    return grpc::Status(error.code, error.message);
  }
  metrics_.allocations_ok.Increment();
  return grpc::Status::OK;
}

grpc::Status DevicePluginService::PreStartContainer(grpc::ServerContext*,
                                                    const v1beta1::PreStartContainerRequest*,
                                                    v1beta1::PreStartContainerResponse*) {
  return grpc::Status::OK;
}

}  // namespace gpushare::deviceplugin
