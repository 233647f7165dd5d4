// yaml_to_json: YAML 1.2 core-schema scalars, quoted scalars kept as strings, nesting, and syntax
// errors that give the line.

#include "gpushare/files/yaml_json.h"

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

namespace gpushare::files {
namespace {

TEST(YamlToJson, PlainScalarsTakeTheCoreSchemasTypes) {
  const auto json = yaml_to_json(R"(count: 42
negative: -7
yes: true
no: False
nothing: ~
empty:
word: hello
decimal: 1.5
)");
  EXPECT_EQ(json["count"], 42);
  EXPECT_EQ(json["negative"], -7);
  EXPECT_EQ(json["yes"], true);
  EXPECT_EQ(json["no"], false);
  EXPECT_TRUE(json["nothing"].is_null());
  EXPECT_TRUE(json["empty"].is_null());
  EXPECT_EQ(json["word"], "hello");
  // Only integers become numbers; anything else plain stays text.
  EXPECT_EQ(json["decimal"], "1.5");
}

TEST(YamlToJson, QuotedScalarsStayStrings) {
  const auto json = yaml_to_json(R"(a: "42"
b: 'true'
c: "null"
)");
  EXPECT_EQ(json["a"], "42");
  EXPECT_EQ(json["b"], "true");
  EXPECT_EQ(json["c"], "null");
}

TEST(YamlToJson, MapsAndSequencesNest) {
  const auto json = yaml_to_json(R"(nodes:
  - name: n1
    gpus: [16, 16]
  - name: n2
    gpus: []
)");
  ASSERT_TRUE(json["nodes"].is_array());
  ASSERT_EQ(json["nodes"].size(), 2u);
  EXPECT_EQ(json["nodes"][0]["name"], "n1");
  EXPECT_EQ(json["nodes"][0]["gpus"], nlohmann::json::array({16, 16}));
  EXPECT_TRUE(json["nodes"][1]["gpus"].is_array());
  EXPECT_TRUE(json["nodes"][1]["gpus"].empty());
}

TEST(YamlToJson, AnEmptyDocumentIsNull) {
  EXPECT_TRUE(yaml_to_json("").is_null());
}

TEST(YamlToJson, ASyntaxErrorNamesItsLine) {
  try {
    yaml_to_json("a: 1\nb: [1, 2\nc: 3\n");
    FAIL() << "an unclosed sequence parsed";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("YAML error at line "), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace gpushare::files
