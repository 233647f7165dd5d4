#pragma once
// Just enough of a W3C WebDriver client (chromedriver over loopback HTTP) and of process handling
// to drive the web view in headless Chromium from a gtest.

#include <fcntl.h>
#include <httplib.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <regex>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

extern char** environ;

namespace gpushare::browser {

using Json = nlohmann::json;
using namespace std::chrono_literals;

inline std::string env_or(const char* name, const std::string& fallback) {
  const char* value = std::getenv(name);
  return value != nullptr && *value != '\0' ? value : fallback;
}
inline std::string chromium_path() {
  return env_or("GPUSHARE_CHROMIUM", "/usr/bin/chromium");
}
inline std::string chromedriver_path() {
  return env_or("GPUSHARE_CHROMEDRIVER", "/usr/bin/chromedriver");
}

// Empty if the browser can run here; otherwise why not (the tests skip with it).
inline std::string browser_missing() {
  for (const std::string& path : {chromium_path(), chromedriver_path()}) {
    if (::access(path.c_str(), X_OK) != 0) {
      return path +
             " is not installed: run scripts/install-browser.sh (Debian packages chromium, "
             "chromium-driver) to run the browser tests";
    }
  }
  return {};
}

inline std::string read_text(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// A child process in its own process group, output to a log file; terminated (group-wide) and
// reaped on destruction.
class Process {
 public:
  Process(const std::vector<std::string>& argv, std::filesystem::path log) : log_(std::move(log)) {
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, log_.c_str(),
                                     O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
    posix_spawnattr_t attributes;
    posix_spawnattr_init(&attributes);
    posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETPGROUP);
    posix_spawnattr_setpgroup(&attributes, 0);
    std::vector<char*> args;
    for (const std::string& arg : argv) args.push_back(const_cast<char*>(arg.c_str()));
    args.push_back(nullptr);
    const int rc = ::posix_spawn(&pid_, args[0], &actions, &attributes, args.data(), environ);
    posix_spawnattr_destroy(&attributes);
    posix_spawn_file_actions_destroy(&actions);
    if (rc != 0) throw std::runtime_error("cannot start " + argv[0]);
  }
  Process(const Process&) = delete;
  Process& operator=(const Process&) = delete;
  ~Process() { stop(); }

  void stop() {
    if (pid_ <= 0) return;
    ::kill(-pid_, SIGTERM);
    for (int i = 0; i < 100; ++i) {
      if (::waitpid(pid_, nullptr, WNOHANG) == pid_) {
        ::kill(-pid_, SIGKILL);  // children it left behind, if any
        pid_ = -1;
        return;
      }
      std::this_thread::sleep_for(50ms);
    }
    ::kill(-pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
    pid_ = -1;
  }
  bool running() const { return pid_ > 0 && ::waitpid(pid_, nullptr, WNOHANG) == 0; }
  std::string log() const { return read_text(log_); }

 private:
  std::filesystem::path log_;
  pid_t pid_ = -1;
};

// A loopback port nobody listens on right now.
inline int free_loopback_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = 0;
  socklen_t length = sizeof address;
  int port = -1;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) == 0) {
    port = ntohs(address.sin_port);
  }
  ::close(fd);
  return port;
}

// gpushare-extender on an ephemeral loopback port: in standalone mode on a cluster file, or in
// live mode with `source_args` (e.g. --kubeconfig of a FakeApiServerProcess).
class Extender {
 public:
  Extender(const std::filesystem::path& cluster_file, const std::filesystem::path& work_dir)
      : Extender(std::vector<std::string>{"--cluster-file", cluster_file.string()}, work_dir) {}
  Extender(const std::vector<std::string>& source_args, const std::filesystem::path& work_dir)
      : process_(command(source_args), work_dir / "extender.log") {
    const std::regex serving(R"(serving HTTP on 127\.0\.0\.1:(\d+))");
    const auto deadline = std::chrono::steady_clock::now() + 60s;
    std::smatch match;
    while (std::chrono::steady_clock::now() < deadline) {
      const std::string log = process_.log();
      if (std::regex_search(log, match, serving)) {
        port_ = std::stoi(match[1]);
        return;
      }
      if (!process_.running()) throw std::runtime_error("gpushare-extender exited:\n" + log);
      std::this_thread::sleep_for(50ms);
    }
    throw std::runtime_error("gpushare-extender did not start:\n" + process_.log());
  }

  int port() const { return port_; }
  std::string url(const std::string& path) const {
    return "http://127.0.0.1:" + std::to_string(port_) + path;
  }
  httplib::Client client() const {
    httplib::Client client("127.0.0.1", port_);
    client.set_read_timeout(60);
    return client;
  }
  Json inspect() const {
    auto res = client().Get("/gpushare-scheduler/inspect");
    if (!res || res->status != 200) throw std::runtime_error("GET /inspect failed");
    return Json::parse(res->body);
  }
  std::pair<int, Json> post(const std::string& verb, const Json& body) const {
    auto res = client().Post("/gpushare-scheduler/" + verb, body.dump(), "application/json");
    if (!res) return {-1, nullptr};
    return {res->status, Json::parse(res->body, nullptr, false)};
  }

 private:
  static std::vector<std::string> command(const std::vector<std::string>& source_args) {
    std::vector<std::string> argv{GPUSHARE_EXTENDER_BINARY};
    argv.insert(argv.end(), source_args.begin(), source_args.end());
    argv.insert(argv.end(), {"--listen", "127.0.0.1:0"});
    return argv;
  }

  Process process_;
  int port_ = -1;
};

