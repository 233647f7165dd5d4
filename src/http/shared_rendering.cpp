#include "gpushare/http/shared_rendering.h"

#include <httplib.h>

#include <algorithm>

namespace gpushare::http {

bool SharedRendering::fresh_locked(const RenderKey& key, Clock::time_point arrived) const {
  if (!reply_ || reply_key_.subject != key.subject) return false;
  // Begun after the request arrived: it shows all the request could ask for.
  if (reply_started_ >= arrived) return true;
  return reply_key_.covers(key) && Clock::now() - reply_time_ <= max_age_;
}

SharedRendering::Reply SharedRendering::get(const RenderKey& key,
                                            const std::function<std::string()>& render) {
  const Clock::time_point arrived = Clock::now();
  std::unique_lock lock(mutex_);
  for (;;) {
    if (fresh_locked(key, arrived)) {
      ++stats_.shared;
      return reply_;
    }
    if (rendering_ == 0) break;
    if (waiting_ >= max_waiting_) {
      ++stats_.refused;
      return nullptr;
    }
    // The rendering under way may have begun before this request's state: wait for it, then
    // look again (it may serve us, or we render next).
    ++waiting_;
    const std::uint64_t round = finished_;
    rendered_.wait(lock, [&] { return finished_ != round; });
    --waiting_;
  }
  ++rendering_;
  stats_.most_at_once = std::max(stats_.most_at_once, rendering_);
  ++stats_.renders;
  const Clock::time_point started = Clock::now();
  lock.unlock();
  struct Finish {
    SharedRendering& self;
    ~Finish() {
      std::lock_guard guard(self.mutex_);
      --self.rendering_;
      ++self.finished_;
      self.rendered_.notify_all();
    }
  };
  Reply reply;
  {
    Finish finish{*this};
    reply = std::make_shared<const Rendered>(render());
    std::lock_guard guard(mutex_);
    reply_ = reply;
    reply_key_ = key;
    reply_time_ = Clock::now();
    reply_started_ = started;
  }
  return reply;
}

const std::string& SharedRendering::Rendered::gzip() const {
  std::call_once(gzip_once_, [this] {
    httplib::detail::gzip_compressor compressor;
    std::string out;
    out.reserve(identity_.size() / 8);
    const bool done = compressor.compress(identity_.data(), identity_.size(), true,
                                          [&out](const char* data, std::size_t size) {
                                            out.append(data, size);
                                            return true;
                                          });
    if (done) gzip_ = std::move(out);
  });
  return gzip_;
}

SharedRendering::Stats SharedRendering::stats() const {
  std::lock_guard lock(mutex_);
  Stats stats = stats_;
  stats.waiting = waiting_;
  return stats;
}

}  // namespace gpushare::http
