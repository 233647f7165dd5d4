#pragma once
// The most recent filter rejections, for /inspect and the web view. Thread-safe, bounded.

#include <cstdint>
#include <deque>
#include <mutex>
#include <string>
#include <vector>

#include "gpushare/inspect/document.h"

namespace gpushare::service {

// A filter rejection, as /inspect's recentRejections lists it (inspect/document.h).
using Rejection = inspect::Rejection;

class RejectionLog {
 public:
  explicit RejectionLog(std::size_t capacity = 200) : capacity_(capacity) {}

  void add(Rejection rejection) {
    std::lock_guard lock(mutex_);
    if (entries_.size() == capacity_) entries_.pop_front();
    entries_.push_back(std::move(rejection));
    ++added_;
  }
  // Entries ever added: unchanged, recent() is as it was.
  std::uint64_t added() const {
    std::lock_guard lock(mutex_);
    return added_;
  }
  // How many entries it keeps (the newest).
  std::size_t capacity() const { return capacity_; }
  // Newest first.
  std::vector<Rejection> recent() const {
    std::lock_guard lock(mutex_);
    return {entries_.rbegin(), entries_.rend()};
  }

 private:
  mutable std::mutex mutex_;  // guards entries_ and added_
  std::size_t capacity_;
  std::deque<Rejection> entries_;
  std::uint64_t added_ = 0;
};

}  // namespace gpushare::service
