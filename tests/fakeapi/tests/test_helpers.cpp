#include "test_helpers.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <sstream>
#include <stdexcept>

extern char** environ;

namespace gpushare::testing::fakeapi_test {

using Clock = std::chrono::steady_clock;

// --- ApiClient -----------------------------------------------------------------------------

namespace {
Reply to_reply(const httplib::Result& result) {
  Reply reply;
  reply.error = result.error();
  if (!result) return reply;
  reply.status = result->status;
  reply.body = result->body;
  reply.headers = result->headers;
  reply.json = Json::parse(reply.body, nullptr, false);
  if (reply.json.is_discarded()) reply.json = nullptr;
  return reply;
}
}  // namespace

ApiClient::ApiClient(const FakeApiServer& server, std::string token)
    : client_(std::make_unique<httplib::Client>(server.base_url())), token_(std::move(token)) {
  if (server.uses_tls()) {
    client_->set_ca_cert_path(server.ca_cert_path().string());
    client_->enable_server_certificate_verification(true);
  }
  client_->set_read_timeout(10, 0);
}

void ApiClient::set_read_timeout(std::chrono::milliseconds timeout) {
  client_->set_read_timeout(timeout);
}

httplib::Headers ApiClient::headers() const {
  httplib::Headers headers = {{"Accept", "application/json"}};
  if (!token_.empty()) headers.emplace("Authorization", "Bearer " + token_);
  return headers;
}

Reply ApiClient::get(const std::string& path) {
  return to_reply(client_->Get(path, headers()));
}

Reply ApiClient::post(const std::string& path, const Json& body) {
  return to_reply(client_->Post(path, headers(), body.dump(), "application/json"));
}

Reply ApiClient::put(const std::string& path, const Json& body) {
  return to_reply(client_->Put(path, headers(), body.dump(), "application/json"));
}

Reply ApiClient::patch(const std::string& path, const std::string& body,
                       const std::string& content_type) {
  return to_reply(client_->Patch(path, headers(), body, content_type));
}

Reply ApiClient::del(const std::string& path, const std::string& body) {
  return to_reply(client_->Delete(path, headers(), body, "application/json"));
}

// --- JsonValueSplitter -----------------------------------------------------------------------

std::vector<Json> JsonValueSplitter::feed(std::string_view bytes) {
  std::vector<Json> values;
  pending_.append(bytes);
  for (; scanned_ < pending_.size(); ++scanned_) {
    const char c = pending_[scanned_];
    if (in_string_) {
      if (escaped_) {
        escaped_ = false;
      } else if (c == '\\') {
        escaped_ = true;
      } else if (c == '"') {
        in_string_ = false;
      }
      continue;
    }
    if (c == '"') {
      in_string_ = true;
    } else if (c == '{' || c == '[') {
      ++depth_;
    } else if ((c == '}' || c == ']') && --depth_ == 0) {
      values.push_back(Json::parse(pending_.substr(0, scanned_ + 1)));
      pending_.erase(0, scanned_ + 1);
      // Skip the whitespace between values.
      const auto next = pending_.find_first_not_of(" \t\r\n");
      pending_.erase(0, next == std::string::npos ? pending_.size() : next);
      scanned_ = static_cast<std::size_t>(-1);  // ++ makes it 0
    }
  }
  return values;
}

bool JsonValueSplitter::has_partial_value() const {
  return pending_.find_first_not_of(" \t\r\n") != std::string::npos;
}

// --- WatchStream -----------------------------------------------------------------------------

WatchStream::WatchStream(std::uint16_t port, std::string_view target, std::string_view token)
    : connection_(port) {
  std::map<std::string, std::string> headers = {{"Accept", "application/json"}};
  if (!token.empty()) headers["Authorization"] = "Bearer " + std::string(token);
  connection_.send_request("GET", target, headers);
  head_ = connection_.read_head();
  if (!head_) throw std::runtime_error("no response head for " + std::string(target));
}

std::optional<Json> WatchStream::next_event(std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  while (ready_.empty() && !end_) {
    const auto remaining =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (remaining.count() <= 0) return std::nullopt;
    std::string chunk;
    const auto status = connection_.read_chunk(chunk, remaining);
    if (status == RawHttpConnection::ChunkStatus::Timeout) return std::nullopt;
    if (status != RawHttpConnection::ChunkStatus::Chunk) {
      end_ = status;
      break;
    }
    chunks_.push_back(chunk);
    for (Json& value : splitter_.feed(chunk)) ready_.push_back(std::move(value));
  }
  if (ready_.empty()) return std::nullopt;
  Json event = std::move(ready_.front());
  ready_.erase(ready_.begin());
  return event;
}

std::vector<Json> WatchStream::read_to_end(std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  std::vector<Json> events;
  while (Clock::now() < deadline) {
    auto event =
        next_event(std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()));
    if (!event) break;
    events.push_back(std::move(*event));
  }
  return events;
}

