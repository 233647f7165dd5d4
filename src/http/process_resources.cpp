#include "gpushare/http/process_resources.h"

#include <malloc.h>
#include <sys/resource.h>

#include <atomic>
#include <cstdlib>
#include <new>

namespace gpushare::http {

std::size_t raise_open_file_limit() {
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) != 0) return 1024;
  if (limit.rlim_cur < limit.rlim_max) {
    rlimit raised = limit;
    raised.rlim_cur = limit.rlim_max;
    if (::setrlimit(RLIMIT_NOFILE, &raised) == 0) limit = raised;
  }
  return limit.rlim_cur == RLIM_INFINITY ? std::size_t{1} << 20
                                         : static_cast<std::size_t>(limit.rlim_cur);
}

void tune_allocator() {
  ::mallopt(M_MMAP_THRESHOLD, 1024 * 1024);
  ::mallopt(M_TRIM_THRESHOLD, 8 * 1024 * 1024);
  ::mallopt(M_ARENA_MAX, 4);
}

namespace {

std::atomic<void*> reserve{nullptr};
std::atomic<std::size_t> reserve_bytes{0};

// The new-handler: the allocation that failed still fails (its caller unwinds), but with the
// reserve freed what unwinds can allocate.
void give_back_reserve() {
  if (void* block = reserve.exchange(nullptr)) std::free(block);
  throw std::bad_alloc();
}

}  // namespace

void install_allocation_reserve(std::size_t bytes) {
  reserve_bytes = bytes;
  rearm_allocation_reserve();
  std::set_new_handler(give_back_reserve);
}

void rearm_allocation_reserve() {
  if (reserve.load() != nullptr || reserve_bytes.load() == 0) return;
  void* block = std::malloc(reserve_bytes.load());
  void* none = nullptr;
  if (block != nullptr && !reserve.compare_exchange_strong(none, block)) std::free(block);
}

bool allocation_reserve_held() {
  return reserve.load() != nullptr;
}

namespace {
std::atomic<std::uint64_t> releases{0};
}  // namespace

void release_free_memory() {
  static std::atomic<bool> trimming{false};
  if (trimming.exchange(true)) return;
  ::malloc_trim(0);
  ++releases;
  trimming = false;
}

std::uint64_t free_memory_releases() {
  return releases.load();
}

IdleHeapRelease::IdleHeapRelease(std::chrono::milliseconds idle, std::function<void()> release)
    : idle_(idle), release_(std::move(release)), thread_([this] { run(); }) {}

IdleHeapRelease::~IdleHeapRelease() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

void IdleHeapRelease::note_activity() {
  if (active_.exchange(true)) return;  // the thread knows already
  std::lock_guard lock(mutex_);        // it may be asleep until the next activity
  wake_.notify_all();
}

void IdleHeapRelease::run() {
  std::unique_lock lock(mutex_);
  while (!stop_) {
    // Asleep until something happens.
    wake_.wait(lock, [&] { return stop_ || active_.load(); });
    // Then until a whole `idle_` passes without activity.
    while (!stop_ && active_.exchange(false)) wake_.wait_for(lock, idle_, [&] { return stop_; });
    if (stop_) break;
    lock.unlock();
    release_();
    lock.lock();
  }
}

}  // namespace gpushare::http