// The tests' fake API server as a process (gpushare-fake-apiserver), seeded from a v1 List file,
// for the extender's live mode.
class FakeApiServerProcess {
 public:
  FakeApiServerProcess(const std::filesystem::path& seed, const std::filesystem::path& work_dir)
      : kubeconfig_(work_dir / "fake.kubeconfig"),
        process_({GPUSHARE_FAKE_APISERVER_BINARY, "--kubeconfig-out", kubeconfig_.string(),
                  "--seed", seed.string()},
                 work_dir / "fake-apiserver.log") {
    const auto deadline = std::chrono::steady_clock::now() + 60s;
    while (std::chrono::steady_clock::now() < deadline) {
      if (process_.log().find("fake API server on") != std::string::npos) return;
      if (!process_.running())
        throw std::runtime_error("gpushare-fake-apiserver exited:\n" + process_.log());
      std::this_thread::sleep_for(50ms);
    }
    throw std::runtime_error("gpushare-fake-apiserver did not start:\n" + process_.log());
  }
  const std::filesystem::path& kubeconfig() const { return kubeconfig_; }

 private:
  std::filesystem::path kubeconfig_;
  Process process_;
};

inline std::string base64_decode(const std::string& in) {
  auto value = [](char c) -> int {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+') return 62;
    if (c == '/') return 63;
    return -1;
  };
  std::string out;
  int bits = 0;
  unsigned buffer = 0;
  for (char c : in) {
    const int v = value(c);
    if (v < 0) continue;  // padding, whitespace
    buffer = (buffer << 6) | static_cast<unsigned>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<char>((buffer >> bits) & 0xFF));
    }
  }
  return out;
}

// chromedriver plus one headless Chromium session.
class Browser {
 public:
  explicit Browser(const std::filesystem::path& work_dir, int width = 1400, int height = 900) {
    port_ = free_loopback_port();
    driver_.emplace(
        std::vector<std::string>{chromedriver_path(), "--port=" + std::to_string(port_)},
        work_dir / "chromedriver.log");
    const auto deadline = std::chrono::steady_clock::now() + 30s;
    for (;;) {
      auto res = client().Get("/status");
      if (res && res->status == 200) {
        const Json status = Json::parse(res->body, nullptr, false);
        if (status.is_object() && status.contains("value") && status["value"].value("ready", false))
          break;
      }
      if (std::chrono::steady_clock::now() > deadline) {
        throw std::runtime_error("chromedriver did not start:\n" + driver_->log());
      }
      std::this_thread::sleep_for(100ms);
    }
    const std::string profile = (work_dir / "profile").string();
    const Json args = {"--headless",
                       "--no-sandbox",
                       "--disable-gpu",
                       "--disable-dev-shm-usage",
                       "--disable-background-networking",
                       "--disable-component-update",
                       "--disable-sync",
                       "--no-first-run",
                       "--disable-extensions",
                       "--user-data-dir=" + profile,
                       "--window-size=" + std::to_string(width) + "," + std::to_string(height)};
    const Json capabilities = {
        {"capabilities",
         {{"alwaysMatch",
           {{"browserName", "chrome"},
            {"goog:chromeOptions", {{"binary", chromium_path()}, {"args", args}}}}}}}};
    const Json reply = call("POST", "/session", capabilities);
    session_ = reply.at("sessionId").get<std::string>();
  }
  Browser(const Browser&) = delete;
  Browser& operator=(const Browser&) = delete;
  ~Browser() {
    if (!session_.empty()) {
      try {
        call("DELETE", "/session/" + session_, nullptr);
      } catch (...) {
      }
    }
    driver_.reset();
  }

  void navigate(const std::string& url) { session_call("POST", "/url", {{"url", url}}); }
  // Runs `script` (a function body; `arguments` holds `args`) and returns its value.
  Json execute(const std::string& script, Json args = Json::array()) {
    return session_call("POST", "/execute/sync", {{"script", script}, {"args", std::move(args)}});
  }
  // Polls `script` until it returns something truthy, or throws after `timeout`.
  Json wait_for(const std::string& script, std::chrono::milliseconds timeout = 30s,
                Json args = Json::array()) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    for (;;) {
      Json value = execute(script, args);
      const bool truthy = !value.is_null() && value != false && value != 0 && value != "";
      if (truthy) return value;
      if (std::chrono::steady_clock::now() > deadline) {
        throw std::runtime_error("timed out waiting for: " + script);
      }
      std::this_thread::sleep_for(100ms);
    }
  }
  std::string screenshot_png() {
    return base64_decode(session_call("GET", "/screenshot", nullptr).get<std::string>());
  }
  void set_window_size(int width, int height) {
    session_call("POST", "/window/rect", {{"width", width}, {"height", height}});
  }

 private:
  httplib::Client client() const {
    httplib::Client client("127.0.0.1", port_);
    client.set_read_timeout(120);
    client.set_connection_timeout(10);
    return client;
  }
  Json session_call(const std::string& method, const std::string& path, const Json& body) {
    return call(method, "/session/" + session_ + path, body);
  }
  Json call(const std::string& method, const std::string& path, const Json& body) {
    httplib::Result res = method == "GET" ? client().Get(path)
                          : method == "DELETE"
                              ? client().Delete(path)
                              : client().Post(path, body.dump(), "application/json");
    if (!res) throw std::runtime_error("chromedriver: no answer to " + method + " " + path);
    Json reply = Json::parse(res->body, nullptr, false);
    if (res->status != 200 || reply.is_discarded()) {
      throw std::runtime_error("chromedriver: " + method + " " + path + " -> " +
                               std::to_string(res->status) + ": " + res->body.substr(0, 2000));
    }
    return reply.value("value", Json());
  }

  int port_ = -1;
  std::optional<Process> driver_;
  std::string session_;
};

}  // namespace gpushare::browser
