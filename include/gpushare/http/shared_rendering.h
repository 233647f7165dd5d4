#pragma once
// A reply rendered once and shared by the concurrent requests for it (/inspect: megabytes of JSON
// from an nlohmann tree several times that size on a large cluster), so that concurrent
// requests cannot each build a tree and exhaust memory. At most one rendering runs at a time; a
// request arriving meanwhile waits for it (up to max_waiting requests, beyond which get() refuses:
// the caller answers 503). A rendering serves every request that arrived before it began, and is
// reused while the state it was made from (the key) is unchanged and it is younger than max_age (0:
// only the former). The memory /inspect holds is therefore one tree and at most two replies,
// whatever the concurrency. Thread-safe.

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>

namespace gpushare::http {

// The state a rendering reflects: counters that only grow (the model store's generation, the
// rejection log's sequence...). A rendering made at key k serves a request made at key r when
// every counter of k is at least r's.
struct RenderKey {
  std::uint64_t model = 0;
  std::uint64_t rejections = 0;
  std::string subject;  // what is rendered (a node's name); a rendering serves only its own
  bool covers(const RenderKey& request) const {
    return subject == request.subject && model >= request.model && rejections >= request.rejections;
  }
};

class SharedRendering {
 public:
  using Clock = std::chrono::steady_clock;
  // The reply as rendered, and gzip-compressed once, when a client first accepts it.
  class Rendered {
   public:
    explicit Rendered(std::string identity) : identity_(std::move(identity)) {}
    const std::string& identity() const { return identity_; }
    // Empty if it could not be compressed. Thread-safe.
    const std::string& gzip() const;

   private:
    std::string identity_;
    mutable std::once_flag gzip_once_;
    mutable std::string gzip_;
  };
  using Reply = std::shared_ptr<const Rendered>;

  SharedRendering(std::size_t max_waiting, Clock::duration max_age)
      : max_waiting_(max_waiting), max_age_(max_age) {}

  // The reply for state `key`: shared, or rendered now by `render` (on this thread, outside the
  // lock). nullptr when max_waiting requests are already waiting. An exception from `render`
  // reaches its caller; the requests waiting for it then render themselves.
  Reply get(const RenderKey& key, const std::function<std::string()>& render);

  struct Stats {
    std::uint64_t renders = 0;     // renderings made
    std::uint64_t shared = 0;      // requests answered with a rendering made for another
    std::uint64_t refused = 0;     // requests refused (max_waiting already waiting)
    std::size_t most_at_once = 0;  // most renderings ever running at the same time
    std::size_t waiting = 0;       // requests waiting for a rendering now
  };
  Stats stats() const;

 private:
  bool fresh_locked(const RenderKey& key, Clock::time_point arrived) const;

  const std::size_t max_waiting_;
  const Clock::duration max_age_;
  mutable std::mutex mutex_;  // guards what follows
  std::condition_variable rendered_;
  Reply reply_;
  RenderKey reply_key_;
  Clock::time_point reply_time_{};     // when it was finished
  Clock::time_point reply_started_{};  // when it was begun
  std::size_t rendering_ = 0;          // 0 or 1
  std::size_t waiting_ = 0;
  std::uint64_t finished_ = 0;  // renderings finished or failed, for the waiters
  Stats stats_;
};

}  // namespace gpushare::http
