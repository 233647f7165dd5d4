#include "gpushare/logging/log_throttle.h"

#include <gtest/gtest.h>

namespace gpushare::logging {
namespace {

using namespace std::chrono_literals;

TEST(LogThrottle, AFloodWritesTheBurstThenCountsWhatItHeldBack) {
  LogThrottle throttle(3, 10s);
  const auto t0 = LogThrottle::Clock::time_point{} + 100s;
  int written = 0;
  for (int i = 0; i < 2000; ++i) written += throttle.admit(t0 + std::chrono::milliseconds(i)).log;
  EXPECT_EQ(written, 3);
  // The next window's first line says how many were held back, once.
  const auto next = throttle.admit(t0 + 11s);
  EXPECT_TRUE(next.log);
  EXPECT_EQ(next.held_back, 1997u);
  EXPECT_EQ(held_back_note(next), " (1997 more like this not logged)");
  const auto after = throttle.admit(t0 + 11s);
  EXPECT_TRUE(after.log);
  EXPECT_EQ(after.held_back, 0u);
  EXPECT_EQ(held_back_note(after), "");
}

TEST(LogThrottle, AQuietServerLogsEveryLine) {
  LogThrottle throttle(2, 10s);
  const auto t0 = LogThrottle::Clock::time_point{} + 100s;
  for (int i = 0; i < 10; ++i) {
    const auto admitted = throttle.admit(t0 + i * 6s);
    EXPECT_TRUE(admitted.log) << i;
    EXPECT_EQ(admitted.held_back, 0u);
  }
}

}  // namespace
}  // namespace gpushare::logging
