#pragma once
// How long a list's model update took, for its log line (private to src/sync): wall time from
// asking for the model's write lock to releasing it (what filter and prioritize wait at most),
// and this thread's CPU time meanwhile (the stable figure on a busy machine).

#include <fmt/format.h>

#include <chrono>
#include <ctime>
#include <string>

namespace gpushare::sync {

class UpdateTimer {
 public:
  UpdateTimer() : wall_(std::chrono::steady_clock::now()), cpu_(thread_cpu()) {}
  std::string done() const {
    const auto wall = std::chrono::duration_cast<std::chrono::milliseconds>(
        std::chrono::steady_clock::now() - wall_);
    const auto cpu = std::chrono::duration_cast<std::chrono::milliseconds>(thread_cpu() - cpu_);
    return fmt::format("model updated in {} ms, {} ms CPU", wall.count(), cpu.count());
  }

 private:
  static std::chrono::nanoseconds thread_cpu() {
    timespec now{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
    return std::chrono::seconds(now.tv_sec) + std::chrono::nanoseconds(now.tv_nsec);
  }
  std::chrono::steady_clock::time_point wall_;
  std::chrono::nanoseconds cpu_;
};

}  // namespace gpushare::sync
