#pragma once
// Time and randomness as injectable values, so that token rotation, retries and reflector
// backoff can be tested without real waiting.

#include <chrono>
#include <functional>
#include <stop_token>

namespace gpushare::apiclient {

using SteadyTime = std::chrono::steady_clock::time_point;

// Returns "now" on a monotonic clock.
using SteadyClock = std::function<SteadyTime()>;

// Waits for `duration` unless `stop` is requested first. Returns false if it was stopped
// (the caller should give up), true after a full wait.
using Sleeper = std::function<bool(std::chrono::milliseconds duration, std::stop_token stop)>;

// Uniformly distributed in [0, 1). Must be safe to call from several threads.
using RandomSource = std::function<double()>;

SteadyClock real_steady_clock();
Sleeper real_sleeper();
RandomSource default_random_source();

}  // namespace gpushare::apiclient
