#include "gpushare/apiclient/watch_framer.h"

#include <gtest/gtest.h>

#include <random>

#include "gpushare/apiclient/watch_event.h"

namespace gpushare::apiclient {
namespace {

std::vector<std::string> frame_all(WatchFramer& framer, const std::vector<std::string>& chunks) {
  std::vector<std::string> out;
  for (const auto& chunk : chunks) framer.feed(chunk, out);
  return out;
}

TEST(WatchFramer, SeveralEventsInOneChunkWithAndWithoutNewlines) {
  WatchFramer framer;
  const auto values = frame_all(framer, {R"({"a":1}{"b":2})"
                                         "\n"
                                         R"(  {"c":[1,{"d":3}]})"
                                         "\r\n"});
  ASSERT_EQ(values.size(), 3u);
  EXPECT_EQ(values[0], R"({"a":1})");
  EXPECT_EQ(values[1], R"({"b":2})");
  EXPECT_EQ(values[2], R"({"c":[1,{"d":3}]})");
  EXPECT_FALSE(framer.mid_value());
}

TEST(WatchFramer, EventSplitAcrossChunksByteByByte) {
  const std::string event = R"({"type":"ADDED","object":{"metadata":{"name":"p1"}}})";
  WatchFramer framer;
  std::vector<std::string> out;
  for (std::size_t i = 0; i + 1 < event.size(); ++i) {
    framer.feed(event.substr(i, 1), out);
    EXPECT_TRUE(out.empty());
    EXPECT_TRUE(framer.mid_value());
  }
  framer.feed(event.substr(event.size() - 1), out);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0], event);
  EXPECT_FALSE(framer.mid_value());
}

TEST(WatchFramer, BracesAndQuotesInsideStringsDoNotConfuseIt) {
  // Escaped quotes, escaped backslashes before a closing quote, braces and brackets in strings.
  const std::string tricky =
      R"({"k":"}}}{{{","q":"say \"}\" now","bs":"ends with backslash \\","br":"[\\\"]","u":"\u007d"})";
  ASSERT_FALSE(nlohmann::json::parse(tricky).is_discarded());
  for (std::size_t split = 0; split <= tricky.size(); ++split) {
    WatchFramer framer;
    const auto values = frame_all(framer, {tricky.substr(0, split), tricky.substr(split), "{}"});
    ASSERT_EQ(values.size(), 2u) << "split at " << split;
    EXPECT_EQ(values[0], tricky);
    EXPECT_EQ(values[1], "{}");
  }
}

TEST(WatchFramer, TopLevelArraysAndStrings) {
  WatchFramer framer;
  const auto values = frame_all(framer, {R"([1,"]",{}] "a\"b" {})"});
  ASSERT_EQ(values.size(), 3u);
  EXPECT_EQ(values[0], R"([1,"]",{}])");
  EXPECT_EQ(values[1], R"("a\"b")");
  EXPECT_EQ(values[2], "{}");
}

TEST(WatchFramer, OversizedEventIsAClearError) {
  WatchFramer framer(64);
  std::vector<std::string> out;
  framer.feed(R"({"small":true})", out);
  EXPECT_EQ(out.size(), 1u);
  const std::string big = "{\"x\":\"" + std::string(100, 'y') + "\"}";
  try {
    framer.feed(big.substr(0, 40), out);
    framer.feed(big.substr(40), out);
    FAIL() << "expected a FramingError";
  } catch (const FramingError& e) {
    EXPECT_NE(std::string(e.what()).find("larger than the limit of 64 bytes"), std::string::npos);
  }
  EXPECT_THROW(framer.feed("{}", out), FramingError) << "unusable after an error";
}

TEST(WatchFramer, GarbageBetweenEventsIsAnError) {
  WatchFramer framer;
  std::vector<std::string> out;
  EXPECT_THROW(framer.feed(R"({"a":1} x {"b":2})", out), FramingError);
  EXPECT_EQ(out.size(), 1u);
  WatchFramer numbers;
  EXPECT_THROW(numbers.feed("12", out), FramingError);
}

