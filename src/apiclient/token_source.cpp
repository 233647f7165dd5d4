#include "gpushare/apiclient/token_source.h"

#include <spdlog/spdlog.h>

#include "file_util.h"

namespace gpushare::apiclient {

TokenSource::TokenSource(std::string initial_token, std::filesystem::path token_file,
                         SteadyClock clock, std::chrono::milliseconds refresh_interval)
    : token_(std::move(initial_token)),
      token_file_(std::move(token_file)),
      clock_(std::move(clock)),
      refresh_interval_(refresh_interval) {
  if (file_backed()) {
    std::lock_guard lock(mutex_);
    read_file_locked(clock_());
  }
}

std::string TokenSource::current() {
  std::lock_guard lock(mutex_);
  if (file_backed()) {
    const auto now = clock_();
    if (now - last_read_attempt_ >= refresh_interval_) read_file_locked(now);
  }
  return token_;
}

std::string TokenSource::reload_now() {
  std::lock_guard lock(mutex_);
  if (file_backed()) read_file_locked(clock_());
  return token_;
}

void TokenSource::read_file_locked(SteadyTime now) {
  // Counted as an attempt even if it fails, so a missing file is not re-read on every request.
  last_read_attempt_ = now;
  const auto content = detail::read_file(token_file_);
  const auto token = content ? detail::trim(*content) : std::string_view();
  if (token.empty()) {
    // client-go keeps the previous token: a rotation in progress must not break requests.
    spdlog::warn("apiclient: cannot read a token from {}; keeping the previous one",
                 token_file_.string());
    return;
  }
  token_ = std::string(token);
}

}  // namespace gpushare::apiclient