bool WatchStream::stays_quiet(std::chrono::milliseconds quiet) {
  if (!ready_.empty()) return false;
  std::string chunk;
  const auto status = connection_.read_chunk(chunk, quiet);
  if (status == RawHttpConnection::ChunkStatus::Timeout) return true;
  if (status == RawHttpConnection::ChunkStatus::Chunk) {
    chunks_.push_back(chunk);
    for (Json& value : splitter_.feed(chunk)) ready_.push_back(std::move(value));
  } else {
    end_ = status;
  }
  return false;
}

// --- Subprocess ------------------------------------------------------------------------------

Subprocess::Subprocess(const std::vector<std::string>& argv) {
  int out_pipe[2];
  int err_pipe[2];
  if (::pipe(out_pipe) != 0 || ::pipe(err_pipe) != 0) throw std::runtime_error("pipe failed");
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, out_pipe[1], STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, err_pipe[1], STDERR_FILENO);
  posix_spawn_file_actions_addclose(&actions, out_pipe[0]);
  posix_spawn_file_actions_addclose(&actions, err_pipe[0]);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  std::vector<char*> args;
  for (const std::string& arg : argv) args.push_back(const_cast<char*>(arg.c_str()));
  args.push_back(nullptr);
  // A process group of its own, so kill() also reaches any child it starts (gcloud's
  // kubectl is a dispatcher that may run a versioned kubectl).
  posix_spawnattr_t attributes;
  posix_spawnattr_init(&attributes);
  posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETPGROUP);
  posix_spawnattr_setpgroup(&attributes, 0);
  const int rc = ::posix_spawnp(&pid_, args[0], &actions, &attributes, args.data(), environ);
  posix_spawnattr_destroy(&attributes);
  posix_spawn_file_actions_destroy(&actions);
  ::close(out_pipe[1]);
  ::close(err_pipe[1]);
  if (rc != 0) {
    ::close(out_pipe[0]);
    ::close(err_pipe[0]);
    throw std::runtime_error("cannot start " + argv[0]);
  }
  readers_.emplace_back([this, fd = out_pipe[0]] { pump(fd, stdout_); });
  readers_.emplace_back([this, fd = err_pipe[0]] { pump(fd, stderr_); });
}

Subprocess::~Subprocess() {
  kill();
  wait_exit(10000ms);
  join_readers();
}

void Subprocess::join_readers() {
  for (std::thread& reader : readers_) {
    if (reader.joinable()) reader.join();
  }
}

void Subprocess::pump(int fd, std::string& sink) {
  char data[4096];
  for (;;) {
    const ssize_t n = ::read(fd, data, sizeof data);
    if (n <= 0) break;
    {
      std::lock_guard lock(mutex_);
      sink.append(data, static_cast<std::size_t>(n));
    }
    changed_.notify_all();
  }
  ::close(fd);
  changed_.notify_all();
}

std::string Subprocess::stdout_text() const {
  std::lock_guard lock(mutex_);
  return stdout_;
}

std::string Subprocess::stderr_text() const {
  std::lock_guard lock(mutex_);
  return stderr_;
}

std::optional<int> Subprocess::wait_exit(std::chrono::milliseconds timeout) {
  if (exit_code_) return exit_code_;
  const auto deadline = Clock::now() + timeout;
  for (;;) {
    int status = 0;
    const pid_t done = ::waitpid(pid_, &status, WNOHANG);
    if (done == pid_) {
      exit_code_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      return exit_code_;
    }
    if (Clock::now() >= deadline) return std::nullopt;
    std::this_thread::sleep_for(10ms);
  }
}

void Subprocess::kill() {
  if (pid_ > 0) ::kill(-pid_, SIGKILL);  // the whole group; harmless once it is gone
}

void Subprocess::signal(int number) {
  if (pid_ > 0) ::kill(pid_, number);
}

RunResult run_process(const std::vector<std::string>& argv, std::chrono::milliseconds timeout) {
  RunResult result;
  {
    Subprocess process(argv);
    result.exit_code = process.wait_exit(timeout);
    if (!result.exit_code) {
      process.kill();
      process.wait_exit(10000ms);
    }
    process.join_readers();
    result.out = process.stdout_text();
    result.err = process.stderr_text();
  }
  return result;
}

std::string find_on_path(std::string_view name) {
  const char* path = std::getenv("PATH");
  if (path == nullptr) return {};
  std::stringstream dirs(path);
  std::string dir;
  while (std::getline(dirs, dir, ':')) {
    const std::filesystem::path candidate = std::filesystem::path(dir) / name;
    if (::access(candidate.c_str(), X_OK) == 0) return candidate.string();
  }
  return {};
}

// --- TempDir ---------------------------------------------------------------------------------

TempDir::TempDir() {
  std::string pattern = (std::filesystem::temp_directory_path() / "fakeapi-test-XXXXXX").string();
  if (::mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
  path_ = pattern;
}

TempDir::~TempDir() {
  std::error_code ignored;
  std::filesystem::remove_all(path_, ignored);
}

}  // namespace gpushare::testing::fakeapi_test
