#include "gpushare/extender/wire/warm_parser.h"

#include "gpushare/json/document.h"

namespace gpushare::extender {

WarmParser::WarmParser(std::chrono::milliseconds keep)
    : keep_(keep), releaser_([this](std::stop_token stop) { release_when_idle(stop); }) {}

WarmParser::~WarmParser() {
  releaser_.request_stop();
  releaser_.join();
}

std::unique_ptr<json::Parser> WarmParser::take() {
  {
    std::unique_lock lock(mutex_);
    ++waiting_;
    returned_.wait(lock, [this] { return !out_; });
    --waiting_;
    out_ = true;
    if (kept_) return std::move(kept_);
  }
  // Not under the lock: nobody else may take it meanwhile (out_), and allocation may throw.
  try {
    return std::make_unique<json::Parser>();
  } catch (...) {
    give_back(nullptr);
    throw;
  }
}

void WarmParser::give_back(std::unique_ptr<json::Parser> parser) {
  {
    std::lock_guard lock(mutex_);
    out_ = false;
    if (parser) {
      kept_ = std::move(parser);
      release_at_ = std::chrono::steady_clock::now() + keep_;
    }
  }
  returned_.notify_one();
  changed_.notify_all();
}

bool WarmParser::holds() const {
  std::lock_guard lock(mutex_);
  return kept_ != nullptr;
}

std::size_t WarmParser::waiting() const {
  std::lock_guard lock(mutex_);
  return waiting_;
}

void WarmParser::release_when_idle(std::stop_token stop) {
  std::unique_lock lock(mutex_);
  while (!stop.stop_requested()) {
    if (!kept_) {
      changed_.wait(lock, stop, [this] { return kept_ != nullptr; });
      continue;
    }
    const auto release_at = release_at_;
    // Wakes when the deadline passes, or early when the parser is taken or given back anew.
    changed_.wait_until(lock, stop, release_at,
                        [&] { return !kept_ || release_at_ != release_at; });
    if (kept_ && release_at_ == release_at && std::chrono::steady_clock::now() >= release_at) {
      std::unique_ptr<json::Parser> idle = std::move(kept_);
      lock.unlock();
      idle.reset();  // frees ~75 MB: not under the lock
      lock.lock();
    }
  }
}

}  // namespace gpushare::extender
