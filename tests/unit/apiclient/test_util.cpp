#include "test_util.h"

#include <fstream>
#include <random>
#include <sstream>
#include <stdexcept>

namespace gpushare::apiclient::testing {

TempDir::TempDir() {
  std::random_device random;
  const auto base = std::filesystem::temp_directory_path();
  for (int attempt = 0; attempt < 100; ++attempt) {
    auto candidate = base / ("gpushare-apiclient-" + std::to_string(random()));
    if (std::filesystem::create_directory(candidate)) {
      path_ = candidate;
      return;
    }
  }
  throw std::runtime_error("cannot create a temp dir");
}

TempDir::~TempDir() {
  std::error_code ignored;
  std::filesystem::remove_all(path_, ignored);
}

std::filesystem::path TempDir::write(const std::string& relative,
                                     const std::string& content) const {
  const auto full = path_ / relative;
  std::filesystem::create_directories(full.parent_path());
  write_file(full, content);
  return full;
}

void write_file(const std::filesystem::path& path, const std::string& content) {
  // Write then rename, as kubelet does when it rotates a projected token.
  const auto temp = path.string() + ".tmp";
  {
    std::ofstream out(temp, std::ios::binary | std::ios::trunc);
    out << content;
    if (!out) throw std::runtime_error("cannot write " + temp);
  }
  std::filesystem::rename(temp, path);
}

std::string read_text(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

bool wait_until(const std::function<bool()>& condition, std::chrono::milliseconds limit) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < deadline) {
    if (condition()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return condition();
}

TestServer::TestServer(std::unique_ptr<httplib::Server> server) : server_(std::move(server)) {
  // Idle keep-alive connections (our client pools them) must not hold up stop() for long.
  server_->set_keep_alive_timeout(1);
}

TestServer::~TestServer() {
  stop();
}

void TestServer::start() {
  port_ = server_->bind_to_any_port("127.0.0.1");
  if (port_ <= 0) throw std::runtime_error("cannot bind a test server");
  thread_ = std::thread([this] { server_->listen_after_bind(); });
  if (!wait_until([this] { return server_->is_running(); })) {
    throw std::runtime_error("test server did not start");
  }
}

void TestServer::stop() {
  if (thread_.joinable()) {
    server_->stop();
    thread_.join();
  }
}

std::string TestServer::url(std::string_view scheme) const {
  return std::string(scheme) + "://127.0.0.1:" + std::to_string(port_);
}

ClientOptions fast_client_options(RecordingSleeper* sleeper, double random01) {
  ClientOptions options;
  options.connect_timeout = std::chrono::seconds(5);
  options.request_timeout = std::chrono::seconds(10);
  options.retry.max_attempts = 4;
  if (sleeper != nullptr) {
    options.sleeper = sleeper->sleeper();
  } else {
    options.sleeper = [](std::chrono::milliseconds, std::stop_token stop) {
      return !stop.stop_requested();
    };
  }
  options.random = [random01] { return random01; };
  return options;
}

std::string status_body(int code, std::string_view reason, std::string_view message,
                        const nlohmann::json& details) {
  nlohmann::json status{
      {"kind", "Status"},    {"apiVersion", "v1"}, {"metadata", nlohmann::json::object()},
      {"status", "Failure"}, {"message", message}, {"reason", reason},
      {"code", code}};
  if (!details.is_null()) status["details"] = details;
  return status.dump();
}

}  // namespace gpushare::apiclient::testing
