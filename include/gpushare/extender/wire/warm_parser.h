#pragma once
// The one JSON parser of large request bodies, kept warm between them. A filter with full Node
// objects (kube-scheduler's nodeCacheCapable: false) is ~38 MB at 5 000 nodes and grows a parser
// to ~75 MB of touched buffers (about twice the body); fresh buffers cost a page fault per 4 KiB
// each time, a third of such a filter's CPU. Large bodies are decoded one at a time with it: a
// body that arrives while another is being decoded waits for the parser (a decode takes tens of
// milliseconds), so however many large bodies are in flight (the body budget bounds those), one
// parser's memory is added to them, not one per body. After `keep` without a large body, a
// background thread frees it, so an idle extender gives the memory back.

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

  // The parser (kept, or new), once no other caller has it: waits meanwhile. Give it back.
  std::unique_ptr<json::Parser> take();
  // Keeps `parser` for `keep` and lets the next caller waiting in take() have it.
  void give_back(std::unique_ptr<json::Parser> parser);
  // Whether a parser is kept now, and how many callers wait in take() (for tests).
  bool holds() const;
  std::size_t waiting() const;

 private:
  void release_when_idle(std::stop_token stop);

  const std::chrono::milliseconds keep_;
  mutable std::mutex mutex_;              // guards kept_, out_, waiting_ and release_at_
  std::condition_variable_any changed_;   // for the releaser: kept_ or release_at_ changed
  std::condition_variable_any returned_;  // for take(): the parser is back
  std::unique_ptr<json::Parser> kept_;
  bool out_ = false;  // taken and not yet given back
  std::size_t waiting_ = 0;
  std::chrono::steady_clock::time_point release_at_;
  std::jthread releaser_;  // last: started after, and stopped before, what it reads
};

}  // namespace gpushare::extender
