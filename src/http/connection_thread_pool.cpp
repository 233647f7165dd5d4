#include "gpushare/http/connection_thread_pool.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <system_error>
#include <utility>

namespace gpushare::http {

ConnectionThreadPool::ConnectionThreadPool(std::size_t min_threads, std::size_t max_threads,
                                           std::chrono::milliseconds idle_exit)
    : min_threads_(std::min(min_threads, std::max<std::size_t>(max_threads, 1))),
      max_threads_(std::max<std::size_t>(max_threads, 1)),
      idle_exit_(idle_exit) {
  std::lock_guard lock(mutex_);
  for (std::size_t i = 0; i < min_threads_; ++i) start_worker_locked();
}

ConnectionThreadPool::~ConnectionThreadPool() {
  shutdown();
}

void ConnectionThreadPool::start_worker_locked() {
  try {
    // Everything that allocates comes before the thread starts: a thread object destroyed
    // while its thread runs (an allocation failing after the start) is std::terminate.
    auto slot = workers_.extract(workers_.emplace(std::thread::id(), std::thread()).first);
    slot.mapped() = std::thread([this] { work(); });
    slot.key() = slot.mapped().get_id();
    workers_.insert(std::move(slot));
    ++idle_;
    peak_ = std::max(peak_, workers_.size());
  } catch (const std::exception& e) {
    // Out of threads or memory: the task stays queued for the workers there are.
    spdlog::warn("http: cannot start a worker thread ({} running): {}", workers_.size(), e.what());
  }
}

void ConnectionThreadPool::enqueue(std::function<void()> task) {
  join_exited();
  std::unique_lock lock(mutex_);
  if (shutting_down_) {
    // httplib stops accepting before it shuts the queue down, so this is not expected; running
    // the task still closes its socket.
    lock.unlock();
    task();
    return;
  }
  tasks_.push_back(std::move(task));
  if (idle_ >= tasks_.size()) {
    work_ready_.notify_one();
  } else if (workers_.size() < max_threads_) {
    start_worker_locked();
  } else if (tasks_.size() == 1 || tasks_.size() % 64 == 0) {
    spdlog::warn("http: all {} connection threads busy; {} connections waiting (--http-threads)",
                 max_threads_, tasks_.size());
  }
}

void ConnectionThreadPool::work() {
  std::unique_lock lock(mutex_);
  // Counted in idle_ from its start (start_worker_locked) except while running a task, so that
  // enqueue never starts a second thread for a task a starting worker will take.
  while (true) {
    const bool woken = work_ready_.wait_for(lock, idle_exit_,
                                            [this] { return shutting_down_ || !tasks_.empty(); });
    if (!tasks_.empty()) {
      auto task = std::move(tasks_.front());
      tasks_.pop_front();
      --idle_;
      lock.unlock();
      try {
        task();
      } catch (const std::exception& e) {
        spdlog::error("http: connection task failed: {}", e.what());
      } catch (...) {
        spdlog::error("http: connection task failed");
      }
      lock.lock();
      ++idle_;
      continue;
    }
    if (shutting_down_) {
      --idle_;
      return;  // shutdown() joins us
    }
    if (!woken && workers_.size() > min_threads_) {
      // Idle too long: hand our own thread object to the next enqueue or shutdown to join
      // (room for it first: a thread object destroyed while its thread runs is terminate).
      try {
        exited_.reserve(exited_.size() + 1);
      } catch (const std::bad_alloc&) {
        continue;  // stays a worker
      }
      --idle_;
      auto self = workers_.extract(std::this_thread::get_id());
      exited_.push_back(std::move(self.mapped()));
      return;
    }
  }
}

void ConnectionThreadPool::join_exited() {
  std::vector<std::thread> exited;
  {
    std::lock_guard lock(mutex_);
    exited.swap(exited_);
  }
  for (auto& thread : exited) thread.join();
}

void ConnectionThreadPool::shutdown() {
  std::map<std::thread::id, std::thread> workers;
  {
    std::lock_guard lock(mutex_);
    shutting_down_ = true;
    workers.swap(workers_);
  }
  work_ready_.notify_all();
  for (auto& [id, thread] : workers) thread.join();
  join_exited();
}

ConnectionPoolStats ConnectionThreadPool::stats() const {
  std::lock_guard lock(mutex_);
  const std::size_t threads = workers_.size();
  const std::size_t busy = threads > idle_ ? threads - idle_ : 0;
  const std::size_t waiting = tasks_.size() > idle_ ? tasks_.size() - idle_ : 0;
  return {threads, busy, waiting, max_threads_, peak_};
}

}  // namespace gpushare::http
