// HostPriorityList: prioritize's reply, the hosts' names in one buffer (wire_types.h).

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "gpushare/wire/wire_encode.h"
#include "gpushare/wire/wire_types.h"

namespace gpushare::wire {
namespace {

TEST(HostPriorityList, KeepsEachHostWithItsScoreInOrder) {
  HostPriorityList list;
  EXPECT_TRUE(list.empty());
  list.reserve(1, 2);  // too little room: growing must keep the names already in
  const std::string long_name(300, 'n');
  list.push_back("node-a", 10);
  list.push_back("", 0);
  list.push_back(long_name, -3);
  ASSERT_EQ(list.size(), 3u);
  EXPECT_EQ(list[0].host, "node-a");
  EXPECT_EQ(list[0].score, 10);
  EXPECT_EQ(list[1].host, "");
  EXPECT_EQ(list[2].host, long_name);
  EXPECT_EQ(list[2].score, -3);
  EXPECT_EQ(list.name_bytes(), 6u + 300u);
  std::vector<std::string> hosts;
  std::vector<std::int64_t> scores;
  for (const HostPriority priority : list) {
    hosts.emplace_back(priority.host);
    scores.push_back(priority.score);
  }
  EXPECT_EQ(hosts, (std::vector<std::string>{"node-a", "", long_name}));
  EXPECT_EQ(scores, (std::vector<std::int64_t>{10, 0, -3}));
}

TEST(HostPriorityList, EqualityComparesHostsAndScores) {
  EXPECT_EQ((HostPriorityList{{"a", 1}, {"b", 2}}), (HostPriorityList{{"a", 1}, {"b", 2}}));
  EXPECT_NE((HostPriorityList{{"a", 1}, {"b", 2}}), (HostPriorityList{{"a", 1}, {"b", 3}}));
  EXPECT_NE((HostPriorityList{{"ab", 1}, {"c", 2}}), (HostPriorityList{{"a", 1}, {"bc", 2}}));
}

TEST(HostPriorityList, EncodesAsKubeSchedulersHostPriorityList) {
  EXPECT_EQ(encode_priorities(HostPriorityList{}), "[]");
  EXPECT_EQ(encode_priorities(HostPriorityList{{"n1", 10}, {"quote\"d", 0}}),
            R"([{"Host":"n1","Score":10},{"Host":"quote\"d","Score":0}])");
}

}  // namespace
}  // namespace gpushare::wire
