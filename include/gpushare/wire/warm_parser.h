#pragma once
// Request parsers kept warm between request bodies, lent one per decode, at most `parsers` at
// once: a caller beyond that waits for one to come back (a decode is short beside a request's
// other work). Two are made in wire_decode.cpp:
//
// - one parser for bodies over 1 MiB. A filter with full Node objects (kube-scheduler's
//   nodeCacheCapable: false) grows a parser to about twice the body in touched buffers, and
//   fresh buffers would cost a page fault per 4 KiB each time. However many large bodies are in
//   flight (the body budget bounds those), one parser's memory is added to them, not one per
//   body.
// - a few parsers for the bodies up to 1 MiB (every filter and prioritize), instead of one per
//   HTTP worker thread: the count, not --http-threads, bounds what they hold.
//
// A kept parser is freed by a background thread once it has not been lent for `keep`: an idle
// extender gives the memory back, and a pool that a burst grew shrinks back to what the load
// after it uses.

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace gpushare::json {
class Parser;
}

namespace gpushare::wire {

class WarmParser {
 public:
  explicit WarmParser(std::chrono::milliseconds keep, std::size_t parsers = 1);
  ~WarmParser();
  WarmParser(const WarmParser&) = delete;
  WarmParser& operator=(const WarmParser&) = delete;

  // A parser (the one given back last, or new), once fewer than `parsers` are lent: waits
  // meanwhile. Give it back.
  std::unique_ptr<json::Parser> take();
  // Keeps `parser` for `keep` and lets the next caller waiting in take() have it.
  void give_back(std::unique_ptr<json::Parser> parser);
  // Whether a parser is kept now, and how many callers wait in take() (for tests).
  bool holds() const;
  std::size_t waiting() const;
  // The bytes the kept parsers hold (json::Parser::allocated_bytes); lent ones are not counted.
  std::size_t kept_bytes() const;

 private:
  struct Kept {
    std::unique_ptr<json::Parser> parser;
    std::size_t bytes;
    std::chrono::steady_clock::time_point given_back;
  };
  void release_when_idle(std::stop_token stop);

  const std::chrono::milliseconds keep_;
  const std::size_t parsers_;
  // Guards kept_, kept_bytes_, lent_, waiting_ and releaser_idle_.
  mutable std::mutex mutex_;
  std::condition_variable_any changed_;   // for the releaser: a parser is kept again
  std::condition_variable_any returned_;  // for take(): a parser is back
  std::vector<Kept> kept_;                // oldest given back first; lent from the back
  std::size_t kept_bytes_ = 0;
  std::size_t lent_ = 0;  // taken and not yet given back
  std::size_t waiting_ = 0;
  // The releaser waits for kept_ to fill, not for a deadline: only then does give_back wake it,
  // so a busy pool costs it no wake-up per request.
  bool releaser_idle_ = false;
  std::jthread releaser_;  // last: started after, and stopped before, what it reads
};

}  // namespace gpushare::wire
