#include "fakekubelet/fake_kubelet.h"

#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <condition_variable>
#include <thread>

namespace gpushare::testing {

struct FakeKubelet::Impl final : public v1beta1::Registration::Service,
                                 public v1::PodResourcesLister::Service {
  std::filesystem::path dir;
  Options options;

  mutable std::mutex mutex;  // guards everything below
  mutable std::condition_variable changed;
  bool answer_register = true;
  bool shutting_down = false;
  int registrations = 0;
  int register_calls = 0;
  std::map<std::string, std::string> devices;
  int messages = 0;
  bool preferred_available = false;
  std::shared_ptr<v1beta1::DevicePlugin::Stub> plugin;
  std::vector<std::shared_ptr<grpc::ClientContext>> streams;
  std::vector<std::thread> readers;
  std::set<std::string> in_use;
  std::map<std::string, std::map<std::string, std::vector<std::string>>> held;  // pod -> container

  std::mutex admit_mutex;  // one admission at a time, as kubelet does
  std::unique_ptr<grpc::Server> server;

  void serve() {
    std::error_code ignored;
    std::filesystem::remove(dir / "kubelet.sock", ignored);
    grpc::ServerBuilder builder;
    builder.AddListeningPort("unix://" + (dir / "kubelet.sock").string(),
                             grpc::InsecureServerCredentials());
    builder.AddListeningPort("unix://" + (dir / "pod-resources.sock").string(),
                             grpc::InsecureServerCredentials());
    builder.RegisterService(static_cast<v1beta1::Registration::Service*>(this));
    builder.RegisterService(static_cast<v1::PodResourcesLister::Service*>(this));
    server = builder.BuildAndStart();
    if (!server) throw std::runtime_error("fake kubelet: cannot serve in " + dir.string());
  }

  void end_streams() {
    std::vector<std::thread> old;
    {
      std::lock_guard lock(mutex);
      for (auto& context : streams) context->TryCancel();
      streams.clear();
      old.swap(readers);
      plugin.reset();
    }
    for (auto& thread : old) thread.join();
  }

  void shut_down() {
    {
      std::lock_guard lock(mutex);
      shutting_down = true;
    }
    changed.notify_all();
    if (server) server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(1));
    end_streams();
    server.reset();
    std::error_code ignored;
    std::filesystem::remove(dir / "kubelet.sock", ignored);
    std::filesystem::remove(dir / "pod-resources.sock", ignored);
  }

  grpc::Status Register(grpc::ServerContext* context, const v1beta1::RegisterRequest* request,
                        v1beta1::Empty*) override {
    {
      std::unique_lock lock(mutex);
      ++register_calls;
      changed.notify_all();
      while (!answer_register && !shutting_down && !context->IsCancelled()) {
        changed.wait_for(lock, std::chrono::milliseconds(50));
      }
      if (!answer_register) return grpc::Status(grpc::StatusCode::UNAVAILABLE, "not answering");
    }
    if (request->version() != "v1beta1") {
      return grpc::Status(
          grpc::StatusCode::INVALID_ARGUMENT,
          "requested API version \"" + request->version() + "\" is not supported by kubelet");
    }
    if (request->resource_name() != options.resource_name) {
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                          "the ResourceName \"" + request->resource_name() + "\" is unexpected");
    }
    auto channel = grpc::CreateChannel("unix://" + (dir / request->endpoint()).string(),
                                       grpc::InsecureChannelCredentials());
    auto stub =
        std::shared_ptr<v1beta1::DevicePlugin::Stub>(v1beta1::DevicePlugin::NewStub(channel));
    v1beta1::DevicePluginOptions plugin_options;
    {
      grpc::ClientContext call;
      call.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
      call.set_wait_for_ready(true);
      v1beta1::Empty empty;
      const grpc::Status status = stub->GetDevicePluginOptions(&call, empty, &plugin_options);
      if (!status.ok()) {
        return grpc::Status(grpc::StatusCode::UNKNOWN,
                            "failed to get device plugin options: " + status.error_message());
      }
    }
    auto stream_context = std::make_shared<grpc::ClientContext>();
    std::lock_guard lock(mutex);
    for (auto& context_ : streams) context_->TryCancel();  // a new registration replaces the old
    plugin = stub;
    preferred_available = plugin_options.get_preferred_allocation_available();
    streams.push_back(stream_context);
    readers.emplace_back([this, stub, stream_context] {
      v1beta1::Empty empty;
      auto reader = stub->ListAndWatch(stream_context.get(), empty);
      v1beta1::ListAndWatchResponse message;
      while (reader->Read(&message)) {
        std::lock_guard guard(mutex);
        devices.clear();
        for (const auto& device : message.devices()) devices[device.id()] = device.health();
        ++messages;
        changed.notify_all();
      }
      (void)reader->Finish();
    });
    ++registrations;
    changed.notify_all();
    return grpc::Status::OK;
  }

  grpc::Status List(grpc::ServerContext*, const v1::ListPodResourcesRequest*,
                    v1::ListPodResourcesResponse* response) override {
    std::lock_guard lock(mutex);
    for (const auto& [pod_key, containers] : held) {
      auto* pod = response->add_pod_resources();
      const auto slash = pod_key.find('/');
      pod->set_namespace_(pod_key.substr(0, slash));
      pod->set_name(pod_key.substr(slash + 1));
      for (const auto& [name, ids] : containers) {
        auto* container = pod->add_containers();
        container->set_name(name);
        auto* devices_ = container->add_devices();
        devices_->set_resource_name(options.resource_name);
        for (const auto& id : ids) devices_->add_device_ids(id);
      }
    }
    return grpc::Status::OK;
  }
};

