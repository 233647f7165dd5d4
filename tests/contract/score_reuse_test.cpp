// prioritize reuses raw scores: per demand across requests (core/score_cache.h: the nodes whose
// stamp did not move, under the same policy version) and per node state within a request
// (core/state_memo.h: nodes that differ only in name). Neither may change an answer: after
// every kind of change (binds, removals, respecs, health, learning), for pods of many demands,
// on a cluster where many nodes share a state, prioritize answers what scoring every offered
// node by name answers. And the reuse happens: a counting policy shows which nodes are scored.

#include <gtest/gtest.h>

#include <atomic>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "contract/service_harness.h"
#include "gpushare/core/placement_policy.h"
#include "gpushare/core/policy_registry.h"
#include "gpushare/core/score_cache.h"
#include "gpushare/core/score_mapping.h"
#include "gpushare/service/scheduling_service.h"

namespace gpushare::service {
namespace {

struct Service : ServiceHarness {
  using ServiceHarness::ServiceHarness;
  std::vector<int> prioritize(const kube::PodInfo& pod, const std::vector<std::string>& names) {
    wire::ExtenderArgs args;
    args.pod = pod;
    args.node_names = names;
    std::vector<int> scores;
    for (const wire::HostPriority priority : service->prioritize(args))
      scores.push_back(static_cast<int>(priority.score));
    return scores;
  }
  // The answer computed name by name, with place() (bind's path).
  std::vector<int> expected(const kube::PodInfo& pod, const std::vector<std::string>& names) {
    const core::PodDemand demand = pod.demand();
    core::PodDemand gpu_only = demand;
    gpu_only.cpu_milli = 0;
    gpu_only.memory = 0;
    std::vector<std::optional<double>> raw;
    store.read([&](const core::ClusterModel& model, const core::PlacementPolicy& policy) {
      for (const std::string& name : names) {
        const core::NodeState* node = model.find_node(name);
        std::optional<core::Placement> placed;
        if (node != nullptr) placed = policy.place(*node, demand);
        if (node != nullptr && !placed && (demand.cpu_milli > 0 || demand.memory > 0))
          placed = policy.place(*node, gpu_only);
        raw.push_back(placed ? std::optional<double>(placed->score) : std::nullopt);
      }
    });
    return core::map_scores(raw, service->config().score_mapping);
  }
};

constexpr int kNodes = 240;

std::string node_name(int i) {
  return "gpu-node-" + std::to_string(i);
}

// A node from one of a few templates, so that many nodes share a state; some differ from
// their twins only in GPU model, CPU tracking or health.
core::NodeSpec template_spec(int i, std::mt19937& rng) {
  static const char* const kModels[] = {"NVIDIA-A100-SXM4-40GB", "NVIDIA-A100-SXM4-80GB", ""};
  core::NodeSpec spec;
  spec.name = node_name(i);
  spec.gpu_count = rng() % 3 == 0 ? 4 : 8;
  spec.memory_per_gpu = rng() % 4 == 0 ? 16 : 32;
  spec.gpu_model = kModels[rng() % 3];
  if (rng() % 2 == 0) {
    spec.cpu_milli = 64000;
    spec.memory = 256LL << 30;
  }
  spec.address = "10.0.0." + std::to_string(i % 250);
  return spec;
}

core::PodAllocation bound_pod(const std::string& uid, const std::string& node, int gpu,
                              core::Units per_gpu, std::int64_t cpu_milli) {
  core::PodAllocation pod;
  pod.uid = uid;
  pod.namespace_name = "default";
  pod.name = uid;
  pod.node = node;
  if (per_gpu > 0) {
    pod.gpus = {gpu};
    pod.per_gpu = per_gpu;
  }
  pod.cpu_milli = cpu_milli;
  pod.memory = (cpu_milli / 1000) << 30;
  return pod;
}

void populate(core::ClusterModel& model, core::PlacementPolicy& policy, std::mt19937& rng) {
  for (int i = 0; i < kNodes; ++i) {
    model.upsert_node(template_spec(i, rng));
    if (rng() % 10 == 0) model.set_unhealthy(node_name(i), {static_cast<int>(rng() % 4)});
  }
  // Few pods of few sizes on the lower GPUs: nodes in the same state come out often.
  for (int p = 0; p < kNodes; ++p) {
    if (rng() % 3 == 0) continue;
    const core::PodAllocation pod =
        bound_pod("uid-" + std::to_string(p), node_name(static_cast<int>(rng() % kNodes)),
                  static_cast<int>(rng() % 2), 4 * (1 + static_cast<core::Units>(rng() % 2)), 4000);
    core::PodDemand demand;
    demand.per_gpu = pod.per_gpu;
    demand.cpu_milli = pod.cpu_milli;
    demand.memory = pod.memory;
    policy.observe(demand);
    model.add_pod(pod);
  }
}

// More demands than the cache keeps tables for, so tables are dropped and rebuilt.
std::vector<kube::PodInfo> pending_pods() {
  std::vector<kube::PodInfo> pods;
  for (core::Units request : {0, 2, 4, 5, 8, 12, 16, 24, 32}) {
    for (int variant = 0; variant < 3; ++variant) {
      kube::PodInfo pod;
      pod.namespace_name = "default";
      pod.name = "pending-" + std::to_string(pods.size());
      pod.uid = pod.name;
      pod.request = request;
      if (variant >= 1) {
        pod.cpu_milli = 2000 * variant;
        pod.memory = 16LL << 30;
      }
      if (variant == 2) pod.allowed_models = {"NVIDIA-A100-SXM4-40GB"};
      pods.push_back(std::move(pod));
    }
  }
  return pods;
}

TEST(ScoreReuse, EqualsScoringEveryNodeAfterEveryChange) {
  const std::vector<kube::PodInfo> pods = pending_pods();
  ASSERT_GT(pods.size(), core::ScoreCache::kDefaultDemands);
  for (const std::string& name : core::policy_names()) {
    for (const auto mapping : {core::ScoreMapping::kMinMax, core::ScoreMapping::kRank}) {
      Service setup(core::make_policy(name), mapping);
      std::mt19937 rng(29);
      setup.store.write(
          [&](core::ClusterModel& model, core::PlacementPolicy& p) { populate(model, p, rng); });
      std::vector<std::string> names;
      for (int i = 0; i < kNodes; ++i) names.push_back(node_name(i));
      names.push_back("not-a-node");
      std::size_t last = 0;
      for (int step = 0; step < 90; ++step) {
        // The same pod again, a demand seen a while ago, or any.
        const std::size_t pick = step % 3 == 0 ? last : rng() % (step % 3 == 1 ? 4 : pods.size());
        last = pick;
        const kube::PodInfo& pod = pods[pick];
        ASSERT_EQ(setup.prioritize(pod, names), setup.expected(pod, names))
            << name << " step " << step << " pod " << pod.name;
        setup.store.write([&](core::ClusterModel& model, core::PlacementPolicy& p) {
          const int n = static_cast<int>(rng() % kNodes);
          switch (step % 7) {
            case 0: {  // a bind, which the policy learns from
              const core::PodAllocation added =
                  bound_pod("step-" + std::to_string(step), node_name(n), 0, 4, 4000);
              model.add_pod(added);
              p.observe(pod.demand());
              break;
            }
            case 1:
              model.remove_pod("uid-" + std::to_string(rng() % kNodes));
              break;
            case 2:  // the last node moves into its place; then it comes back, empty
              model.remove_node(node_name(n));
              model.upsert_node(template_spec(n, rng));
              break;
            case 3: {  // respec: more memory per GPU
              core::NodeSpec spec = model.find_node(node_name(n))->spec();
              spec.memory_per_gpu += 8;
              model.upsert_node(spec);
              break;
            }
            case 4:
              model.set_unhealthy(node_name(n), {static_cast<int>(rng() % 4)});
              break;
            case 5:  // a node becomes the twin of another: the same state under its own name
              model.upsert_node(template_spec(n, rng));
              break;
            default:
              for (int k = 0; k < 150; ++k) p.observe(pods[rng() % pods.size()].demand());
          }
        });
      }
    }
  }
}

// A policy that counts the nodes it scores; its score is the free memory of the node.
class CountingPolicy final : public core::PlacementPolicy {
 public:
  explicit CountingPolicy(bool by_identity) : by_identity_(by_identity) {}
  std::string_view name() const override { return "counting"; }
  std::optional<core::Placement> place(const core::NodeState& node,
                                       const core::PodDemand& pod) const override {
    ++scored;
    if (node.largest_free() < pod.per_gpu) return std::nullopt;
    return core::Placement{static_cast<double>(node.total_free()), {0}};
  }
  std::uint64_t state_version() const override { return version; }
  bool reads_node_identity() const override { return by_identity_; }

