// The extender's verbs with consolidation holds in the model store (core/consolidation_hold.h):
// filter and bind give held memory to no pod of another owner; the owner's replacement is scored
// top on the held node and bound on the held GPU; the bind releases the hold. And the locks:
// filter and bind from several threads while holds come and go never hand out memory twice.

#include <gtest/gtest.h>
#include <spdlog/spdlog.h>

#include <atomic>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

#include "gpushare/core/policy_registry.h"
#include "gpushare/metrics/metric_registry.h"
#include "gpushare/service/model_store.h"
#include "gpushare/service/rejection_log.h"
#include "gpushare/service/scheduling_service.h"

namespace gpushare::testing {
namespace {

constexpr std::int64_t kSecond = 1'000'000'000;

kube::PodInfo pod(const std::string& name, core::Units request, const std::string& owner = "") {
  kube::PodInfo info;
  info.uid = "uid-" + name;
  info.namespace_name = "default";
  info.name = name;
  info.phase = "Pending";
  info.request = request;
  if (!owner.empty()) info.controller = kube::OwnerRef{"ReplicaSet", owner, owner};
  return info;
}

// Binds in memory (its word is final), finding pods among those it was given.
class MemoryBinder final : public service::PodBinder {
 public:
  void add(const kube::PodInfo& info) {
    std::lock_guard lock(mutex_);
    pods_[info.name] = info;
  }
  std::optional<kube::PodInfo> find_pod(std::string_view, std::string_view name) override {
    std::lock_guard lock(mutex_);
    const auto it = pods_.find(std::string(name));
    if (it == pods_.end()) return std::nullopt;
    return it->second;
  }
  service::BindOutcome bind(const kube::PodInfo&, std::string_view,
                            const std::map<std::string, std::string>&) override {
    return {true, "", false};
  }
  bool confirms_asynchronously() const override { return false; }

 private:
  std::mutex mutex_;  // guards pods_
  std::map<std::string, kube::PodInfo> pods_;
};

class ServiceHolds : public ::testing::Test {
 protected:
  ServiceHolds() : store(core::make_policy("binpack")) {
    store.write([](core::ClusterModel& model, core::PlacementPolicy&) {
      for (const char* name : {"n1", "n2"}) {
        core::NodeSpec spec;
        spec.name = name;
        spec.gpu_count = 2;
        spec.memory_per_gpu = 16;
        model.upsert_node(std::move(spec));
      }
      core::PodAllocation a;  // n2 GPU 1: 12 of 16 used, the fullest GPU
      a.uid = "uid-a";
      a.namespace_name = "default";
      a.name = "a";
      a.node = "n2";
      a.gpus = {1};
      a.per_gpu = 12;
      model.add_pod(a);
    });
    service::ServiceConfig config;
    config.now_ns = [this] { return now->load(); };
    service =
        std::make_unique<service::SchedulingService>(store, binder, metrics, rejections, config);
  }

  // A hold for owner "rs-web" on n2 GPU 0 until `until` seconds.
  std::string hold(core::Units memory, int gpu = 0, std::int64_t until = 100,
                   const std::string& owner = "rs-web") {
    return store.write([&](core::ClusterModel& model, core::PlacementPolicy&,
                           core::ReservationLedger&, core::HoldBook& holds) {
      core::ConsolidationHold h;
      h.node = "n2";
      h.gpu = gpu;
      h.memory = memory;
      h.owner_uid = owner;
      h.owner = "ReplicaSet/" + owner;
      h.evicted = "default/old";
      h.created_ns = now->load();
      h.expires_ns = until * kSecond;
      return holds.place(model, h, now->load());
    });
  }
  std::size_t holds_left() {
    return store.read([](const core::ClusterModel&, const core::PlacementPolicy&,
                         const core::ReservationLedger&,
                         const core::HoldBook& holds) { return holds.size(); });
  }
  wire::ExtenderArgs args(const kube::PodInfo& info,
                          std::vector<std::string> nodes = {"n1", "n2"}) {
    wire::ExtenderArgs a;
    a.pod = info;
    a.node_names = wire::NameList(nodes);
    return a;
  }
  std::map<std::string, int> scores(const kube::PodInfo& info) {
    std::map<std::string, int> result;
    for (const wire::HostPriority p : service->prioritize(args(info)))
      result[std::string(p.host)] = static_cast<int>(p.score);
    return result;
  }
  service::BindReply bind(const kube::PodInfo& info, const std::string& node) {
    binder.add(info);
    return service->bind({info.name, info.namespace_name, info.uid, node});
  }
  core::Units used_on(const std::string& node, int gpu) {
    return store.read([&](const core::ClusterModel& model, const core::PlacementPolicy&) {
      return model.find_node(node)->gpus()[static_cast<std::size_t>(gpu)].used;
    });
  }

