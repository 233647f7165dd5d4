#include "gpushare/deviceplugin/server.h"

#include <fmt/format.h>
#include <grpcpp/grpcpp.h>
#include <poll.h>
#include <spdlog/spdlog.h>
#include <sys/inotify.h>
#include <unistd.h>

#include <array>
#include <memory>
#include <stdexcept>
#include <system_error>

namespace gpushare::deviceplugin {
namespace {

constexpr std::string_view kKubeletSocket = "kubelet.sock";

// An inotify descriptor watching one directory for sockets appearing and disappearing.
class DirectoryWatch {
 public:
  explicit DirectoryWatch(const std::filesystem::path& dir) : fd_(inotify_init1(IN_CLOEXEC)) {
    if (fd_ < 0) throw std::system_error(errno, std::generic_category(), "inotify_init1");
    if (inotify_add_watch(fd_, dir.c_str(), IN_CREATE | IN_DELETE | IN_MOVED_TO | IN_MOVED_FROM) <
        0) {
      const int error = errno;
      close(fd_);
      throw std::system_error(error, std::generic_category(),
                              fmt::format("watching {} with inotify", dir.string()));
    }
  }
  ~DirectoryWatch() { close(fd_); }
  DirectoryWatch(const DirectoryWatch&) = delete;
  DirectoryWatch& operator=(const DirectoryWatch&) = delete;

  struct Change {
    bool kubelet_created = false;  // kubelet.sock created: kubelet (re)started
    bool own_removed = false;      // our socket removed
  };

  // Waits up to `timeout` for changes.
  Change wait(std::chrono::milliseconds timeout, const std::string& own_name) {
    Change change;
    pollfd pfd{fd_, POLLIN, 0};
    if (poll(&pfd, 1, static_cast<int>(timeout.count())) <= 0) return change;
    alignas(inotify_event) std::array<char, 8192> buffer{};
    const ssize_t got = read(fd_, buffer.data(), buffer.size());
    for (ssize_t at = 0; at < got;) {
      const auto* event = reinterpret_cast<const inotify_event*>(buffer.data() + at);
      const std::string name = event->len ? std::string(event->name) : std::string();
      if ((event->mask & (IN_CREATE | IN_MOVED_TO)) && name == kKubeletSocket) {
        change.kubelet_created = true;
      }
      if ((event->mask & (IN_DELETE | IN_MOVED_FROM)) && name == own_name)
        change.own_removed = true;
      at += static_cast<ssize_t>(sizeof(inotify_event) + event->len);
    }
    return change;
  }

 private:
  int fd_;
};

}  // namespace

PluginServer::PluginServer(DevicePluginService& service, ServerOptions options, Metrics& metrics)
    : service_(service), options_(std::move(options)), metrics_(metrics) {}

void PluginServer::run(std::stop_token stop) {
  DirectoryWatch watch(options_.kubelet_dir);
  const std::filesystem::path socket = socket_path();
  const std::filesystem::path kubelet_socket = options_.kubelet_dir / kKubeletSocket;
  auto backoff = options_.initial_backoff;
  while (!stop.stop_requested()) {
    std::error_code ignored;
    std::filesystem::remove(socket, ignored);
    grpc::ServerBuilder builder;
    builder.AddListeningPort("unix://" + socket.string(), grpc::InsecureServerCredentials());
    builder.RegisterService(&service_);
    std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
    if (!server) {
      spdlog::error("cannot serve the device plugin on {}; retrying in {} ms", socket.string(),
                    backoff.count());
      watch.wait(backoff, options_.socket_name);
      backoff = std::min(backoff * 2, options_.max_backoff);
      continue;
    }
    spdlog::info("serving the device plugin for {} on {}", options_.resource_name, socket.string());

    bool registered = false;
    bool restart = false;
    int attempt = 0;
    while (!stop.stop_requested() && !restart) {
      if (!registered) {
        ++attempt;
        auto channel = grpc::CreateChannel("unix://" + kubelet_socket.string(),
                                           grpc::InsecureChannelCredentials());
        auto stub = v1beta1::Registration::NewStub(channel);
        grpc::ClientContext context;
        context.set_deadline(std::chrono::system_clock::now() + options_.register_timeout);
        context.set_wait_for_ready(true);
        v1beta1::RegisterRequest request;
        request.set_version("v1beta1");
        request.set_endpoint(options_.socket_name);
        request.set_resource_name(options_.resource_name);
        *request.mutable_options() = DevicePluginService::options();
        v1beta1::Empty reply;
        const grpc::Status status = stub->Register(&context, request, &reply);
        if (status.ok()) {
          registered = true;
          attempt = 0;
          backoff = options_.initial_backoff;
          metrics_.registrations.Increment();
          spdlog::info("registered {} with kubelet at {}", options_.resource_name,
                       kubelet_socket.string());
          if (options_.on_registered) options_.on_registered();
        } else {
          spdlog::warn("registering with kubelet at {} failed (attempt {}): {}; retrying in {} ms",
                       kubelet_socket.string(), attempt, status.error_message(), backoff.count());
          const auto change = watch.wait(backoff, options_.socket_name);
          backoff = std::min(backoff * 2, options_.max_backoff);
          if (change.own_removed) restart = true;
          if (change.kubelet_created) backoff = options_.initial_backoff;
          continue;
        }
      }
      const auto change = watch.wait(std::chrono::milliseconds(500), options_.socket_name);
      if (change.kubelet_created) {
        spdlog::info(
            "kubelet.sock created again (kubelet restarted): serving and registering "
            "again");
        restart = true;
      } else if (change.own_removed || !std::filesystem::exists(socket, ignored)) {
        spdlog::info("{} was removed: serving and registering again", socket.string());
        restart = true;
      }
    }
    service_.stop_streams();
    server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(2));
    server->Wait();
    service_.resume_streams();
  }
  std::error_code ignored;
  std::filesystem::remove(socket, ignored);
  spdlog::info("stopped serving; removed {}", socket.string());
}

}  // namespace gpushare::deviceplugin
