#pragma once
// Process-wide resources the HTTP server depends on: open files (one per connection) and how
// glibc's allocator returns freed memory to the system.

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>

namespace gpushare::http {

// Raises the soft RLIMIT_NOFILE to the hard limit; returns the soft limit now in force.
std::size_t raise_open_file_limit();

// Allocator settings for a server whose large allocations are request bodies and replies of up
// to --max-request-bytes: buffers from 1 MiB up are mmapped and so returned to the system when
// freed (glibc's default threshold rises after the first large free, after which such buffers
// would stay in the heap after a burst of large filters), and a
// bounded number of arenas, each of which otherwise keeps its own free memory.
void tune_allocator();

// Hands free heap memory back to the system (malloc_trim), at most one caller at a time; the
// others return at once.
void release_free_memory();
// How many times release_free_memory() has trimmed the heap, since the process started.
std::uint64_t free_memory_releases();

// Calls `release` once the server has been idle (no note_activity()) for `idle` after any
// activity: whatever path grew the heap (small bodies, /inspect, /metrics), what it freed goes
// back to the system when the burst is over. glibc trims only the top of the main heap on its
// own (M_TRIM_THRESHOLD); freed memory inside it and in the other arenas stays resident. One
// thread, asleep while nothing happens; note_activity() is thread-safe and takes no lock unless
// the server was idle.
class IdleHeapRelease {
 public:
  explicit IdleHeapRelease(std::chrono::milliseconds idle,
                           std::function<void()> release = release_free_memory);
  ~IdleHeapRelease();
  IdleHeapRelease(const IdleHeapRelease&) = delete;
  IdleHeapRelease& operator=(const IdleHeapRelease&) = delete;

  void note_activity();

 private:
  void run();

  const std::chrono::milliseconds idle_;
  const std::function<void()> release_;
  std::atomic<bool> active_{false};  // activity since the thread last looked
  std::mutex mutex_;                 // guards stop_; with wake_, the thread's sleep
  std::condition_variable wake_;
  bool stop_ = false;
  std::thread thread_;  // last: started once the rest is set
};

// A reserve of address space (allocated, never touched: no resident memory) given back when an
// allocation fails, just before std::bad_alloc is thrown, so that what unwinds after it can
// still allocate: nlohmann's destructors (noexcept) allocate to free a tree, and a failure
// there is std::terminate. Installs the new-handler that does it. Under RLIMIT_AS or strict
// overcommit an allocation can fail; under a cgroup's memory limit the OOM killer comes first.
void install_allocation_reserve(std::size_t bytes = 16 * 1024 * 1024);
// After a request was refused for want of memory: takes the reserve again if it can.
void rearm_allocation_reserve();
bool allocation_reserve_held();

}  // namespace gpushare::http
