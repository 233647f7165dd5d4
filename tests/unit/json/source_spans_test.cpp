// json::array_element_texts finds each element's exact text from the parser's structural
// positions: strings holding braces, brackets, commas and escaped quotes, nesting, whitespace,
// scalars, empty arrays and member paths that do not lead to an array.

#include "gpushare/json/source_spans.h"

#include <gtest/gtest.h>

#include <array>
#include <string>

#include "gpushare/json/document.h"

namespace gpushare::json {
namespace {

// The element texts at `path` in `text` (which they view), after the DOM accepted it.
std::optional<std::vector<std::string_view>> texts_at(Parser& parser, const std::string& text,
                                                      std::initializer_list<std::size_t> path) {
  Value value;
  EXPECT_EQ(parser.parse(text, value), simdjson::SUCCESS) << text;
  // Parser::parse copies into its padded buffer at the same offsets: view the caller's text.
  const std::vector<std::size_t> members(path);
  return array_element_texts(text, parser.structural_positions(), members);
}

TEST(SourceSpans, FindsEachElementVerbatim) {
  Parser parser;
  const std::string first = R"({"metadata":{"name":"a{b"},"x":"]\"[,}"})";
  const std::string second = R"({ "list" : [ [1, {"k": "}"}], [] ], "s": "\\" })";
  const std::string third = R"({})";
  const std::string text =
      R"({"Pod":{"a":[1,2,{"b":"]"}]},"Nodes" : {"kind":"List", "items" : [ )" + first + " ,\n\t" +
      second + "," + third + R"( ] },"z":null})";
  const auto texts = texts_at(parser, text, {1, 1});
  ASSERT_TRUE(texts);
  ASSERT_EQ(texts->size(), 3u);
  EXPECT_EQ((*texts)[0], first);
  EXPECT_EQ((*texts)[1], second);
  EXPECT_EQ((*texts)[2], third);
}

TEST(SourceSpans, ScalarsEndBeforeTheirTrailingWhitespace) {
  Parser parser;
  const std::string text = R"({"a":[ 1 , "x,]" ,true,null , -2.5e3 ]})";
  const auto texts = texts_at(parser, text, {0});
  ASSERT_TRUE(texts);
  EXPECT_EQ(*texts, (std::vector<std::string_view>{"1", "\"x,]\"", "true", "null", "-2.5e3"}));
}

TEST(SourceSpans, AnEmptyArrayHasNoElements) {
  Parser parser;
  const auto texts = texts_at(parser, R"({"a":{"b":[ ]}})", {0, 0});
  ASSERT_TRUE(texts);
  EXPECT_TRUE(texts->empty());
}

TEST(SourceSpans, APathThatDoesNotLeadToAnArrayIsNullopt) {
  Parser parser;
  EXPECT_FALSE(texts_at(parser, R"({"a":{"b":"[1]"}})", {0, 0}));  // a string, not an array
  EXPECT_FALSE(texts_at(parser, R"({"a":[1]})", {1}));             // no second member
  EXPECT_FALSE(texts_at(parser, R"({"a":[1]})", {0, 0}));          // an array has no members
  EXPECT_FALSE(texts_at(parser, R"([[1]])", {0}));                 // the top is not an object
}

TEST(SourceSpans, PositionsOfADuplicateMemberReachTheOneChosen) {
  Parser parser;
  // find_member_at reports the last duplicate's position (2): its elements, not the first's.
  const std::string text = R"({"Nodes":{"items":[{"n":1}]},"x":0,"Nodes":{"items":[{"n":2}]}})";
  const auto texts = texts_at(parser, text, {2, 0});
  ASSERT_TRUE(texts);
  EXPECT_EQ(*texts, (std::vector<std::string_view>{R"({"n":2})"}));
}

TEST(SourceSpans, EmptyPositionsAreNullopt) {
  EXPECT_FALSE(array_element_texts("{\"a\":[1]}", {}, std::array<std::size_t, 1>{0}));
}

}  // namespace
}  // namespace gpushare::json
