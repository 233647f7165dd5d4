#include "gpushare/wire/warm_parser.h"

#include <utility>

#include "gpushare/json/document.h"

namespace gpushare::wire {

WarmParser::WarmParser(std::chrono::milliseconds keep, std::size_t parsers)
    : keep_(keep),
      parsers_(parsers == 0 ? 1 : parsers),
      releaser_([this](std::stop_token stop) { release_when_idle(stop); }) {}

WarmParser::~WarmParser() {
  releaser_.request_stop();
  releaser_.join();
}

std::unique_ptr<json::Parser> WarmParser::take() {
  {
    std::unique_lock lock(mutex_);
    ++waiting_;
    returned_.wait(lock, [this] { return lent_ < parsers_; });
    --waiting_;
    ++lent_;
    // The one given back last: the warmest, and the older ones are left to the releaser.
    if (!kept_.empty()) {
      std::unique_ptr<json::Parser> parser = std::move(kept_.back().parser);
      kept_bytes_ -= kept_.back().bytes;
      kept_.pop_back();
      return parser;
    }
  }
  // Not under the lock: its place is counted in lent_, and allocation may throw.
  try {
    return std::make_unique<json::Parser>();
  } catch (...) {
    give_back(nullptr);
    throw;
  }
}

void WarmParser::give_back(std::unique_ptr<json::Parser> parser) {
  bool wake_taker = false;
  bool wake_releaser = false;
  {
    std::lock_guard lock(mutex_);
    --lent_;
    wake_taker = waiting_ > 0;
    if (parser) {
      const std::size_t bytes = parser->allocated_bytes();
      kept_.push_back({std::move(parser), bytes, std::chrono::steady_clock::now()});
      kept_bytes_ += bytes;
      wake_releaser = std::exchange(releaser_idle_, false);
    }
  }
  if (wake_taker) returned_.notify_one();
  if (wake_releaser) changed_.notify_all();
}

bool WarmParser::holds() const {
  std::lock_guard lock(mutex_);
  return !kept_.empty();
}

std::size_t WarmParser::waiting() const {
  std::lock_guard lock(mutex_);
  return waiting_;
}

std::size_t WarmParser::kept_bytes() const {
  std::lock_guard lock(mutex_);
  return kept_bytes_;
}

void WarmParser::release_when_idle(std::stop_token stop) {
  std::unique_lock lock(mutex_);
  while (!stop.stop_requested()) {
    if (kept_.empty()) {
      releaser_idle_ = true;
      changed_.wait(lock, stop, [this] { return !kept_.empty(); });
      releaser_idle_ = false;
      continue;
    }
    // The oldest kept parser's deadline. Taking or giving back meanwhile does not wake this
    // thread: it re-reads the oldest when the deadline passes.
    const auto release_at = kept_.front().given_back + keep_;
    if (std::chrono::steady_clock::now() < release_at) {
      changed_.wait_until(lock, stop, release_at, [] { return false; });
      continue;
    }
    std::unique_ptr<json::Parser> idle = std::move(kept_.front().parser);
    kept_bytes_ -= kept_.front().bytes;
    kept_.erase(kept_.begin());
    lock.unlock();
    idle.reset();  // a large body's parser holds about twice that body: freed outside the lock
    lock.lock();
  }
}

}  // namespace gpushare::wire
