// Memory a burst of requests grew is given back once the server is idle, whatever the bodies'
// size: bodies under the 1 MiB that trims at once included.

#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

#include "contract/extender_fixture.h"
#include "gpushare/http/process_resources.h"
#include "support/eventually.h"

namespace gpushare::testing {
namespace {

using namespace std::chrono_literals;

TEST(HeapRelease, ABurstOfSmallBodiesIsGivenBackOnceIdle) {
  ExtenderUnderTest extender(
      cluster_list({node_object("n1", 2, 32)}), "binpack", 1 << 20, 0,
      [](http::HttpServerOptions& options) { options.connections.heap_release_idle = 100ms; });
  Json names = Json::array();
  // About 200 KB of names, counted as they are added (each adds its quotes and a comma).
  for (std::size_t i = 0, text = 2; text < 200000; ++i) {
    std::string name = "node-" + std::to_string(i);
    text += name.size() + 3;
    names.push_back(std::move(name));
  }
  const std::string body = Json{{"Pod", pod_object("p", "uid-p", 4)}, {"NodeNames", names}}.dump();
  ASSERT_LT(body.size(), std::size_t{1} << 20);
  const std::uint64_t before = http::free_memory_releases();
  std::vector<std::thread> clients;
  for (int c = 0; c < 4; ++c) {
    clients.emplace_back([&] {
      auto client = extender.client();
      for (int r = 0; r < 2; ++r) {
        auto reply = client.Post("/gpushare-scheduler/filter", body, "application/json");
        EXPECT_TRUE(reply && reply->status == 200);
      }
    });
  }
  for (auto& client : clients) client.join();
  EXPECT_TRUE(eventually([&] { return http::free_memory_releases() > before; }, 10s));
}

}  // namespace
}  // namespace gpushare::testing
