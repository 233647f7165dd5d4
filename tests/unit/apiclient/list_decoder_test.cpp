#include "gpushare/apiclient/list_decoder.h"

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <vector>

namespace gpushare::apiclient {
namespace {

using Json = nlohmann::json;

// What a decoder saw, fed in the given pieces.
struct Decoded {
  bool fed = true;  // every feed() returned true
  bool finished = false;
  std::string error;
  std::vector<Json> items;
  Json metadata;
  std::string resource_version;
  std::string continue_token;
};

Decoded decode_pieces(const std::vector<std::string>& pieces) {
  Decoded out;
  ListDecoder decoder(
      [&](const json::Value& item) { out.items.push_back(Json::parse(simdjson::minify(item))); });
  for (const auto& piece : pieces) out.fed = decoder.feed(piece) && out.fed;
  out.finished = decoder.finish();
  out.error = decoder.error();
  out.metadata = decoder.metadata();
  out.resource_version = decoder.resource_version();
  out.continue_token = decoder.continue_token();
  return out;
}

Decoded decode(const std::string& body) {
  return decode_pieces({body});
}

// Items that a naive bracket counter or string scanner would get wrong.
const char* const kTrickyBody =
    R"json({"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"4711","continue":"eyJ2IjoibWV0YS5rOHMuaW8vdjEifQ","remainingItemCount":12},"items":[{"metadata":{"name":"a]},{\"b","annotations":{"x":"[[[{{{","y":"\\","z":"\\\"]}"}},"spec":{"containers":[{"args":["]","}","[{\"q\":[]}"],"n":[1,[2,[3,[]]],{}]}]}},{},{"metadata":{"name":"\u005d\u007d"},"list":[[],[[]],[{}]],"n":-1.5e3,"t":true,"f":false,"z":null},  {"s":"tab\there \/ slash"}  ]})json";

TEST(ListDecoder, ReadsItemsAndMetadataOfAWholeBody) {
  const Decoded decoded = decode(kTrickyBody);
  ASSERT_TRUE(decoded.finished) << decoded.error;
  EXPECT_TRUE(decoded.fed);
  const Json expected = Json::parse(kTrickyBody);
  ASSERT_EQ(decoded.items.size(), 4u);
  for (std::size_t i = 0; i < decoded.items.size(); ++i) {
    EXPECT_EQ(decoded.items[i], expected["items"][i]) << "item " << i;
  }
  EXPECT_EQ(decoded.items[0]["metadata"]["name"], "a]},{\"b");
  EXPECT_EQ(decoded.items[2]["metadata"]["name"], "]}");
  EXPECT_EQ(decoded.resource_version, "4711");
  EXPECT_EQ(decoded.continue_token, "eyJ2IjoibWV0YS5rOHMuaW8vdjEifQ");
  EXPECT_EQ(decoded.metadata["remainingItemCount"], 12);
}

TEST(ListDecoder, SplittingTheBodyAtEveryByteGivesTheSameResult) {
  const std::string body = kTrickyBody;
  const Decoded whole = decode(body);
  ASSERT_TRUE(whole.finished);
  for (std::size_t cut = 0; cut <= body.size(); ++cut) {
    const Decoded split = decode_pieces({body.substr(0, cut), body.substr(cut)});
    ASSERT_TRUE(split.finished) << "cut at " << cut << ": " << split.error;
    ASSERT_EQ(split.items, whole.items) << "cut at " << cut;
    ASSERT_EQ(split.metadata, whole.metadata) << "cut at " << cut;
  }
}

TEST(ListDecoder, OneByteAtATimeGivesTheSameResult) {
  const std::string body = kTrickyBody;
  std::vector<std::string> bytes;
  for (char c : body) bytes.emplace_back(1, c);
  const Decoded decoded = decode_pieces(bytes);
  ASSERT_TRUE(decoded.finished) << decoded.error;
  EXPECT_EQ(decoded.items, decode(body).items);
  EXPECT_EQ(decoded.resource_version, "4711");
}

TEST(ListDecoder, ThreeWaySplitsOfAPrettyPrintedBody) {
  // Whitespace everywhere the grammar allows it, cut in three at every pair of points.
  const std::string body = Json::parse(kTrickyBody).dump(1);
  const Decoded whole = decode(body);
  ASSERT_TRUE(whole.finished) << whole.error;
  ASSERT_EQ(whole.items.size(), 4u);
  for (std::size_t first = 0; first <= body.size(); first += 7) {
    for (std::size_t second = first; second <= body.size(); second += 5) {
      const Decoded split = decode_pieces(
          {body.substr(0, first), body.substr(first, second - first), body.substr(second)});
      ASSERT_TRUE(split.finished) << first << "/" << second << ": " << split.error;
      ASSERT_EQ(split.items, whole.items) << first << "/" << second;
    }
  }
}

