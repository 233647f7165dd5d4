#pragma once
// One JSON parser kept warm between large request bodies. A filter with full Node objects
// (kube-scheduler's nodeCacheCapable: false) is ~38 MB at 5 000 nodes and grows a parser to
// ~65 MB of touched buffers; fresh buffers cost a page fault per 4 KiB each time, a third of such
// a filter's CPU. The next large body reuses the kept parser; after `keep` without one, a
// background thread frees it, so an idle extender gives the memory back. A parser is kept only
// when it is the last one out: while large bodies are decoded at once, each gets its own and
// those given back are freed, so an idle parser never adds to the peak of a burst (the body
// budget bounds that peak, at about 4 x the bodies in flight).

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <memory>
#include <mutex>
#include <thread>

namespace gpushare::json {
class Parser;
}

namespace gpushare::extender {

class WarmParser {
 public:
  explicit WarmParser(std::chrono::milliseconds keep);
  ~WarmParser();
  WarmParser(const WarmParser&) = delete;
  WarmParser& operator=(const WarmParser&) = delete;

  // The kept parser, or a new one. Each must be given back.
  std::unique_ptr<json::Parser> take();
  // Keeps `parser` for `keep` if no other is out (nor kept); else frees it here.
  void give_back(std::unique_ptr<json::Parser> parser);
  // Whether a parser is kept now (for tests).
  bool holds() const;

 private:
  void release_when_idle(std::stop_token stop);

  const std::chrono::milliseconds keep_;
  mutable std::mutex mutex_;  // guards kept_, out_ and release_at_
  std::condition_variable_any changed_;
  std::unique_ptr<json::Parser> kept_;
  std::size_t out_ = 0;  // taken and not yet given back
  std::chrono::steady_clock::time_point release_at_;
  std::jthread releaser_;  // last: started after, and stopped before, what it reads
};

}  // namespace gpushare::extender
