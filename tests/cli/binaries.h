#pragma once
// The built programs, run as a user runs them (tests/cli).

#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "fakeapi/tests/test_helpers.h"
#include "support/silent_listener.h"

namespace gpushare::testing::cli_test {

using namespace fakeapi_test;

// The path of a program built next to the tests; skips the test when it was not built.
inline std::string binary(const std::string& name) {
  const std::filesystem::path path = std::filesystem::path(GPUSHARE_BINARY_DIR) / name;
  return std::filesystem::exists(path) ? path.string() : std::string();
}

// What a user sees: both streams (the extender logs to stderr, CLI11 errors go there too).
inline std::string seen(const RunResult& result) {
  return result.out + result.err;
}

// A failure exits non-zero on purpose: not through abort() or std::terminate (134, 139, ...).
inline void expect_clean_failure(const RunResult& result, int code) {
  ASSERT_TRUE(result.exit_code.has_value()) << "timed out: " << seen(result);
  EXPECT_EQ(*result.exit_code, code) << seen(result);
  EXPECT_EQ(seen(result).find("terminate called"), std::string::npos) << seen(result);
}

}  // namespace gpushare::testing::cli_test
