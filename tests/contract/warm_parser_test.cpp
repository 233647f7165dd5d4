// WarmParser keeps one parser between large request bodies and frees it when none came for its
// keep time; a second parser given back while one is kept is freed at once.

#include "gpushare/extender/wire/warm_parser.h"

#include <gtest/gtest.h>

#include "gpushare/json/document.h"
#include "support/eventually.h"

namespace gpushare::extender {
namespace {

using namespace std::chrono_literals;

TEST(WarmParser, TheParserGivenBackIsTheOneTakenNext) {
  WarmParser warm(1h);
  std::unique_ptr<json::Parser> first = warm.take();
  json::Parser* const address = first.get();
  EXPECT_FALSE(warm.holds());
  warm.give_back(std::move(first));
  EXPECT_TRUE(warm.holds());
  const std::unique_ptr<json::Parser> again = warm.take();
  EXPECT_EQ(again.get(), address);
  EXPECT_FALSE(warm.holds());
}

TEST(WarmParser, OnlyTheLastOneOutIsKept) {
  WarmParser warm(1h);
  std::unique_ptr<json::Parser> a = warm.take();
  std::unique_ptr<json::Parser> b = warm.take();
  EXPECT_NE(a.get(), b.get());   // two large bodies at once get two parsers
  warm.give_back(std::move(a));  // freed: b is still out, an idle parser would add to the peak
  EXPECT_FALSE(warm.holds());
  json::Parser* const last = b.get();
  warm.give_back(std::move(b));
  EXPECT_TRUE(warm.holds());
  std::unique_ptr<json::Parser> c = warm.take();
  EXPECT_EQ(c.get(), last);
  EXPECT_FALSE(warm.holds());
  warm.give_back(std::move(c));
}

TEST(WarmParser, AnIdleParserIsFreedAfterTheKeepTime) {
  WarmParser warm(20ms);
  warm.give_back(warm.take());
  EXPECT_TRUE(testing::eventually([&] { return !warm.holds(); }));
}

// Fails by hanging (ctest's time-out): the destructor must stop the releaser, not wait an hour.
TEST(WarmParser, AParserKeptAtDestructionIsFreedWithoutWaiting) {
  auto warm = std::make_unique<WarmParser>(1h);
  warm->give_back(warm->take());
  EXPECT_TRUE(warm->holds());
  warm.reset();
}

}  // namespace
}  // namespace gpushare::extender
