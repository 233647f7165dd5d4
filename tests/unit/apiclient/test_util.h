#pragma once
// Helpers for the apiclient tests: temp dirs, fake time, recorded sleeps, a local HTTP(S)
// server on a random port, and bounded waiting.

#include <httplib.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "gpushare/apiclient/api_client.h"
#include "gpushare/apiclient/clock.h"

namespace gpushare::apiclient::testing {

// A fresh directory under the system temp dir, removed with its contents on destruction.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path write(const std::string& relative, const std::string& content) const;

 private:
  std::filesystem::path path_;
};

void write_file(const std::filesystem::path& path, const std::string& content);
std::string read_text(const std::filesystem::path& path);

// A steady clock that moves only when told to.
class FakeClock {
 public:
  SteadyClock clock() {
    return [this] { return SteadyTime(std::chrono::nanoseconds(now_ns_.load())); };
  }
  void advance(std::chrono::nanoseconds step) { now_ns_ += step.count(); }

 private:
  std::atomic<std::int64_t> now_ns_{std::chrono::nanoseconds(std::chrono::hours(1000)).count()};
};

// Records requested sleeps and returns at once (after a token real pause, so that a loop that
// keeps backing off cannot spin a CPU while a test waits for it).
class RecordingSleeper {
 public:
  Sleeper sleeper() {
    return [this](std::chrono::milliseconds duration, std::stop_token stop) {
      {
        std::lock_guard lock(mutex_);
        sleeps_.push_back(duration);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
      return !stop.stop_requested();
    };
  }
  std::vector<std::chrono::milliseconds> sleeps() const {
    std::lock_guard lock(mutex_);
    return sleeps_;
  }

 private:
  mutable std::mutex mutex_;
  std::vector<std::chrono::milliseconds> sleeps_;
};

// Polls `condition` until it holds or `limit` passes. Returns the final value.
bool wait_until(const std::function<bool()>& condition,
                std::chrono::milliseconds limit = std::chrono::seconds(10));

// An httplib server (plain or SSL) on 127.0.0.1 and a random port, served from its own thread.
class TestServer {
 public:
  explicit TestServer(
      std::unique_ptr<httplib::Server> server = std::make_unique<httplib::Server>());
  ~TestServer();
  TestServer(const TestServer&) = delete;
  TestServer& operator=(const TestServer&) = delete;

  httplib::Server& http() { return *server_; }
  void start();  // register handlers first
  void stop();
  int port() const { return port_; }
  std::string url(std::string_view scheme = "http") const;

 private:
  std::unique_ptr<httplib::Server> server_;
  std::thread thread_;
  int port_ = -1;
};

// Options suitable for tests: no real sleeping, deterministic randomness, short timeouts.
ClientOptions fast_client_options(RecordingSleeper* sleeper = nullptr, double random01 = 0.5);

// A Status body as the API server sends it.
std::string status_body(int code, std::string_view reason, std::string_view message,
                        const nlohmann::json& details = nullptr);

}  // namespace gpushare::apiclient::testing
