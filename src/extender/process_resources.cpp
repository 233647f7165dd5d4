#include "gpushare/extender/process_resources.h"

#include <malloc.h>
#include <sys/resource.h>

#include <atomic>

namespace gpushare::extender {

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

void release_free_memory() {
  static std::atomic<bool> trimming{false};
  if (trimming.exchange(true)) return;
  ::malloc_trim(0);
  trimming = false;
}

}  // namespace gpushare::extender