FakeKubelet::FakeKubelet(std::filesystem::path dir, Options options)
    : dir_(std::move(dir)), impl_(std::make_unique<Impl>()) {
  std::filesystem::create_directories(dir_);
  impl_->dir = dir_;
  impl_->options = options;
  impl_->answer_register = options.answer_register;
  impl_->serve();
}

FakeKubelet::~FakeKubelet() {
  impl_->shut_down();
}

int FakeKubelet::registrations() const {
  std::lock_guard lock(impl_->mutex);
  return impl_->registrations;
}

int FakeKubelet::register_calls() const {
  std::lock_guard lock(impl_->mutex);
  return impl_->register_calls;
}

bool FakeKubelet::wait_for_registrations(int count, std::chrono::milliseconds timeout) const {
  std::unique_lock lock(impl_->mutex);
  return impl_->changed.wait_for(lock, timeout, [&] { return impl_->registrations >= count; });
}

std::map<std::string, std::string> FakeKubelet::devices() const {
  std::lock_guard lock(impl_->mutex);
  return impl_->devices;
}

int FakeKubelet::list_and_watch_messages() const {
  std::lock_guard lock(impl_->mutex);
  return impl_->messages;
}

bool FakeKubelet::wait_for_devices(std::size_t healthy, std::size_t unhealthy,
                                   std::chrono::milliseconds timeout) const {
  std::unique_lock lock(impl_->mutex);
  return impl_->changed.wait_for(lock, timeout, [&] {
    std::size_t h = 0;
    std::size_t u = 0;
    for (const auto& [id, health] : impl_->devices) (health == "Healthy" ? h : u) += 1;
    return h == healthy && u == unhealthy;
  });
}

grpc::Status FakeKubelet::admit(const std::string& pod_key, const std::string& container, int size,
                                v1beta1::ContainerAllocateResponse* response,
                                std::vector<std::string>* ids) {
  std::lock_guard admission(impl_->admit_mutex);
  std::shared_ptr<v1beta1::DevicePlugin::Stub> plugin;
  std::vector<std::string> available;
  bool preferred = false;
  {
    std::lock_guard lock(impl_->mutex);
    plugin = impl_->plugin;
    preferred = impl_->preferred_available;
    for (const auto& [id, health] : impl_->devices) {
      if (health == "Healthy" && !impl_->in_use.contains(id)) available.push_back(id);
    }
  }
  if (!plugin) return grpc::Status(grpc::StatusCode::UNAVAILABLE, "no plugin registered");
  if (available.size() < static_cast<std::size_t>(size)) {
    return grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED, "not enough healthy devices");
  }
  std::vector<std::string> chosen;
  if (preferred) {
    v1beta1::PreferredAllocationRequest request;
    auto* one = request.add_container_requests();
    for (const auto& id : available) one->add_available_deviceids(id);
    one->set_allocation_size(size);
    v1beta1::PreferredAllocationResponse answer;
    grpc::ClientContext context;
    const grpc::Status status = plugin->GetPreferredAllocation(&context, request, &answer);
    if (status.ok() && answer.container_responses_size() > 0) {
      for (const auto& id : answer.container_responses(0).deviceids()) {
        if (std::find(available.begin(), available.end(), id) != available.end() &&
            std::find(chosen.begin(), chosen.end(), id) == chosen.end() &&
            chosen.size() < static_cast<std::size_t>(size)) {
          chosen.push_back(id);
        }
      }
    }
  }
  // kubelet fills up in map order (random); from the end here, so that an unsteered choice
  // lands on the last GPU.
  for (auto it = available.rbegin();
       it != available.rend() && chosen.size() < static_cast<std::size_t>(size); ++it) {
    if (std::find(chosen.begin(), chosen.end(), *it) == chosen.end()) chosen.push_back(*it);
  }
  v1beta1::AllocateRequest request;
  auto* one = request.add_container_requests();
  for (const auto& id : chosen) one->add_devices_ids(id);
  v1beta1::AllocateResponse answer;
  grpc::ClientContext context;
  const grpc::Status status = plugin->Allocate(&context, request, &answer);
  if (ids) *ids = chosen;
  if (!status.ok()) return status;
  if (answer.container_responses_size() == 0) {
    return grpc::Status(grpc::StatusCode::INTERNAL, "Allocate answered no container response");
  }
  if (response) *response = answer.container_responses(0);
  std::lock_guard lock(impl_->mutex);
  impl_->in_use.insert(chosen.begin(), chosen.end());
  impl_->held[pod_key][container] = chosen;
  return grpc::Status::OK;
}

void FakeKubelet::restart() {
  impl_->shut_down();
  {
    std::lock_guard lock(impl_->mutex);
    impl_->shutting_down = false;
    impl_->devices.clear();
  }
  impl_->serve();
}

void FakeKubelet::set_answer_register(bool answer) {
  {
    std::lock_guard lock(impl_->mutex);
    impl_->answer_register = answer;
  }
  impl_->changed.notify_all();
}

}  // namespace gpushare::testing