  mutable std::atomic<int> scored{0};
  std::uint64_t version = 0;

 private:
  bool by_identity_;
};

TEST(ScoreReuse, ScoresEachNodeStateOnceAndKeepsScoresPerDemand) {
  for (const bool by_identity : {false, true}) {
    auto owned = std::make_unique<CountingPolicy>(by_identity);
    CountingPolicy& policy = *owned;
    Service setup(std::move(owned));
    std::vector<std::string> names;
    setup.store.write([&](core::ClusterModel& model, core::PlacementPolicy&) {
      for (int i = 0; i < 100; ++i) {
        core::NodeSpec spec;
        spec.name = node_name(i);
        spec.gpu_count = 8;
        spec.memory_per_gpu = i < 90 ? 32 : 16;  // two states: 90 nodes and 10
        model.upsert_node(spec);
        names.push_back(spec.name);
      }
    });
    kube::PodInfo small;
    small.name = small.uid = "small";
    small.request = 4;
    kube::PodInfo large = small;
    large.name = large.uid = "large";
    large.request = 24;
    const auto scored_by = [&](const kube::PodInfo& pod) {
      policy.scored = 0;
      EXPECT_EQ(setup.prioritize(pod, names), setup.expected(pod, names)) << pod.name;
      const int scored = policy.scored - static_cast<int>(names.size());  // expected()'s
      return scored;
    };
    const int every_node = static_cast<int>(names.size());
    EXPECT_EQ(scored_by(small), by_identity ? every_node : 2);
    // The 10 nodes of 16-unit GPUs cannot hold it: the scorer's fit check says so without
    // asking the policy (core/scorer.cpp, scored_demand).
    EXPECT_EQ(scored_by(large), by_identity ? 90 : 1);
    EXPECT_EQ(scored_by(small), 0);  // both demands' scores are kept
    EXPECT_EQ(scored_by(large), 0);
    setup.store.write([&](core::ClusterModel& model, core::PlacementPolicy&) {
      model.add_pod(bound_pod("bound", node_name(3), 0, 8, 0));
    });
    EXPECT_EQ(scored_by(small), 1);  // only the node that changed
    EXPECT_EQ(scored_by(large), 1);
    setup.store.write([&](core::ClusterModel&, core::PlacementPolicy&) { ++policy.version; });
    EXPECT_EQ(scored_by(small), by_identity ? every_node : 3);  // a new version: all afresh
  }
}

}  // namespace
}  // namespace gpushare::service
