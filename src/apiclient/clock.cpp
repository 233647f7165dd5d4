#include "gpushare/apiclient/clock.h"

#include <condition_variable>
#include <mutex>
#include <random>

namespace gpushare::apiclient {

SteadyClock real_steady_clock() {
  return [] { return std::chrono::steady_clock::now(); };
}

Sleeper real_sleeper() {
  return [](std::chrono::milliseconds duration, std::stop_token stop) {
    // A private mutex/cv pair: the stop_token's callback wakes the wait.
    std::mutex mutex;
    std::condition_variable_any cv;
    std::unique_lock lock(mutex);
    // The predicate never becomes true: we wait out the duration unless stop is requested.
    cv.wait_for(lock, stop, duration, [] { return false; });
    return !stop.stop_requested();
  };
}

RandomSource default_random_source() {
  return [] {
    // One generator per thread: no locking, and seeds differ between threads.
    thread_local std::mt19937_64 generator{std::random_device{}()};
    return std::uniform_real_distribution<double>(0.0, 1.0)(generator);
  };
}

}  // namespace gpushare::apiclient
