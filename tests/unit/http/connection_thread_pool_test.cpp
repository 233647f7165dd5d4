// The HTTP server's thread pool on its own: it grows to one thread per task running at once, up
// to its limit; queues the rest; shrinks back when idle; and runs every queued task on shutdown.

#include "gpushare/http/connection_thread_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <latch>
#include <thread>

#include "support/eventually.h"

namespace gpushare::http {
namespace {

using namespace std::chrono_literals;
using gpushare::testing::eventually;

TEST(ConnectionThreadPool, GrowsToOneThreadPerBlockingTaskUpToItsLimit) {
  ConnectionThreadPool pool(/*min_threads=*/1, /*max_threads=*/6, /*idle_exit=*/60s);
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  std::atomic<int> started{0};
  for (int i = 0; i < 8; ++i) {
    pool.enqueue([&, released] {
      ++started;
      released.wait();
    });
  }
  ASSERT_TRUE(eventually([&] { return started.load() == 6; }));
  std::this_thread::sleep_for(50ms);
  EXPECT_EQ(started.load(), 6) << "more tasks ran than the limit allows";
  ConnectionPoolStats stats = pool.stats();
  EXPECT_EQ(stats.threads, 6u);
  EXPECT_EQ(stats.busy, 6u);
  EXPECT_EQ(stats.waiting, 2u);
  EXPECT_EQ(stats.max_threads, 6u);

  release.set_value();
  EXPECT_TRUE(eventually([&] { return started.load() == 8 && pool.stats().busy == 0; }));
  EXPECT_EQ(pool.stats().waiting, 0u);
  EXPECT_EQ(pool.stats().peak_threads, 6u);
}

TEST(ConnectionThreadPool, IdleThreadsAboveTheMinimumExit) {
  ConnectionThreadPool pool(/*min_threads=*/2, /*max_threads=*/10, /*idle_exit=*/100ms);
  EXPECT_EQ(pool.stats().threads, 2u);
  std::latch all_running(5);
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  for (int i = 0; i < 5; ++i) {
    pool.enqueue([&, released] {
      all_running.count_down();
      released.wait();
    });
  }
  all_running.wait();
  EXPECT_EQ(pool.stats().threads, 5u);
  release.set_value();
  EXPECT_TRUE(eventually([&] { return pool.stats().threads == 2u; })) << pool.stats().threads;
  // And it grows again on demand.
  std::atomic<int> ran{0};
  for (int i = 0; i < 3; ++i) pool.enqueue([&] { ++ran; });
  EXPECT_TRUE(eventually([&] { return ran.load() == 3; }));
}

TEST(ConnectionThreadPool, ShutdownRunsEveryQueuedTaskThenJoins) {
  std::atomic<int> ran{0};
  {
    ConnectionThreadPool pool(/*min_threads=*/0, /*max_threads=*/2, /*idle_exit=*/60s);
    for (int i = 0; i < 50; ++i) {
      pool.enqueue([&] {
        std::this_thread::sleep_for(1ms);
        ++ran;
      });
    }
    pool.shutdown();
    EXPECT_EQ(ran.load(), 50);
    EXPECT_EQ(pool.stats().threads, 0u);
    // After shutdown a task runs on the caller's thread (its socket must still be closed).
    pool.enqueue([&] { ++ran; });
    EXPECT_EQ(ran.load(), 51);
  }  // the destructor's second shutdown is harmless
}

TEST(ConnectionThreadPool, ATaskThatThrowsDoesNotKillItsWorker) {
  ConnectionThreadPool pool(/*min_threads=*/1, /*max_threads=*/1, /*idle_exit=*/60s);
  pool.enqueue([] { throw std::runtime_error("boom"); });
  std::atomic<bool> ran{false};
  pool.enqueue([&] { ran = true; });
  EXPECT_TRUE(eventually([&] { return ran.load(); }));
  EXPECT_EQ(pool.stats().threads, 1u);
}

// Many producers at once (httplib has one accept thread, but the pool must not rely on it).
TEST(ConnectionThreadPool, ConcurrentEnqueuesRunEveryTaskOnce) {
  std::atomic<int> ran{0};
  {
    ConnectionThreadPool pool(/*min_threads=*/2, /*max_threads=*/8, /*idle_exit=*/20ms);
    std::vector<std::jthread> producers;
    for (int p = 0; p < 4; ++p) {
      producers.emplace_back([&] {
        for (int i = 0; i < 500; ++i) {
          pool.enqueue([&] { ++ran; });
          if (i % 100 == 0) std::this_thread::sleep_for(30ms);  // let idle workers exit meanwhile
        }
      });
    }
    producers.clear();
    pool.shutdown();
  }
  EXPECT_EQ(ran.load(), 2000);
}

}  // namespace
}  // namespace gpushare::http