TEST(ListDecoder, MetadataAfterTheItemsIsStillRead) {
  const Decoded decoded = decode(
      R"({"items":[{"a":1},{"b":2}],"metadata":{"resourceVersion":"9","continue":"c2"},"kind":"PodList"})");
  ASSERT_TRUE(decoded.finished) << decoded.error;
  EXPECT_EQ(decoded.items.size(), 2u);
  EXPECT_EQ(decoded.resource_version, "9");
  EXPECT_EQ(decoded.continue_token, "c2");
}

TEST(ListDecoder, EmptyItemsNullItemsAndNoItems) {
  for (const std::string body : {R"({"metadata":{"resourceVersion":"1"},"items":[]})",
                                 R"({"metadata":{"resourceVersion":"1"},"items":null})",
                                 R"({"metadata":{"resourceVersion":"1"},"items" : [ ] })",
                                 R"({"metadata":{"resourceVersion":"1"}})",
                                 R"(  {"metadata":{"resourceVersion":"1"},"items":null}  )"
                                 "\n"}) {
    const Decoded decoded = decode(body);
    EXPECT_TRUE(decoded.finished) << body << ": " << decoded.error;
    EXPECT_TRUE(decoded.items.empty()) << body;
    EXPECT_EQ(decoded.resource_version, "1") << body;
  }
}

TEST(ListDecoder, EmptyObjectsAsItemsAreDelivered) {
  const Decoded decoded = decode(R"({"items":[{},{},{"a":{}}],"metadata":{}})");
  ASSERT_TRUE(decoded.finished) << decoded.error;
  ASSERT_EQ(decoded.items.size(), 3u);
  EXPECT_EQ(decoded.items[0], Json::object());
  EXPECT_EQ(decoded.resource_version, "");
  EXPECT_EQ(decoded.continue_token, "");
}

TEST(ListDecoder, ScalarMembersAtTheEndOfTheBody) {
  // A number ends at the next byte; here that is the closing brace of the list.
  const Decoded decoded = decode(R"({"items":[],"n":12,"t":true,"metadata":null,"z":-0.5})");
  ASSERT_TRUE(decoded.finished) << decoded.error;
  EXPECT_EQ(decoded.metadata, Json::object());
}

TEST(ListDecoder, MalformedBodiesGiveClearErrors) {
  struct Case {
    std::string body;
    std::string error_part;
  };
  const std::vector<Case> cases = {
      {"", "empty"},
      {"[1,2]", "not a JSON object"},
      {"null", "not a JSON object"},
      {R"({"items":[{"a":1})", "ended early"},
      {R"({"items":[{"a":1},{"b":)", "ended early"},
      {R"({"metadata":{"resourceVersion":"1"})", "ended early"},
      {R"({"items":[{"a":}]})", "list item 0 is not valid JSON"},
      {R"({"items":[{"a":1},{"b":[}]})", "list item 1 is not valid JSON"},
      {R"({"items":[{"a":1} {"b":2}]})", "expected ',' or ']' after an item"},
      {R"({"items":[{"a":1}]}})", "expected nothing after the list object"},
      {R"({"items":[{"a":1}]} x)", "expected nothing after the list object"},
      {R"({"items":"nope"})", "list items is not an array"},
      {R"({"items":{"a":1}})", "list items is not an array"},
      {R"({"items":[1,}])", "expected an item"},
      {R"({"metadata":[1]})", "list metadata is not an object"},
      {R"({"metadata":{"resourceVersion":}})", "member \"metadata\" is not valid JSON"},
      {R"({items:[]})", "expected a key or '}'"},
      {R"({"items"[]})", "expected ':'"},
      {R"({"kind":"PodList" "items":[]})", "expected ',' or '}'"},
      {R"({"kind":nul})", "member \"kind\" is not valid JSON"},
  };
  for (const auto& c : cases) {
    const Decoded decoded = decode(c.body);
    EXPECT_FALSE(decoded.finished) << c.body;
    EXPECT_NE(decoded.error.find(c.error_part), std::string::npos)
        << c.body << " gave: " << decoded.error;
  }
}

