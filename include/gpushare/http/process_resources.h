#pragma once
// Process-wide resources the HTTP server depends on: open files (one per connection) and how
// glibc's allocator returns freed memory to the system.

#include <cstddef>

namespace gpushare::http {

// Raises the soft RLIMIT_NOFILE to the hard limit; returns the soft limit now in force.
std::size_t raise_open_file_limit();

// Allocator settings for a server whose large allocations are request bodies and replies of up
// to --max-request-bytes: buffers from 1 MiB up are mmapped and so returned to the system when
// freed (glibc's default threshold rises to 32 MiB after the first large free, after which
// such buffers stayed in the heap: 1.35 GB resident after a burst of 40 MB filters), and a
// bounded number of arenas, each of which otherwise keeps its own free memory.
void tune_allocator();

// Hands free heap memory back to the system (malloc_trim), at most one caller at a time; the
// others return at once.
void release_free_memory();

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
