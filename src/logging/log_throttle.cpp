#include "gpushare/logging/log_throttle.h"

#include <fmt/format.h>

namespace gpushare::logging {

LogThrottle::Admission LogThrottle::admit(Clock::time_point now) {
  std::lock_guard lock(mutex_);
  if (written_in_window_ == 0 || now - window_start_ >= interval_) {
    window_start_ = now;
    written_in_window_ = 0;
  }
  if (written_in_window_ >= burst_) {
    ++held_back_;
    return {};
  }
  ++written_in_window_;
  Admission admitted{true, held_back_};
  held_back_ = 0;
  return admitted;
}

std::string held_back_note(const LogThrottle::Admission& admitted) {
  if (admitted.held_back == 0) return {};
  return fmt::format(" ({} more like this not logged)", admitted.held_back);
}

}  // namespace gpushare::logging
