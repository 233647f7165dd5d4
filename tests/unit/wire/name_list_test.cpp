// NameList: node names in one buffer, read back as views (name_list.h).

#include "gpushare/wire/name_list.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "gpushare/kube/resource_names.h"
#include "gpushare/wire/wire_types.h"

namespace gpushare::wire {
namespace {

TEST(NameList, KeepsEachNameWhateverItsLengthIncludingEmptyOnes) {
  NameList names;
  EXPECT_TRUE(names.empty());
  names.reserve(2, 4);  // too little room: growing must keep the names already in
  const std::string long_name(300, 'x');
  names.push_back("node-a");
  names.push_back("");
  names.push_back(long_name);
  names.push_back("b");
  ASSERT_EQ(names.size(), 4u);
  EXPECT_EQ(names[0], "node-a");
  EXPECT_EQ(names[1], "");
  EXPECT_EQ(names[2], long_name);
  EXPECT_EQ(names[3], "b");
  EXPECT_EQ(names.front(), "node-a");
  EXPECT_EQ(names.back(), "b");
  EXPECT_EQ(names.strings(), (std::vector<std::string>{"node-a", "", long_name, "b"}));
}

TEST(NameList, IteratesInOrderAndCountsWithDistance) {
  const NameList names{"a", "bb", "ccc"};
  std::vector<std::string> seen;
  for (const std::string_view name : names) seen.emplace_back(name);
  EXPECT_EQ(seen, (std::vector<std::string>{"a", "bb", "ccc"}));
  EXPECT_EQ(std::distance(names.begin(), names.end()), 3);
  EXPECT_EQ(*(names.begin() + 2), "ccc");
  EXPECT_EQ(names.end() - names.begin(), 3);
  const std::vector<std::string_view> views(names.begin(), names.end());
  EXPECT_EQ(views, (std::vector<std::string_view>{"a", "bb", "ccc"}));
}

TEST(NameList, EqualityComparesTheNamesNotJustTheirConcatenation) {
  EXPECT_EQ((NameList{"ab", "c"}), (NameList{"ab", "c"}));
  EXPECT_NE((NameList{"ab", "c"}), (NameList{"a", "bc"}));
  EXPECT_NE((NameList{"a"}), (NameList{"a", ""}));
  EXPECT_EQ(NameList(std::vector<std::string>{"x", "y"}), (NameList{"x", "y"}));
}

TEST(NameList, ClearEmptiesIt) {
  NameList names{"a", "b"};
  names.clear();
  EXPECT_TRUE(names.empty());
  names.push_back("c");
  EXPECT_EQ(names, (NameList{"c"}));
}

TEST(NameList, DecodedNodeNamesAreTheUnescapedStringsInOrder) {
  const ExtenderArgs args = decode_extender_args_body(
      std::string_view(R"({"Pod":{"metadata":{"name":"p","namespace":"d"}},)"
                       R"("NodeNames":["n1","we\"ird\\name","caf\u00e9","","n1"]})"),
      kube::ResourceNames{});
  ASSERT_TRUE(args.node_names.has_value());
  EXPECT_EQ(args.node_names->strings(),
            (std::vector<std::string>{"n1", "we\"ird\\name", "caf\xC3\xA9", "", "n1"}));
}

}  // namespace
}  // namespace gpushare::wire
