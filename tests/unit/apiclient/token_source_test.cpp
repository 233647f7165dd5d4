#include "gpushare/apiclient/token_source.h"

#include <gtest/gtest.h>

#include "test_util.h"

namespace gpushare::apiclient {
namespace {

using namespace std::chrono_literals;
using testing::FakeClock;
using testing::TempDir;

TEST(TokenSource, FixedToken) {
  TokenSource tokens("abc", {});
  EXPECT_EQ(tokens.current(), "abc");
  EXPECT_FALSE(tokens.file_backed());
  EXPECT_EQ(tokens.reload_now(), "abc");
}

TEST(TokenSource, RereadsFileOnlyAfterTheInterval) {
  TempDir dir;
  const auto file = dir.write("token", "first\n");
  FakeClock clock;
  TokenSource tokens("", file, clock.clock(), 60s);
  EXPECT_EQ(tokens.current(), "first");

  testing::write_file(file, "second");
  clock.advance(59s);
  EXPECT_EQ(tokens.current(), "first") << "re-read before the interval passed";
  clock.advance(1s);
  EXPECT_EQ(tokens.current(), "second");
}

TEST(TokenSource, FailedReadKeepsTheOldToken) {
  TempDir dir;
  const auto file = dir.write("token", "good");
  FakeClock clock;
  TokenSource tokens("", file, clock.clock(), 60s);
  std::filesystem::remove(file);
  clock.advance(61s);
  EXPECT_EQ(tokens.current(), "good");
  testing::write_file(file, "   \n");  // empty after trimming counts as a failed read
  clock.advance(61s);
  EXPECT_EQ(tokens.current(), "good");
  testing::write_file(file, "new");
  clock.advance(61s);
  EXPECT_EQ(tokens.current(), "new");
}

TEST(TokenSource, FileWinsOverInitialTokenAndReloadIsImmediate) {
  TempDir dir;
  const auto file = dir.write("token", "from-file");
  FakeClock clock;
  TokenSource tokens("inline", file, clock.clock(), 60s);
  EXPECT_EQ(tokens.current(), "from-file");
  testing::write_file(file, "rotated");
  EXPECT_EQ(tokens.current(), "from-file");
  EXPECT_EQ(tokens.reload_now(), "rotated");  // no clock movement needed
  EXPECT_EQ(tokens.current(), "rotated");
}

}  // namespace
}  // namespace gpushare::apiclient
