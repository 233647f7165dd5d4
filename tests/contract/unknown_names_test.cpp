// A filter or prioritize body may name nodes the extender does not know, as many as the body
// holds, which is a great many short names in a large body. Such names are listed up to
// SchedulingService::kMaxUnknownNodesListed per reply, the rest counted and left out
// (kube-scheduler treats a node the extender neither passes nor lists as infeasible, and gives
// it no extender score), so a reply and what builds it stay within a multiple of the body.

#include <gtest/gtest.h>
#include <malloc.h>

#include <string>

#include "contract/service_harness.h"
#include "gpushare/core/policy_registry.h"
#include "gpushare/wire/wire_decode.h"
#include "gpushare/wire/wire_encode.h"

namespace gpushare::service {
namespace {

// "a".."z", "aa".., up to 4 letters: distinct, none of them "n1".
std::string short_name(std::size_t i) {
  std::string name;
  do {
    name.push_back(static_cast<char>('a' + i % 26));
    i /= 26;
  } while (i > 0);
  return name;
}

std::string body_naming(std::size_t unknown) {
  std::string body =
      R"({"Pod":{"metadata":{"name":"p","namespace":"default","uid":"u"},"spec":{"containers":[{"name":"c","resources":{"limits":{"aliyun.com/gpu-mem":"4"}}}]}},"NodeNames":["n1")";
  for (std::size_t i = 0; i < unknown; ++i) body += ",\"" + short_name(i) + '"';
  body += "]}";
  return body;
}

class UnknownNames : public ::testing::Test {
 protected:
  UnknownNames() : harness(core::make_policy("binpack")) {
    harness.store.write([](core::ClusterModel& model, core::PlacementPolicy&) {
      core::NodeSpec spec;
      spec.name = "n1";
      spec.gpu_count = 2;
      spec.memory_per_gpu = 16;
      model.upsert_node(spec);
    });
  }
  wire::ExtenderArgs args(const std::string& body) {
    return wire::decode_extender_args_body(std::string_view(body), kube::ResourceNames{});
  }
  ServiceHarness harness;
};

// Heap in use (every arena, mmapped blocks included), less what the request parsers keep
// between requests (their own bound, docs/hardening.md).
std::size_t heap_in_use() {
  const struct mallinfo2 info = ::mallinfo2();
  const wire::RequestParserBytes parsers = wire::request_parser_bytes();
  const std::size_t used = info.uordblks + info.hblkhd;
  return used - std::min(used, parsers.small + parsers.large);
}

TEST_F(UnknownNames, AFilterListsAtMostTheBudgetAndItsReplyStaysWithinTheBody) {
  const std::string body = body_naming(150000);
  ASSERT_LT(body.size(), std::size_t{1100000});
  const std::size_t before = heap_in_use();
  const wire::FilterResult result = harness.service->filter(args(body));
  const std::string reply = wire::encode_filter_result(result);
  // What the reply and the result it is built from hold: within a small multiple of the body,
  // however many names it has.
  EXPECT_LT(heap_in_use() - std::min(before, heap_in_use()), 2 * body.size());
  EXPECT_EQ(result.node_names.size(), 1u) << "n1 passes";
  EXPECT_EQ(result.failed_unresolvable.size(), SchedulingService::kMaxUnknownNodesListed);
  EXPECT_EQ(result.failed.size(), SchedulingService::kMaxUnknownNodesListed);
  EXPECT_LT(reply.size(), body.size()) << "every unknown name listed: ~30 x the body";
}

TEST_F(UnknownNames, AFewUnknownNamesAreAllListed) {
  const wire::FilterResult result = harness.service->filter(args(body_naming(3)));
  EXPECT_EQ(result.failed_unresolvable.size(), 3u);
  EXPECT_EQ(result.failed.size(), 3u);
}

TEST_F(UnknownNames, PrioritizeScoresAtMostTheBudgetOfUnknownNames) {
  const std::string body = body_naming(150000);
  const std::size_t before = heap_in_use();
  const wire::HostPriorityList scores = harness.service->prioritize(args(body));
  EXPECT_LT(heap_in_use() - std::min(before, heap_in_use()), body.size());
  EXPECT_EQ(scores.size(), 1 + SchedulingService::kMaxUnknownNodesListed);
  EXPECT_EQ(scores[0].host, "n1");
  EXPECT_LT(wire::encode_priorities(scores).size(), body.size());
}

}  // namespace
}  // namespace gpushare::service
