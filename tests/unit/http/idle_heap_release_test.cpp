// IdleHeapRelease: free heap goes back to the system once the server has been idle after any
// activity, once per burst, and not while nothing happens.

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "gpushare/http/process_resources.h"
#include "support/eventually.h"

namespace gpushare::http {
namespace {

using namespace std::chrono_literals;
using testing::eventually;

TEST(IdleHeapRelease, ReleasesOnceAfterEachBurstOfActivity) {
  std::atomic<int> releases{0};
  IdleHeapRelease idle(20ms, [&] { ++releases; });
  std::this_thread::sleep_for(60ms);
  EXPECT_EQ(releases.load(), 0) << "nothing happened: nothing to give back";
  for (int i = 0; i < 100; ++i) idle.note_activity();
  EXPECT_TRUE(eventually([&] { return releases.load() == 1; }));
  std::this_thread::sleep_for(60ms);
  EXPECT_EQ(releases.load(), 1) << "one release per burst";
  idle.note_activity();
  EXPECT_TRUE(eventually([&] { return releases.load() == 2; }));
}

TEST(IdleHeapRelease, StopsPromptlyWhileWaiting) {
  std::atomic<int> releases{0};
  {
    IdleHeapRelease idle(std::chrono::hours(1), [&] { ++releases; });
    idle.note_activity();
  }
  EXPECT_EQ(releases.load(), 0);
}

}  // namespace
}  // namespace gpushare::http
