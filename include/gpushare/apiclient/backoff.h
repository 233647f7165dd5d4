#pragma once
// Two backoff schemes: full-jitter exponential delays between retries of one request, and the
// client-go reflector's reconnect backoff (stateful, reset after a healthy period).

#include <chrono>
#include <mutex>
#include <optional>

#include "gpushare/apiclient/clock.h"

namespace gpushare::apiclient {

struct RetryPolicy {
  int max_attempts = 5;  // total tries, including the first; 1 disables retries
  std::chrono::milliseconds base_delay{250};
  std::chrono::milliseconds max_delay{8000};
  // Upper bound on a server-requested delay (Retry-After / retryAfterSeconds) that we honour.
  std::chrono::milliseconds max_server_delay{60000};

  // Full jitter: uniform in [0, min(max_delay, base_delay * 2^retry_index)).
  // `random01` is a sample from [0, 1). `retry_index` 0 is the wait before the 2nd attempt.
  std::chrono::milliseconds jittered_delay(int retry_index, double random01) const;
};

struct ReconnectBackoffOptions {
  std::chrono::milliseconds initial{800};
  std::chrono::milliseconds cap{30000};  // the base stops doubling here
  double factor = 2.0;
  double jitter = 1.0;                            // delay = base * (1 + jitter * random)
  std::chrono::milliseconds reset_after{120000};  // healthy time after which we start over
};

// client-go's exponentialBackoffManager: each next_delay() doubles the base up to `cap`; if more
// than `reset_after` passed since the previous backoff began, the base returns to `initial`.
class ReconnectBackoff {
 public:
  ReconnectBackoff(ReconnectBackoffOptions options, SteadyClock clock, RandomSource random);

  std::chrono::milliseconds next_delay();

 private:
  std::mutex mutex_;
  const ReconnectBackoffOptions options_;
  const SteadyClock clock_;
  const RandomSource random_;
  std::chrono::milliseconds base_;
  std::optional<SteadyTime> last_backoff_start_;
};

}  // namespace gpushare::apiclient
