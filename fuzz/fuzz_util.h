#pragma once
// Shared by the libFuzzer targets: what counts as a finding.
//
// Decoders may reject input only with kube::BadInput (the server answers 400 with a message
// naming the field); any other exception would surface as a 500 "internal error", and a crash,
// hang, leak or sanitizer report is a bug. So: BadInput is expected, anything else aborts.

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string_view>
#include <typeinfo>

#include "gpushare/kube/json_access.h"

namespace gpushare::fuzz {

[[noreturn]] inline void finding(std::string_view what, const char* detail) {
  std::fprintf(stderr, "FINDING: %.*s: %s\n", static_cast<int>(what.size()), what.data(), detail);
  std::abort();
}

// Runs `fn`; returns true if it finished, false if it rejected the input with BadInput.
template <typename Fn>
bool accepts(std::string_view target, Fn&& fn) {
  try {
    fn();
    return true;
  } catch (const kube::BadInput& e) {
    // GPUSHARE_FUZZ_VERBOSE=1 shows why each input was rejected: for checking that the seeds in
    // fuzz/corpus get past the decoders rather than bouncing off the first field.
    static const bool verbose = std::getenv("GPUSHARE_FUZZ_VERBOSE") != nullptr;
    if (verbose) {
      std::fprintf(stderr, "%.*s rejected: %s\n", static_cast<int>(target.size()), target.data(),
                   e.what());
    }
    return false;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "FINDING: %.*s threw %s instead of BadInput\n",
                 static_cast<int>(target.size()), target.data(), typeid(e).name());
    finding(target, e.what());
  }
}

}  // namespace gpushare::fuzz
