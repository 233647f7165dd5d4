// What the request parsers keep between requests is bounded by how many there are, not by how
// many HTTP worker threads decoded a body: a parser per worker thread, never freed, would hold a
// multiple of the largest body each, as many as --http-threads.

#include <gtest/gtest.h>

#include <algorithm>
#include <barrier>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "gpushare/json/document.h"
#include "gpushare/kube/resource_names.h"
#include "gpushare/wire/warm_parser.h"
#include "gpushare/wire/wire_decode.h"
#include "support/eventually.h"

namespace gpushare::wire {
namespace {

using namespace std::chrono_literals;

constexpr std::size_t kSmallBodyLimit = std::size_t{1} << 20;
// As many as cores, 4 to 16: the bound docs/hardening.md states.
std::size_t small_parsers() {
  return std::clamp<std::size_t>(std::thread::hardware_concurrency(), 4, 16);
}

// A filter of `bytes` bytes or a little less, a pod and `names` NodeNames, as kube-scheduler
// sends it.
std::string filter_body(std::size_t bytes, std::size_t& names) {
  std::string body =
      R"({"Pod":{"metadata":{"name":"p","namespace":"default","uid":"u"}},"NodeNames":[)";
  for (names = 0; body.size() + 24 < bytes; ++names) {
    if (names > 0) body += ',';
    body += "\"node-" + std::to_string(100000 + names) + '"';
  }
  body += "]}";
  return body;
}

// What one parser holds at most after a small body: grown by a 1 MiB text through its padded
// copy.
std::size_t largest_small_parser_bytes() {
  json::Parser parser;
  json::Value value;
  const std::string text = '"' + std::string(kSmallBodyLimit - 2, 'x') + '"';
  EXPECT_EQ(parser.parse(text, value), simdjson::SUCCESS);
  return parser.allocated_bytes();
}

std::size_t grown_parser_bytes(WarmParser& pool, std::size_t text_bytes) {
  std::unique_ptr<json::Parser> parser = pool.take();
  json::Value value;
  EXPECT_EQ(parser->parse('"' + std::string(text_bytes - 2, 'x') + '"', value), simdjson::SUCCESS);
  const std::size_t bytes = parser->allocated_bytes();
  pool.give_back(std::move(parser));
  return bytes;
}

TEST(ParserMemory, AParserCountsTheBuffersItGrewForTheLargestText) {
  json::Parser parser;
  const std::size_t fresh = parser.allocated_bytes();
  json::Value value;
  ASSERT_EQ(parser.parse('"' + std::string(900 << 10, 'x') + '"', value), simdjson::SUCCESS);
  // simdjson's tape, structural positions and strings: 13 to 16 bytes per byte, and the copy.
  EXPECT_GT(parser.allocated_bytes(), fresh + 13 * (900 << 10));
  EXPECT_LT(parser.allocated_bytes(), fresh + 16 * (900 << 10));
  parser.shrink(4096);
  EXPECT_EQ(parser.allocated_bytes(), fresh);
}

// 48 worker threads decode ~900 KiB filters at once: the parsers they leave behind are the
// pool's few, not one per thread.
TEST(ParserMemory, ManyThreadsDecodingBodiesJustUnderTheLimitKeepAtMostTheBound) {
  std::size_t names = 0;
  const std::string body = filter_body(900 << 10, names);
  ASSERT_LE(body.size(), kSmallBodyLimit);
  constexpr int kThreads = 48;
  std::barrier start(kThreads);
  std::barrier done(kThreads + 1);  // the threads live on until measured
  std::vector<std::jthread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      start.arrive_and_wait();
      for (int i = 0; i < 4; ++i) {
        const ExtenderArgs args = decode_extender_args_body(std::string_view(body), {});
        ASSERT_TRUE(args.node_names);
        EXPECT_EQ(args.node_names->size(), names);
      }
      done.arrive_and_wait();
      done.arrive_and_wait();
    });
  }
  done.arrive_and_wait();
  const std::size_t kept = request_parser_bytes().small;
  EXPECT_GT(kept, 0u);
  EXPECT_LE(kept, small_parsers() * largest_small_parser_bytes())
      << kept / largest_small_parser_bytes() << " parsers' worth";
  done.arrive_and_wait();
}

TEST(ParserMemory, APoolLendsNoMoreParsersThanItsCount) {
  WarmParser pool(1h, 3);
  std::vector<std::unique_ptr<json::Parser>> lent;
  for (int i = 0; i < 3; ++i) lent.push_back(pool.take());
  json::Parser* fourth = nullptr;
  std::jthread waiter([&] {
    std::unique_ptr<json::Parser> parser = pool.take();
    fourth = parser.get();
    pool.give_back(std::move(parser));
  });
  EXPECT_TRUE(testing::eventually([&] { return pool.waiting() == 1; }));
  json::Parser* const returned = lent.back().get();
  pool.give_back(std::move(lent.back()));
  waiter.join();
  EXPECT_EQ(fourth, returned);  // the one given back, not a fourth parser
  for (int i = 0; i < 2; ++i) pool.give_back(std::move(lent[i]));
}

TEST(ParserMemory, KeptParsersAreCounted) {
  WarmParser pool(1h, 4);
  std::vector<std::unique_ptr<json::Parser>> lent;
  for (int i = 0; i < 4; ++i) lent.push_back(pool.take());
  json::Value value;
  const std::string text = '"' + std::string(900 << 10, 'x') + '"';
  std::size_t grown = 0;
  for (auto& parser : lent) {
    ASSERT_EQ(parser->parse(text, value), simdjson::SUCCESS);
    grown += parser->allocated_bytes();
  }
  EXPECT_EQ(pool.kept_bytes(), 0u);  // lent ones are their decodes' memory
  for (auto& parser : lent) pool.give_back(std::move(parser));
  EXPECT_EQ(pool.kept_bytes(), grown);
  const std::unique_ptr<json::Parser> again = pool.take();
  EXPECT_EQ(pool.kept_bytes(), grown - again->allocated_bytes());
  pool.give_back(nullptr);
}

TEST(ParserMemory, KeptParsersAreFreedOnceIdle) {
  WarmParser pool(30ms, 4);
  std::vector<std::unique_ptr<json::Parser>> lent;
  for (int i = 0; i < 4; ++i) lent.push_back(pool.take());
  for (auto& parser : lent) pool.give_back(std::move(parser));
  EXPECT_TRUE(testing::eventually([&] { return pool.kept_bytes() == 0; }));
  EXPECT_FALSE(pool.holds());
}

// After a burst grew four parsers, a load that uses one at a time keeps one: the others are
// freed from the oldest given back, though the pool is never idle.
TEST(ParserMemory, APoolShrinksToTheParsersItsLoadUses) {
  WarmParser pool(50ms, 4);
  std::vector<std::unique_ptr<json::Parser>> lent;
  for (int i = 0; i < 4; ++i) lent.push_back(pool.take());
  for (auto& parser : lent) pool.give_back(std::move(parser));
  const std::size_t one = grown_parser_bytes(pool, 256 << 10);
  // One parser kept (the grown one, or a fresh one if a slow machine let even that one idle);
  // all four hold more than `one`.
  EXPECT_TRUE(testing::eventually([&] {
    pool.give_back(pool.take());
    const std::size_t kept = pool.kept_bytes();
    return kept > 0 && kept <= one;
  }));
}

}  // namespace
}  // namespace gpushare::wire
