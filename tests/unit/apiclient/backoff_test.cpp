#include "gpushare/apiclient/backoff.h"

#include <gtest/gtest.h>

#include "test_util.h"

namespace gpushare::apiclient {
namespace {

using namespace std::chrono_literals;

TEST(RetryPolicy, FullJitterWithinExponentialCeiling) {
  RetryPolicy policy;
  policy.base_delay = 100ms;
  policy.max_delay = 1000ms;
  EXPECT_EQ(policy.jittered_delay(0, 0.0), 0ms);
  EXPECT_EQ(policy.jittered_delay(0, 0.5), 50ms);
  EXPECT_EQ(policy.jittered_delay(1, 0.5), 100ms);
  EXPECT_EQ(policy.jittered_delay(2, 0.5), 200ms);
  EXPECT_EQ(policy.jittered_delay(3, 0.999), 799ms);
  EXPECT_EQ(policy.jittered_delay(10, 0.5), 500ms) << "capped at max_delay";
  EXPECT_EQ(policy.jittered_delay(1000, 0.5), 500ms) << "no overflow";
}

TEST(ReconnectBackoff, DoublesToCapWithJitterAndResetsWhenHealthy) {
  testing::FakeClock clock;
  double random = 0.0;
  ReconnectBackoffOptions options;  // 0.8 s doubling to 30 s, jitter 1.0, reset after 2 min
  ReconnectBackoff backoff(options, clock.clock(), [&] { return random; });

  std::vector<std::chrono::milliseconds> delays;
  for (int i = 0; i < 8; ++i) {
    delays.push_back(backoff.next_delay());
    clock.advance(1s);
  }
  const std::vector<std::chrono::milliseconds> expected{800ms,   1600ms,  3200ms,  6400ms,
                                                        12800ms, 25600ms, 30000ms, 30000ms};
  EXPECT_EQ(delays, expected);

  random = 0.5;
  EXPECT_EQ(backoff.next_delay(), 45000ms) << "jitter adds up to 100% of the base";

  clock.advance(121s);  // healthy for longer than reset_after
  random = 0.0;
  EXPECT_EQ(backoff.next_delay(), 800ms);
}

}  // namespace
}  // namespace gpushare::apiclient
