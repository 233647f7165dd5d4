#pragma once
// The threads behind the extender's HTTP server: one per open connection, grown on demand.
//
// httplib runs each accepted connection as one task that loops over its keep-alive requests and
// waits up to the keep-alive timeout for the next one. With httplib's fixed ThreadPool, N idle
// keep-alive connections (kube-scheduler's Go client keeps up to 25, plus probes and scrapes)
// pin all N workers, and the next connection waits until one of them times out: the extender
// went deaf for up to 90 s after 8 idle connections. Here a new thread starts whenever no worker
// is free, up to max_threads; threads above min_threads exit after idle_exit without work.

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

namespace gpushare::http {

struct ConnectionPoolStats {
  std::size_t threads = 0;  // workers alive
  std::size_t busy = 0;     // workers serving a connection
  std::size_t waiting = 0;  // accepted connections no worker has picked up yet
  std::size_t max_threads = 0;
  std::size_t peak_threads = 0;  // most workers alive at once
};

class ConnectionThreadPool {
 public:
  ConnectionThreadPool(std::size_t min_threads, std::size_t max_threads,
                       std::chrono::milliseconds idle_exit = std::chrono::seconds(30));
  ~ConnectionThreadPool();
  ConnectionThreadPool(const ConnectionThreadPool&) = delete;
  ConnectionThreadPool& operator=(const ConnectionThreadPool&) = delete;

  void enqueue(std::function<void()> task);
  // Runs the tasks already queued, then joins every worker. A task enqueued later runs on the
  // caller's thread.
  void shutdown();

  ConnectionPoolStats stats() const;

 private:
  void start_worker_locked();
  void work();
  void join_exited();

  const std::size_t min_threads_;
  const std::size_t max_threads_;
  const std::chrono::milliseconds idle_exit_;

  mutable std::mutex mutex_;  // guards everything below
  std::condition_variable work_ready_;
  std::deque<std::function<void()>> tasks_;
  std::map<std::thread::id, std::thread> workers_;
  std::vector<std::thread>
      exited_;            // workers that returned; joined by the next enqueue or shutdown
  std::size_t idle_ = 0;  // workers not running a task (including starting ones)
  std::size_t peak_ = 0;
  bool shutting_down_ = false;
};

}  // namespace gpushare::http