  std::shared_ptr<std::atomic<std::int64_t>> now =
      std::make_shared<std::atomic<std::int64_t>>(10 * kSecond);
  service::ModelStore store;
  MemoryBinder binder;
  metrics::MetricRegistry metrics;
  service::RejectionLog rejections;
  std::unique_ptr<service::SchedulingService> service;
};

TEST_F(ServiceHolds, FilterRefusesHeldMemoryToOtherPodsUntilItExpires) {
  // n2: GPU 0 empty, GPU 1 has 4 free. A pod of 10 fits only on n2's GPU 0.
  ASSERT_EQ(service->filter(args(pod("x", 10), {"n2"})).node_names.size(), 1u);
  ASSERT_EQ(hold(8), "");
  const wire::FilterResult refused = service->filter(args(pod("x", 10), {"n2"}));
  EXPECT_TRUE(refused.node_names.empty());
  EXPECT_TRUE(refused.failed.contains("n2"));
  // Another owner's pod, and a pod without one, are refused alike; 8 still fit beside the hold.
  EXPECT_TRUE(service->filter(args(pod("y", 10, "rs-other"), {"n2"})).node_names.empty());
  EXPECT_EQ(service->filter(args(pod("z", 8), {"n2"})).node_names.size(), 1u);
  // The owner's replacement is not refused its own hold.
  EXPECT_EQ(service->filter(args(pod("web-2", 10, "rs-web"), {"n2"})).node_names.size(), 1u);
  // Expired: the memory is anyone's again.
  now->store(100 * kSecond);
  EXPECT_EQ(service->filter(args(pod("x", 10), {"n2"})).node_names.size(), 1u);
}

TEST_F(ServiceHolds, PrioritizeScoresTheHeldNodeTopForTheReplacementOnly) {
  const std::map<std::string, int> before = scores(pod("web-2", 4, "rs-web"));
  const std::map<std::string, int> other_before = scores(pod("x", 4));
  // binpack prefers n2 (its GPU 1 is fuller): a hold on n1, empty, is the test.
  store.write([&](core::ClusterModel& model, core::PlacementPolicy&, core::ReservationLedger&,
                  core::HoldBook& holds) {
    core::ConsolidationHold h;
    h.node = "n1";
    h.gpu = 1;
    h.memory = 4;
    h.owner_uid = "rs-web";
    h.owner = "ReplicaSet/web";
    h.created_ns = now->load();
    h.expires_ns = 100 * kSecond;
    ASSERT_EQ(holds.place(model, h, now->load()), "");
  });
  const std::map<std::string, int> held = scores(pod("web-2", 4, "rs-web"));
  EXPECT_EQ(held.at("n1"), 10);
  EXPECT_LE(held.at("n2"), 9);
  EXPECT_GT(before.at("n2"), before.at("n1"));  // without the hold, n2 would win
  // Any other pod is scored as before.
  EXPECT_EQ(scores(pod("x", 4)), other_before);
  // Another owner's pod gets no preference from it.
  EXPECT_EQ(scores(pod("y", 4, "rs-other")), other_before);
}

TEST_F(ServiceHolds, BindPutsTheReplacementOnTheHeldGpuAndReleasesTheHold) {
  // binpack would put a pod of 4 on n2 GPU 1 (4 free, the fullest); the hold says GPU 0.
  ASSERT_EQ(hold(4, 0), "");
  const service::BindReply reply = bind(pod("web-2", 4, "rs-web"), "n2");
  EXPECT_EQ(reply.error, "");
  EXPECT_EQ(reply.gpu, 0);
  EXPECT_EQ(used_on("n2", 0), 4);
  EXPECT_EQ(holds_left(), 0u);
  // Without a hold the same pod goes where the policy says.
  const service::BindReply free = bind(pod("web-3", 4, "rs-web"), "n2");
  EXPECT_EQ(free.gpu, 1);
}

TEST_F(ServiceHolds, BindGivesHeldMemoryToNoOtherPod) {
  ASSERT_EQ(hold(14, 0), "");
  // n2 GPU 0 has 16 free, 14 held: a pod of 4 goes to GPU 1 (4 free), a second has no room.
  EXPECT_EQ(bind(pod("x1", 4), "n2").gpu, 1);
  const service::BindReply refused = bind(pod("x2", 4, "rs-other"), "n2");
  EXPECT_EQ(refused.outcome, "no_fit") << refused.error;
  EXPECT_EQ(used_on("n2", 0), 0);
  EXPECT_EQ(holds_left(), 1u);  // another owner's bind leaves the hold alone
  // The replacement that binds elsewhere ends the hold too.
  EXPECT_EQ(bind(pod("web-2", 4, "rs-web"), "n1").error, "");
  EXPECT_EQ(holds_left(), 0u);
  EXPECT_EQ(bind(pod("x3", 4), "n2").gpu, 0);
}

// Filter and bind on several threads while a hold is placed and released over and over: every
// GPU's use plus the memory held against others stays within its capacity at every moment, and
// no bind ever lands on held memory.
TEST_F(ServiceHolds, FilterAndBindFromSeveralThreadsWhileHoldsComeAndGo) {
  // Thousands of binds each log a line at info; a failure's message must not drown in them.
  const spdlog::level::level_enum level = spdlog::get_level();
  spdlog::set_level(spdlog::level::warn);
  struct RestoreLevel {
    spdlog::level::level_enum level;
    ~RestoreLevel() { spdlog::set_level(level); }
  } restore{level};
  std::atomic<bool> stop{false};
  std::atomic<int> overbooked{0};
  std::atomic<int> bound{0};
  std::atomic<int> cycles{0};
  // The first hold is in place before any bind, so binds meet one whatever the threads' timing.
  ASSERT_EQ(hold(6, 0), "");
  std::vector<std::thread> threads;
  // Checker: the invariant under the store's lock.
  threads.emplace_back([&] {
    while (!stop) {
      store.read([&](const core::ClusterModel& model, const core::PlacementPolicy&,
                     const core::ReservationLedger&, const core::HoldBook& holds) {
        for (const core::NodeState& node : model.nodes()) {
          for (int g = 0; g < node.gpu_count(); ++g) {
            const core::GpuState& gpu = node.gpus()[static_cast<std::size_t>(g)];
            if (gpu.used + holds.held_against(node.name(), g, "", now->load()) > gpu.capacity)
              ++overbooked;
          }
        }
      });
    }
  });
  // Holds: owner rs-web, 6 on n2 GPU 0, released and placed again (placing fails while the
  // binds leave less than 6 free; the next cycle tries again).
  threads.emplace_back([&] {
    while (!stop) {
      for (int spin = 0; spin < 100; ++spin) std::this_thread::yield();  // binds meet it
      store.write([](core::ClusterModel&, core::PlacementPolicy&, core::ReservationLedger&,
                     core::HoldBook& holds) { holds.release("rs-web"); });
      hold(6, 0);
      ++cycles;
    }
  });
  // Workers: filter and bind, then the pod goes (as the watch would say), over and over.
  for (int w = 0; w < 4; ++w) {
    threads.emplace_back([&, w] {
      for (int i = 0; i < 1000; ++i) {
        const kube::PodInfo p =
            pod("w" + std::to_string(w) + "-" + std::to_string(i), 5, i % 2 == 0 ? "" : "rs-other");
        // Filter runs beside the binds; bind is asked for n2 (where the hold is) whatever filter
        // said, as kube-scheduler's bind judges on its own model and so must ours.
        const wire::FilterResult passed = service->filter(args(p));
        const std::string node = passed.node_names.empty() || i % 4 != 0 ? "n2" : "n1";
        if (bind(p, node).error.empty()) {
          ++bound;
          store.write([&](core::ClusterModel& model, core::PlacementPolicy&,
                          core::ReservationLedger& ledger) {
            ledger.observe(model, {core::PodEvidence::Kind::kGone, p.uid, std::nullopt},
                           core::EvidenceSource::kList);
          });
        }
      }
    });
  }
  for (std::size_t t = 2; t < threads.size(); ++t) threads[t].join();
  stop = true;
  threads[0].join();
  threads[1].join();
  EXPECT_EQ(overbooked, 0) << "moments where a GPU's use plus memory held against others "
                              "exceeded its capacity";
  EXPECT_GT(bound, 0);
  EXPECT_GT(cycles, 0);
  EXPECT_EQ(used_on("n1", 0) + used_on("n1", 1) + used_on("n2", 0), 0)
      << "every bound pod has gone, so nothing stays in use";
  EXPECT_EQ(used_on("n2", 1), 12);
}

}  // namespace
}  // namespace gpushare::testing
