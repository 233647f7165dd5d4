// The watch-stream framer: arbitrary bytes cut into arbitrary chunks. Framing must not depend on
// where the chunks are cut, and every value it emits must be a whole top-level value.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "gpushare/apiclient/watch_framer.h"

using gpushare::apiclient::FramingError;
using gpushare::apiclient::WatchFramer;

namespace {

[[noreturn]] void finding(const char* what) {
  std::fprintf(stderr, "FINDING: %s\n", what);
  std::abort();
}

struct Outcome {
  std::vector<std::string> values;
  bool failed = false;
  bool mid_value = false;
};

// Feeds `body` cut at the given lengths (cycled); a small limit exercises the size check.
Outcome frame(std::string_view body, const std::vector<std::size_t>& cuts, std::size_t limit) {
  Outcome outcome;
  WatchFramer framer(limit);
  std::size_t offset = 0;
  std::size_t next_cut = 0;
  try {
    while (offset < body.size()) {
      std::size_t length =
          cuts.empty() ? body.size() : std::max<std::size_t>(1, cuts[next_cut++ % cuts.size()]);
      length = std::min(length, body.size() - offset);
      framer.feed(body.substr(offset, length), outcome.values);
      offset += length;
    }
  } catch (const FramingError&) {
    outcome.failed = true;
    // A failed framer must refuse further use, not carry on from a broken state.
    try {
      framer.feed("{}", outcome.values);
      finding("framer accepted input after an error");
    } catch (const FramingError&) {
    }
  } catch (const std::exception&) {
    finding("framer threw something other than FramingError");
  }
  outcome.mid_value = framer.mid_value();
  return outcome;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 2) return 0;
  // First byte: chunking scheme; second: the size limit; the rest: the stream.
  const std::uint8_t scheme = data[0];
  const std::size_t limit = data[1] < 16 ? 16 + data[1] * 4 : WatchFramer::kDefaultMaxValueBytes;
  const std::string_view body(reinterpret_cast<const char*>(data + 2), size - 2);
  std::vector<std::size_t> cuts;
  for (std::size_t i = 0; i < 8; ++i) cuts.push_back(1 + ((scheme >> (i % 8)) & 7) * (i + 1));

  const Outcome whole = frame(body, {}, limit);
  const Outcome chunked = frame(body, cuts, limit);
  const Outcome bytewise = frame(body, {1}, limit);
  // Values completed before any error are the same however the bytes arrive; so is the error.
  if (whole.failed != chunked.failed || whole.failed != bytewise.failed)
    finding("chunking changed whether framing failed");
  if (!whole.failed) {
    if (whole.values != chunked.values || whole.values != bytewise.values)
      finding("chunking changed the values");
    if (whole.mid_value != chunked.mid_value) finding("chunking changed mid_value");
  }
  for (const std::string& value : whole.values) {
    if (value.empty()) finding("empty value emitted");
    const char first = value.front(), last = value.back();
    // Bracket kinds are not matched by the framer (the JSON parser rejects "{...]" later), so
    // only an opener and a closer are required.
    const bool framed = ((first == '{' || first == '[') && (last == '}' || last == ']')) ||
                        (first == '"' && last == '"');
    if (!framed || value.size() > limit) finding("emitted value is not one whole top-level value");
  }
  return 0;
}
