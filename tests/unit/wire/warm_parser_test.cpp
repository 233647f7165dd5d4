// WarmParser lends one parser to large request bodies, one at a time, keeps it between them and
// frees it when none came for its keep time.

#include "gpushare/wire/warm_parser.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "gpushare/json/document.h"
#include "support/eventually.h"

namespace gpushare::wire {
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

// Two large bodies decoded at once share the one parser (about twice its body's size): the
// second waits for it rather than growing a parser of its own.
TEST(WarmParser, LargeBodiesAreDecodedOneAtATime) {
  WarmParser warm(1h);
  std::unique_ptr<json::Parser> first = warm.take();
  json::Parser* const address = first.get();
  std::atomic<bool> second_has_it = false;
  json::Parser* second_got = nullptr;
  std::jthread second([&] {
    std::unique_ptr<json::Parser> parser = warm.take();
    second_got = parser.get();
    second_has_it = true;
    warm.give_back(std::move(parser));
  });
  EXPECT_TRUE(testing::eventually([&] { return warm.waiting() == 1 || second_has_it; }));
  EXPECT_FALSE(second_has_it);  // waits while the first has the parser
  warm.give_back(std::move(first));
  second.join();
  EXPECT_TRUE(second_has_it);
  EXPECT_EQ(second_got, address);  // the same parser, not a second one
  EXPECT_TRUE(warm.holds());
}

// A caller whose parser could not be made (out of memory) must not leave the others waiting.
TEST(WarmParser, AParserGivenBackEmptyStillLetsTheNextOneIn) {
  WarmParser warm(1h);
  std::unique_ptr<json::Parser> first = warm.take();
  first.reset();
  warm.give_back(nullptr);
  EXPECT_FALSE(warm.holds());
  std::unique_ptr<json::Parser> next = warm.take();  // would hang if still taken
  EXPECT_NE(next, nullptr);
  warm.give_back(std::move(next));
}

// The kept parser grows to the largest body seen, no further: its padded copy grew by
// std::string's doubling (a body after a smaller one would leave twice the smaller reserved).
TEST(WarmParser, AParserGrownByALargerBodyHoldsNoMoreThanThatBody) {
  WarmParser warm(1h);
  std::unique_ptr<json::Parser> parser = warm.take();
  auto text_of = [](std::size_t size) { return '"' + std::string(size - 2, 'x') + '"'; };
  constexpr std::size_t kSmaller = 3 << 20;
  constexpr std::size_t kLarger = 4 << 20;
  json::Value value;
  ASSERT_EQ(parser->parse(text_of(kSmaller), value), simdjson::SUCCESS);
  warm.give_back(std::move(parser));
  parser = warm.take();
  ASSERT_EQ(parser->parse(text_of(kLarger), value), simdjson::SUCCESS);
  EXPECT_GE(parser->capacity(), kLarger);
  EXPECT_LE(parser->capacity(), kLarger + 4096);
  EXPECT_LE(parser->copy_capacity(), kLarger + 4096);
  // A smaller body after it reuses what is there.
  ASSERT_EQ(parser->parse(text_of(kSmaller), value), simdjson::SUCCESS);
  EXPECT_LE(parser->copy_capacity(), kLarger + 4096);
  warm.give_back(std::move(parser));
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
}  // namespace gpushare::wire
