#include "gpushare/apiclient/backoff.h"

#include <algorithm>
#include <cmath>

namespace gpushare::apiclient {

std::chrono::milliseconds RetryPolicy::jittered_delay(int retry_index, double random01) const {
  const double base = static_cast<double>(base_delay.count());
  const double cap = static_cast<double>(max_delay.count());
  // 2^retry_index overflows nothing that matters: min() with the cap comes first.
  const double ceiling = std::min(cap, base * std::pow(2.0, std::clamp(retry_index, 0, 62)));
  const double clamped_random = std::clamp(random01, 0.0, 1.0);
  return std::chrono::milliseconds(static_cast<std::int64_t>(ceiling * clamped_random));
}

ReconnectBackoff::ReconnectBackoff(ReconnectBackoffOptions options, SteadyClock clock,
                                   RandomSource random)
    : options_(options),
      clock_(std::move(clock)),
      random_(std::move(random)),
      base_(options.initial) {}

std::chrono::milliseconds ReconnectBackoff::next_delay() {
  std::lock_guard lock(mutex_);
  const auto now = clock_();
  if (last_backoff_start_ && now - *last_backoff_start_ > options_.reset_after) {
    base_ = options_.initial;
  }
  last_backoff_start_ = now;

  const auto current = base_;
  const auto grown = std::chrono::milliseconds(
      static_cast<std::int64_t>(static_cast<double>(base_.count()) * options_.factor));
  base_ = std::min(grown, options_.cap);

  const double jitter = options_.jitter > 0 ? options_.jitter * std::clamp(random_(), 0.0, 1.0) : 0;
  return std::chrono::milliseconds(
      static_cast<std::int64_t>(static_cast<double>(current.count()) * (1.0 + jitter)));
}

}  // namespace gpushare::apiclient
