#pragma once
// Test-side tools for the fake API server's tests: a raw HTTP/1.1 client that exposes chunk
// boundaries and tells a clean end of a chunked body from a dropped connection, a splitter
// for streams of JSON values, a subprocess runner (for kubectl) and a temporary directory.

#include <httplib.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <filesystem>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "fakeapi/fake_apiserver.h"
#include "support/raw_http_connection.h"

namespace gpushare::testing::fakeapi_test {

using Json = nlohmann::json;
using namespace std::chrono_literals;

// Generous deadline for anything that should happen "soon".
inline constexpr std::chrono::milliseconds kSoon = 5000ms;

// A reply of the fake, with the body parsed when it is JSON.
struct Reply {
  int status = 0;  // 0: no response (connection failed, reset or timed out)
  httplib::Error error = httplib::Error::Success;
  std::string body;
  Json json;  // null unless the body is JSON
  httplib::Headers headers;
};

// httplib::Client against a FakeApiServer (plain HTTP or TLS with its CA), JSON in and out.
class ApiClient {
 public:
  explicit ApiClient(const FakeApiServer& server, std::string token = {});
  void set_read_timeout(std::chrono::milliseconds timeout);
  Reply get(const std::string& path);
  Reply post(const std::string& path, const Json& body);
  Reply put(const std::string& path, const Json& body);
  Reply patch(const std::string& path, const std::string& body, const std::string& content_type);
  Reply del(const std::string& path, const std::string& body = {});

 private:
  httplib::Headers headers() const;
  std::unique_ptr<httplib::Client> client_;
  std::string token_;
};

// Cuts a byte stream into complete top-level JSON values, whatever the chunking.
class JsonValueSplitter {
 public:
  std::vector<Json> feed(std::string_view bytes);
  bool has_partial_value() const;

 private:
  std::string pending_;
  std::size_t scanned_ = 0;
  int depth_ = 0;
  bool in_string_ = false;
  bool escaped_ = false;
};

// A watch request read event by event.
class WatchStream {
 public:
  WatchStream(std::uint16_t port, std::string_view target, std::string_view token = {});
  int status() const { return head_ ? head_->status : 0; }
  const RawHttpConnection::Head& head() const { return *head_; }
  // The next event, or nullopt when the stream ended or nothing came in time.
  std::optional<Json> next_event(std::chrono::milliseconds timeout = kSoon);
  // Reads until the stream ends; returns the events read on the way.
  std::vector<Json> read_to_end(std::chrono::milliseconds timeout = kSoon);
  // Nothing arrives within `quiet` (the stream stays open and silent).
  bool stays_quiet(std::chrono::milliseconds quiet);
  bool ended_cleanly() const { return end_ == RawHttpConnection::ChunkStatus::CleanEnd; }
  bool ended_abruptly() const { return end_ == RawHttpConnection::ChunkStatus::Abrupt; }
  const std::vector<std::string>& chunks() const { return chunks_; }

 private:
  RawHttpConnection connection_;
  std::optional<RawHttpConnection::Head> head_;
  JsonValueSplitter splitter_;
  std::vector<Json> ready_;
  std::vector<std::string> chunks_;
  std::optional<RawHttpConnection::ChunkStatus> end_;
};

// A child process with its stdout and stderr captured.
class Subprocess {
 public:
  explicit Subprocess(const std::vector<std::string>& argv);
  ~Subprocess();
  Subprocess(const Subprocess&) = delete;
  Subprocess& operator=(const Subprocess&) = delete;

  std::string stdout_text() const;
  std::string stderr_text() const;
  // Waits until stdout satisfies `predicate` (or the process ends).
  template <typename Predicate>
  bool wait_for_stdout(Predicate predicate, std::chrono::milliseconds timeout) const {
    std::unique_lock lock(mutex_);
    return changed_.wait_for(lock, timeout, [&] { return predicate(std::string_view(stdout_)); });
  }
  std::optional<int> wait_exit(std::chrono::milliseconds timeout);  // exit code
  void kill();
  void signal(int number);  // to the program itself, e.g. SIGUSR1
  // After exit: waits until both pipes are drained.
  void join_readers();

 private:
  void pump(int fd, std::string& sink);
  int pid_ = -1;
  std::optional<int> exit_code_;
  mutable std::mutex mutex_;
  mutable std::condition_variable changed_;
  std::string stdout_;
  std::string stderr_;
  std::vector<std::thread> readers_;
};

struct RunResult {
  std::optional<int> exit_code;  // nullopt: timed out (and killed)
  std::string out;
  std::string err;
};
RunResult run_process(const std::vector<std::string>& argv,
                      std::chrono::milliseconds timeout = 60000ms);

// The absolute path of an executable on PATH, or empty.
std::string find_on_path(std::string_view name);

class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

}  // namespace gpushare::testing::fakeapi_test
