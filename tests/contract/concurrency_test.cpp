// Many threads bind in parallel over real HTTP onto a small cluster while others filter:
// afterwards no GPU is oversubscribed and what the model holds equals what was granted.

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "contract/extender_fixture.h"

namespace gpushare::testing {
namespace {

TEST(Concurrency, ParallelBindsNeverOversubscribe) {
  // 3 nodes x 2 GPUs x 10 units = 60 units; 96 pods of 1..4 units ask for ~240.
  std::vector<Json> items = {node_object("n1", 2, 20), node_object("n2", 2, 20),
                             node_object("n3", 2, 20)};
  constexpr int kPods = 96;
  std::vector<int> requests;
  for (int i = 0; i < kPods; ++i) {
    requests.push_back(1 + (i * 7) % 4);
    items.push_back(
        pod_object("p" + std::to_string(i), "uid-" + std::to_string(i), requests.back()));
  }
  ExtenderUnderTest extender(cluster_list(items));

  std::atomic<int> next{0};
  std::atomic<long long> granted{0};
  std::atomic<int> successes{0};
  std::atomic<bool> binding_done{false};
  std::vector<std::jthread> threads;
  for (int t = 0; t < 12; ++t) {
    threads.emplace_back([&] {
      for (int i = next++; i < kPods; i = next++) {
        // Every pod tries its "preferred" node first, so binds collide on the same GPUs.
        for (const char* node : {"n1", "n2", "n3"}) {
          const Json args = {{"PodName", "p" + std::to_string(i)},
                             {"PodNamespace", "default"},
                             {"PodUID", "uid-" + std::to_string(i)},
                             {"Node", node}};
          if (extender.post("bind", args).first == 200) {
            granted += requests[static_cast<std::size_t>(i)];
            ++successes;
            break;
          }
        }
      }
    });
  }
  // Readers hammer filter at the same time (shared lock against the binds' exclusive lock).
  std::vector<std::jthread> readers;
  for (int r = 0; r < 2; ++r) {
    readers.emplace_back([&] {
      while (!binding_done) {
        const auto [status, reply] = extender.post(
            "filter",
            Json{{"Pod", pod_object("probe", "uid-probe", 3)}, {"NodeNames", {"n1", "n2", "n3"}}});
        EXPECT_EQ(status, 200);
      }
    });
  }
  threads.clear();  // joins
  binding_done = true;
  readers.clear();

  const Json inspect = extender.inspect();
  long long used = 0;
  for (const auto& node : inspect["nodes"]) {
    for (const auto& dev : node["devs"]) {
      EXPECT_LE(dev["usedGPU"].get<long long>(), dev["totalGPU"].get<long long>()) << node["name"];
      long long sum = 0;
      for (const auto& pod : dev["pods"]) sum += pod["usedGPU"].get<long long>();
      EXPECT_EQ(sum, dev["usedGPU"].get<long long>());
      used += dev["usedGPU"].get<long long>();
    }
  }
  EXPECT_EQ(used, granted.load());
  EXPECT_EQ(inspect["pods"], successes.load());
  EXPECT_GT(successes.load(), 20);
  EXPECT_LT(successes.load(), kPods);
  // Small pods fill the cluster almost completely: at most 1 unit per GPU can be left over
  // once the last 1-unit pods have been tried... unless no small pod remained; be lenient.
  EXPECT_GE(used, 50);
}

TEST(Concurrency, SamePodBoundTwiceAtOnceIsGrantedOnce) {
  ExtenderUnderTest extender(cluster_list({node_object("n1", 4, 40), pod_object("p", "uid-p", 5)}));
  std::atomic<int> successes{0};
  {
    std::vector<std::jthread> threads;
    for (int t = 0; t < 8; ++t) {
      threads.emplace_back([&] {
        const Json args = {
            {"PodName", "p"}, {"PodNamespace", "default"}, {"PodUID", "uid-p"}, {"Node", "n1"}};
        if (extender.post("bind", args).first == 200) ++successes;
      });
    }
  }
  EXPECT_EQ(successes.load(), 1);
  EXPECT_EQ(extender.inspect()["usedGPU"], 5);
}

}  // namespace
}  // namespace gpushare::testing
