#pragma once
// Splits a watch body into its top-level JSON values. Chunk boundaries are not event boundaries:
// one event may span many chunks and one chunk may hold many events, with or without newlines.

#include <cstddef>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "gpushare/apiclient/value_end.h"

namespace gpushare::apiclient {

class FramingError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class WatchFramer {
 public:
  static constexpr std::size_t kDefaultMaxValueBytes = 64u << 20;  // far above any object

  explicit WatchFramer(std::size_t max_value_bytes = kDefaultMaxValueBytes);

  // Consumes `chunk` and appends the text of every value it completes to `out`. Only objects,
  // arrays and strings are accepted at top level (they are self-delimiting). Throws FramingError
  // for a value larger than the limit or a stray byte at top level; the framer is then unusable.
  void feed(std::string_view chunk, std::vector<std::string>& out);

  // True while the bytes of an unfinished value are buffered (e.g. when the stream ends).
  bool mid_value() const { return in_value_; }

 private:
  std::size_t max_value_bytes_;
  std::string buffer_;  // the unfinished value so far
  bool in_value_ = false;
  ValueEnd value_end_;  // where the value being read ends
  bool failed_ = false;
};

}  // namespace gpushare::apiclient
