#pragma once
// A budget for log lines that clients can cause at will: one 408 line per slow connection, one
// refusal per connection over --max-connections-per-client. 2 000 slowloris connections must not
// write 2 000 lines every header timeout. Each kind of line gets its own throttle: up to `burst`
// lines per `interval`, the rest counted and reported with the next line that is logged.

#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>

namespace gpushare::logging {

class LogThrottle {
 public:
  using Clock = std::chrono::steady_clock;

  struct Admission {
    bool log = false;             // write this line
    std::uint64_t held_back = 0;  // lines of this kind not written since the last one written
  };

  explicit LogThrottle(int burst = 5, Clock::duration interval = std::chrono::seconds(10))
      : burst_(burst), interval_(interval) {}

  // Thread-safe: the reactor and the accept thread share some kinds.
  Admission admit(Clock::time_point now = Clock::now());

 private:
  const int burst_;
  const Clock::duration interval_;
  std::mutex mutex_;  // guards the fields below
  Clock::time_point window_start_{};
  int written_in_window_ = 0;
  std::uint64_t held_back_ = 0;
};

// "" or " (N more like this not logged)", to append to an admitted line.
std::string held_back_note(const LogThrottle::Admission& admitted);

}  // namespace gpushare::logging