// Random strings that stress the string scanner: quotes, backslashes, braces, control
// characters (escaped by the encoder) and multi-byte UTF-8.
std::string random_tricky_string(std::mt19937& random) {
  static const std::vector<std::string> pieces{"\"", "\\", "{",   "}",    "[",   "]",    ",",
                                               ":",  "\n", "\t",  "\x01", "é",   "日本", "\\\"",
                                               "a",  " ",  "\"}", "{\"",  "\\\\"};
  std::uniform_int_distribution<std::size_t> length(0, 12);
  std::uniform_int_distribution<std::size_t> pick(0, pieces.size() - 1);
  std::string out;
  for (std::size_t i = length(random); i > 0; --i) out += pieces[pick(random)];
  return out;
}

nlohmann::json random_event(std::mt19937& random, int index) {
  nlohmann::json annotations = nlohmann::json::object();
  for (int i = 0; i < 4; ++i)
    annotations[random_tricky_string(random)] = random_tricky_string(random);
  return {{"type", index % 3 == 0 ? "ADDED" : "MODIFIED"},
          {"object",
           {{"kind", "Pod"},
            {"metadata",
             {{"name", "pod-" + std::to_string(index)},
              {"resourceVersion", std::to_string(1000 + index)},
              {"annotations", annotations}}},
            {"spec",
             {{"containers", nlohmann::json::array({{{"name", "c"}, {"args", {"}", "{"}}}})}}}}}};
}

TEST(WatchFramer, RandomChunkingYieldsIdenticalValues) {
  std::mt19937 random(20260721);
  for (int round = 0; round < 200; ++round) {
    std::vector<std::string> expected;
    std::string stream;
    static const std::vector<std::string> separators{"", "\n", " ", "\r\n", "\n\n  \t"};
    std::uniform_int_distribution<std::size_t> separator(0, separators.size() - 1);
    for (int i = 0; i < 12; ++i) {
      expected.push_back(random_event(random, i).dump());
      stream += expected.back();
      stream += separators[separator(random)];
    }

    // Cut the stream at random points: 1-byte chunks up to chunks holding several events.
    std::vector<std::string> chunks;
    std::uniform_int_distribution<std::size_t> chunk_size(1, round % 2 == 0 ? 7 : 900);
    for (std::size_t offset = 0; offset < stream.size();) {
      const std::size_t size = std::min(chunk_size(random), stream.size() - offset);
      chunks.push_back(stream.substr(offset, size));
      offset += size;
    }

    WatchFramer framer;
    const auto values = frame_all(framer, chunks);
    ASSERT_EQ(values, expected) << "round " << round;
    EXPECT_FALSE(framer.mid_value());
    json::Parser parser;
    for (const auto& value : values) EXPECT_NO_THROW((void)parse_watch_event(value, parser));
  }
}

TEST(WatchEvent, ParsesTypesAndRejectsBadShapes) {
  json::Parser parser;
  auto parse_watch_event = [&](std::string_view text) {
    return apiclient::parse_watch_event(text, parser);
  };
  const auto event =
      parse_watch_event(R"({"type":"BOOKMARK","object":{"metadata":{"resourceVersion":"42"}}})");
  EXPECT_EQ(event.type, WatchEventType::kBookmark);
  EXPECT_EQ(resource_version_of(event.object), "42");
  EXPECT_EQ(parse_watch_event(R"({"type":"DELETED","object":{}})").type, WatchEventType::kDeleted);
  EXPECT_THROW((void)parse_watch_event(R"({"type":"RENAMED","object":{}})"), std::invalid_argument);
  EXPECT_THROW((void)parse_watch_event(R"({"object":{}})"), std::invalid_argument);
  EXPECT_THROW((void)parse_watch_event(R"({"type":"ADDED"})"), std::invalid_argument);
  EXPECT_THROW((void)parse_watch_event(R"({"type":"ADDED","object":{})"), std::invalid_argument);
}

}  // namespace
}  // namespace gpushare::apiclient