TEST(ListDecoder, AfterAnErrorFurtherBytesAreIgnored) {
  std::vector<Json> items;
  ListDecoder decoder(
      [&](const json::Value& item) { items.push_back(Json::parse(simdjson::minify(item))); });
  EXPECT_TRUE(decoder.feed(R"({"items":[{"a":1},)"));
  EXPECT_FALSE(decoder.feed(R"(]})"));
  const std::string error = decoder.error();
  EXPECT_NE(error.find("expected an item"), std::string::npos) << error;
  EXPECT_NE(error.find("byte 18"), std::string::npos) << error;
  EXPECT_FALSE(decoder.feed(R"({"b":2}]})"));
  EXPECT_FALSE(decoder.finish());
  EXPECT_EQ(decoder.error(), error);
  EXPECT_EQ(items.size(), 1u) << "items before the error were delivered; the caller discards them";
}

TEST(ListDecoder, AnExceptionFromTheCallbackPropagatesAndFailsTheDecoder) {
  int calls = 0;
  ListDecoder decoder([&](const json::Value&) {
    if (++calls == 2) throw std::runtime_error("no thanks");
  });
  EXPECT_THROW(decoder.feed(R"({"items":[{"a":1},{"b":2},{"c":3}]})"), std::runtime_error);
  EXPECT_TRUE(decoder.failed());
  EXPECT_NE(decoder.error().find("rejected"), std::string::npos) << decoder.error();
  EXPECT_EQ(calls, 2);
  EXPECT_FALSE(decoder.finish());
}

TEST(ListDecoder, AnItemLargerThanTheCapFails) {
  std::size_t count = 0;
  ListDecoder decoder([&](const json::Value&) { ++count; }, /*max_value_bytes=*/64);
  const std::string small = R"({"a":"0123456789"})";
  const std::string big = R"({"a":")" + std::string(100, 'x') + R"("})";
  EXPECT_TRUE(decoder.feed(R"({"items":[)" + small + ","));
  // Split so that the big item is buffered across feeds.
  EXPECT_TRUE(decoder.feed(big.substr(0, 40)));
  EXPECT_FALSE(decoder.feed(big.substr(40) + "]}"));
  EXPECT_NE(decoder.error().find("exceeds 64 bytes"), std::string::npos) << decoder.error();
  EXPECT_EQ(count, 1u);
}

TEST(ListDecoder, ResetStartsOver) {
  std::vector<Json> items;
  ListDecoder decoder(
      [&](const json::Value& item) { items.push_back(Json::parse(simdjson::minify(item))); });
  EXPECT_TRUE(decoder.feed(R"({"metadata":{"resourceVersion":"1"},"items":[{"a":1},{"b")"));
  decoder.reset();
  items.clear();
  EXPECT_EQ(decoder.item_count(), 0u);
  EXPECT_EQ(decoder.resource_version(), "");
  EXPECT_TRUE(decoder.feed(R"({"metadata":{"resourceVersion":"2"},"items":[{"c":3}]})"));
  ASSERT_TRUE(decoder.finish()) << decoder.error();
  ASSERT_EQ(items.size(), 1u);
  EXPECT_EQ(items[0], (Json{{"c", 3}}));
  EXPECT_EQ(decoder.resource_version(), "2");
  EXPECT_EQ(decoder.item_count(), 1u);
}

TEST(ListDecoder, ManyItemsAcrossManyChunks) {
  Json list = {
      {"kind", "PodList"}, {"metadata", {{"resourceVersion", "77"}}}, {"items", Json::array()}};
  for (int i = 0; i < 500; ++i) {
    list["items"].push_back({{"metadata", {{"name", "pod-" + std::to_string(i)}}},
                             {"spec", {{"containers", {{{"args", {"]", "}", "\"["}}}}}}}});
  }
  const std::string body = list.dump();
  std::vector<std::string> chunks;
  for (std::size_t at = 0; at < body.size(); at += 997) chunks.push_back(body.substr(at, 997));
  const Decoded decoded = decode_pieces(chunks);
  ASSERT_TRUE(decoded.finished) << decoded.error;
  ASSERT_EQ(decoded.items.size(), 500u);
  EXPECT_EQ(decoded.items[499]["metadata"]["name"], "pod-499");
  EXPECT_EQ(decoded.resource_version, "77");
}

}  // namespace
}  // namespace gpushare::apiclient
