#pragma once
// The bearer token for each request: fixed, or read from a file that rotates (projected
// service-account tokens are replaced on disk long before they expire).

#include <chrono>
#include <filesystem>
#include <mutex>
#include <string>

#include "gpushare/apiclient/clock.h"

namespace gpushare::apiclient {

class TokenSource {
 public:
  // client-go re-reads the token file through a one-minute cache.
  static constexpr std::chrono::seconds kDefaultRefreshInterval{60};

  // `token_file` empty: always `initial_token`. Otherwise the file is read now and then at most
  // once per `refresh_interval` on demand; a failed read keeps the last good token.
  TokenSource(std::string initial_token, std::filesystem::path token_file,
              SteadyClock clock = real_steady_clock(),
              std::chrono::milliseconds refresh_interval = kDefaultRefreshInterval);

  // The token to send now (re-reading the file if the interval has passed). May be empty.
  std::string current();

  // Re-reads the file immediately (after a 401) and returns the token now in use. Callers compare
  // it with the token that was rejected: another thread may have reloaded it already.
  std::string reload_now();

  bool file_backed() const { return !token_file_.empty(); }

 private:
  void read_file_locked(SteadyTime now);

  std::mutex mutex_;
  std::string token_;
  const std::filesystem::path token_file_;
  const SteadyClock clock_;
  const std::chrono::milliseconds refresh_interval_;
  SteadyTime last_read_attempt_{};
};

}  // namespace gpushare::apiclient
