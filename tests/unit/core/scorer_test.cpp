// Scorer: prioritize's raw scores. Its caches (scores per demand, node states, readings, F
// sums) may never change a score: request after request, across changes of the model and of the
// policy's state, with threads scoring at once while a writer changes the model, every raw score
// is the bits the policy gives for that node alone. DRA pods are scored on kube's first fit.

#include "gpushare/core/scorer.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <random>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "gpushare/core/policy_registry.h"
#include "gpushare/core/score_mapping.h"
#include "gpushare/kube/dra_objects.h"

namespace gpushare::core {
namespace {

std::vector<std::optional<std::uint64_t>> bits_of(const std::vector<std::optional<double>>& raw) {
  std::vector<std::optional<std::uint64_t>> out;
  for (const auto& score : raw) {
    out.push_back(score ? std::optional(std::bit_cast<std::uint64_t>(*score)) : std::nullopt);
  }
  return out;
}

// Node n: 8 GPUs of 32 units of `gpu_model`, 64 cores and 256 Gi of memory.
NodeSpec node_spec(int n, std::string gpu_model) {
  NodeSpec spec;
  spec.name = fmt::format("node-{}", n);
  spec.gpu_count = 8;
  spec.memory_per_gpu = 32;
  spec.cpu_milli = 64000;
  spec.memory = 256 * 1024;
  spec.gpu_model = std::move(gpu_model);
  return spec;
}

// A cluster of `count` nodes of 8 GPUs of 32 units, CPU and memory tracked, in a few states
// shared by many nodes (as a cluster's pools are) and some of their own; with more binds per
// node (`max_binds`), most nodes in states of their own.
class Cluster {
 public:
  explicit Cluster(std::uint64_t seed, int count, int max_binds = 5) : rng_(seed) {
    for (int n = 0; n < count; ++n) {
      const NodeSpec spec = node_spec(n, n % 3 == 0 ? "T4" : "A100");
      model.upsert_node(spec);
      names.push_back(spec.name);
      for (auto p = between(0, max_binds); p > 0; --p) bind(n);
    }
  }
  std::int64_t between(std::int64_t lo, std::int64_t hi) {
    return std::uniform_int_distribution<std::int64_t>(lo, hi)(rng_);
  }
  // A pod of 2 to 16 units on one GPU of node `n` (at most what the GPU has free), with CPU
  // and memory: usage in steps that nodes often share.
  void bind(std::int64_t n) {
    PodAllocation pod;
    pod.uid = fmt::format("pod-{}", next_pod_++);
    pod.namespace_name = "default";
    pod.name = pod.uid;
    pod.node = names[static_cast<std::size_t>(n)];
    pod.gpus = {static_cast<int>(between(0, 7))};
    pod.per_gpu = std::int64_t{2} << between(0, 3);
    pod.cpu_milli = between(0, 2) * 4000;
    pod.memory = between(0, 2) * 16 * 1024;
    const NodeState* node = model.find_node(pod.node);
    if (node->gpus()[static_cast<std::size_t>(pod.gpus[0])].free() < pod.per_gpu) return;
    model.add_pod(std::move(pod));
  }
  PodDemand pod() {
    PodDemand pod;
    pod.per_gpu = between(0, 4) == 0 ? 0 : between(1, 24);
    pod.cpu_milli = between(0, 60) * 500;  // some more than a node has free: GPUs alone then
    pod.memory = between(0, 8) * 8 * 1024;
    return pod;
  }
  // Offered names: every node, some twice, and a few that are no node.
  std::vector<std::string> offer() {
    std::vector<std::string> offered = names;
    for (int k = 0; k < 5; ++k) offered.push_back(names[static_cast<std::size_t>(k * 7)]);
    offered.push_back("no-such-node");
    return offered;
  }

  ClusterModel model;
  std::vector<std::string> names;

 private:
  std::mt19937_64 rng_;
  int next_pod_ = 0;
};

// What score() promises, node by node, without any cache.
std::vector<std::optional<double>> expected_scores(const ClusterModel& model,
                                                   const PlacementPolicy& policy,
                                                   const PodDemand& demand,
                                                   const std::vector<std::string>& offered) {
  PodDemand gpu_only = demand;
  gpu_only.cpu_milli = 0;
  gpu_only.memory = 0;
  std::vector<std::optional<double>> raw;
  for (const std::string& name : offered) {
    const NodeState* node = model.find_node(name);
    std::optional<double> score;
    if (node != nullptr) score = policy.score(*node, demand);
    if (node != nullptr && !score) score = policy.score(*node, gpu_only);
    raw.push_back(score);
  }
  return raw;
}

struct Scored {
  std::vector<std::optional<double>> raw;
  std::vector<char> unknown;
};

Scored score_with(Scorer& scorer, const ClusterModel& model, const PlacementPolicy& policy,
                  const PodDemand& demand, const std::vector<std::string>& offered) {
  const std::vector<std::string_view> views(offered.begin(), offered.end());
  Scored scored{std::vector<std::optional<double>>(offered.size()),
                std::vector<char>(offered.size(), 0)};
  scorer.score(model, policy, demand, views, scored.raw, scored.unknown);
  return scored;
}

TEST(Scorer, EqualsEachNodeScoredAloneRequestAfterRequest) {
  for (const char* name : {"fgd-plus", "fgd", "binpack"}) {
    SCOPED_TRACE(name);
    Cluster cluster(29, 300);
    const auto policy = make_policy(name);
    Scorer scorer;
    const std::vector<std::string> offered = cluster.offer();
    std::vector<PodDemand> seen;
    for (int request = 0; request < 60; ++request) {
      // Demands seen before (the caches serve them) and new ones, binds between requests (the
      // nodes they touch are scored again) and a learning policy now and then.
      PodDemand demand = request % 3 == 2 && !seen.empty() ? seen[seen.size() / 2] : cluster.pod();
      seen.push_back(demand);
      if (request % 4 == 1) cluster.bind(cluster.between(0, 299));
      if (request % 10 == 9) policy->observe(demand);
      const Scored scored = score_with(scorer, cluster.model, *policy, demand, offered);
      ASSERT_EQ(bits_of(scored.raw),
                bits_of(expected_scores(cluster.model, *policy, demand, offered)))
          << "request " << request;
      for (std::size_t i = 0; i < offered.size(); ++i)
        ASSERT_EQ(scored.unknown[i] != 0, offered[i] == "no-such-node") << offered[i];
    }
  }
}

// score_top with rank mapping of `top` + 1 levels: the levels are those of the exact scores,
// request after request, with binds, a learning policy and prices between them; the nodes at
// the levels above 1 hold their exact scores, the others at least them; the bounds it keeps in
// the score cache are never read back as scores (by score_top or score()).
TEST(Scorer, TopScoresRankAsTheExactScoresDo) {
  for (const char* name : {"fgd-plus", "fgd", "binpack"}) {
    SCOPED_TRACE(name);
    Cluster cluster(31, 1000, 14);
    const auto policy = make_policy(name);
    policy->observe_cluster(cluster.model.nodes());
    Scorer scorer;
    const std::vector<std::string> offered = cluster.offer();
    const std::vector<std::string_view> views(offered.begin(), offered.end());
    std::vector<PodDemand> seen;
    int bounded = 0;
    for (int request = 0; request < 90; ++request) {
      PodDemand demand = request % 3 == 2 && !seen.empty() ? seen[seen.size() / 2] : cluster.pod();
      seen.push_back(demand);
      if (request % 4 == 1) cluster.bind(cluster.between(0, 999));
      if (request % 10 == 9) policy->observe(demand);
      if (request % 15 == 14) policy->observe_cluster(cluster.model.nodes());
      const std::size_t top = request % 5 == 4 ? 1 + static_cast<std::size_t>(request % 9) : 9;
      const int levels = static_cast<int>(top) + 1;
      Scored scored{std::vector<std::optional<double>>(offered.size()),
                    std::vector<char>(offered.size(), 0)};
      scorer.score_top(cluster.model, *policy, demand, views, scored.raw, scored.unknown, top);
      const auto exact = expected_scores(cluster.model, *policy, demand, offered);
      const std::vector<int> expected_levels = rank_scores(exact, levels);
      ASSERT_EQ(rank_scores(scored.raw, levels), expected_levels) << "request " << request;
      for (std::size_t i = 0; i < offered.size(); ++i) {
        ASSERT_EQ(scored.unknown[i] != 0, offered[i] == "no-such-node") << offered[i];
        ASSERT_EQ(scored.raw[i].has_value(), exact[i].has_value()) << offered[i];
        if (!exact[i] || bits_of({scored.raw[i]}) == bits_of({exact[i]})) continue;
        ++bounded;
        ASSERT_EQ(expected_levels[i], 1) << offered[i] << ", request " << request;
        ASSERT_GT(*scored.raw[i], *exact[i]) << offered[i] << ", request " << request;
      }
      if (request % 6 == 5) {  // the same demand, every score exact
        const Scored again = score_with(scorer, cluster.model, *policy, demand, offered);
        ASSERT_EQ(bits_of(again.raw), bits_of(exact)) << "request " << request;
      }
    }
    // fgd-plus bounds sharing pods' scores: most nodes are never scored exactly. The others
    // give no bounds: score_top is score() for them.
    if (std::string_view(name) == "fgd-plus") {
      EXPECT_GT(bounded, 1000);
    } else {
      EXPECT_EQ(bounded, 0);
    }
  }
}

// score_top against the exact scores over many random clusters and demands: clusters whose
// nodes mostly share a few states (ties at every level, also at the boundary between the
// lowest level told apart and 1) and clusters of mostly distinct states, offers below and above
// the sample's size, every number of levels. The levels always equal the exact ones; where
// the nodes share states, score_top takes the exact path (every score exact).
TEST(Scorer, TopScoresRankAsTheExactScoresDoOnRandomClusters) {
  const auto policy = make_policy("fgd-plus");
  int bounded_requests = 0;
  int exact_requests = 0;
  for (std::uint64_t seed = 0; seed < 24; ++seed) {
    SCOPED_TRACE(seed);
    const int nodes = seed % 4 == 0 ? 300 : 520 + static_cast<int>(seed) * 60;
    const int max_binds = seed % 3 == 0 ? 1 : static_cast<int>(8 + seed % 9);
    Cluster cluster(100 + seed, nodes, max_binds);
    policy->observe_cluster(cluster.model.nodes());
    Scorer scorer;
    const std::vector<std::string> offered = cluster.offer();
    const std::vector<std::string_view> views(offered.begin(), offered.end());
    for (int request = 0; request < 16; ++request) {
      const PodDemand demand = cluster.pod();
      // The service's levels (rank_levels_apart) every other request, fewer in between.
      const std::size_t top = request % 2 == 0
                                  ? rank_levels_apart()
                                  : 1 + static_cast<std::size_t>(cluster.between(0, 8));
      const int levels = static_cast<int>(top) + 1;
      Scored scored{std::vector<std::optional<double>>(offered.size()),
                    std::vector<char>(offered.size(), 0)};
      scorer.score_top(cluster.model, *policy, demand, views, scored.raw, scored.unknown, top);
      const auto exact = expected_scores(cluster.model, *policy, demand, offered);
      ASSERT_EQ(rank_scores(scored.raw, levels), rank_scores(exact, levels))
          << "request " << request << ", top " << top;
      if (top == rank_levels_apart()) {
        ASSERT_EQ(map_scores(scored.raw, ScoreMapping::kRank),
                  map_scores(exact, ScoreMapping::kRank))
            << "request " << request;
      }
      const bool all_exact = bits_of(scored.raw) == bits_of(exact);
      (all_exact ? exact_requests : bounded_requests) += 1;
      if (max_binds == 1) {  // the states repeat: past the first 256 names, scored as score() does
        const auto first = static_cast<std::ptrdiff_t>(std::min<std::size_t>(256, offered.size()));
        EXPECT_EQ(bits_of({scored.raw.begin() + first, scored.raw.end()}),
                  bits_of({exact.begin() + first, exact.end()}))
            << "request " << request;
      }
      if (request % 3 == 2) {  // min-max mapping: score() after score_top, every score exact
        const Scored again = score_with(scorer, cluster.model, *policy, demand, offered);
        ASSERT_EQ(bits_of(again.raw), bits_of(exact)) << "request " << request;
        ASSERT_EQ(map_scores(again.raw, ScoreMapping::kMinMax),
                  map_scores(exact, ScoreMapping::kMinMax));
      }
      if (request % 4 == 3) cluster.bind(cluster.between(0, nodes - 1));
    }
  }
  // Both paths were taken.
  EXPECT_GT(bounded_requests, 10) << exact_requests << " requests scored exactly";
  EXPECT_GT(exact_requests, 10) << bounded_requests << " requests bounded";
}

// score_top where many nodes tie at the top and no two share a state (so the state memo is
// dropped): nodes in 40 configurations of free GPU memory, each configuration on 30 nodes with its
// GPUs in shuffled order (the same score, distinct states). The nodes below the top levels are
// bounded by the policy as it scores them (ScoreContext::floor); the levels are the exact ones,
// each bound is above its score and at level 1, and no bound is read back as a score.
// 1 200 nodes of 8 GPUs of 32 units in 40 configurations of free amounts: many nodes tie at
// the top levels for a small sharing pod, in states of their own where each node's amounts are
// shuffled over its GPUs (`shuffled`), else node n in the state of node n mod 40.
struct TiedCluster {
  explicit TiedCluster(std::uint64_t seed, bool shuffled = true) {
    std::mt19937_64 rng(seed);
    const auto between = [&](std::int64_t lo, std::int64_t hi) {
      return std::uniform_int_distribution<std::int64_t>(lo, hi)(rng);
    };
    constexpr int kConfigurations = 40;
    std::vector<std::vector<Units>> configurations(kConfigurations);
    for (auto& free : configurations) {
      for (int g = 0; g < 8; ++g) free.push_back(between(0, 32));
    }
    for (int n = 0; n < kConfigurations * 30; ++n) {
      const NodeSpec spec = node_spec(n, "A100");
      model.upsert_node(spec);
      offered.push_back(spec.name);
      std::vector<Units> free = configurations[static_cast<std::size_t>(n % kConfigurations)];
      if (shuffled) std::shuffle(free.begin(), free.end(), rng);
      for (int g = 0; g < 8; ++g) {
        if (free[static_cast<std::size_t>(g)] == 32) continue;
        PodAllocation pod;
        pod.uid = fmt::format("pod-{}-{}", n, g);
        pod.namespace_name = "default";
        pod.name = pod.uid;
        pod.node = spec.name;
        pod.gpus = {g};
        pod.per_gpu = 32 - free[static_cast<std::size_t>(g)];
        model.add_pod(std::move(pod));
      }
    }
  }
  ClusterModel model;
  std::vector<std::string> offered;
};

TEST(Scorer, TopScoresWithManyTiesAtTheTopBoundTheNodesBelowOnTheWay) {
  TiedCluster cluster(20261129);
  const ClusterModel& model = cluster.model;
  const std::vector<std::string>& offered = cluster.offered;
  const auto policy = make_policy("fgd-plus");
  policy->observe_cluster(model.nodes());
  Scorer scorer;
  const std::vector<std::string_view> views(offered.begin(), offered.end());
  const std::size_t top = rank_levels_apart();
  const int levels = static_cast<int>(top) + 1;
  for (const Units per_gpu : {1, 2, 3}) {
    SCOPED_TRACE(per_gpu);
    PodDemand demand;
    demand.per_gpu = per_gpu;
    demand.cpu_milli = 1000;
    const auto exact = expected_scores(model, *policy, demand, offered);
    const std::vector<int> expected_levels = rank_scores(exact, levels);
    for (int request = 0; request < 2; ++request) {  // the second reads the kept bounds back
      Scored scored{std::vector<std::optional<double>>(offered.size()),
                    std::vector<char>(offered.size(), 0)};
      scorer.score_top(model, *policy, demand, views, scored.raw, scored.unknown, top);
      ASSERT_EQ(rank_scores(scored.raw, levels), expected_levels) << "request " << request;
      int bounded = 0;
      for (std::size_t i = 0; i < offered.size(); ++i) {
        ASSERT_EQ(scored.raw[i].has_value(), exact[i].has_value()) << offered[i];
        if (!exact[i] || bits_of({scored.raw[i]}) == bits_of({exact[i]})) continue;
        ++bounded;
        ASSERT_EQ(expected_levels[i], 1) << offered[i];
        ASSERT_GT(*scored.raw[i], *exact[i]) << offered[i];
      }
      // Not vacuous: the top levels hold many nodes, and most of the others were bounded.
      const auto at_top = std::count_if(expected_levels.begin(), expected_levels.end(),
                                        [](int level) { return level > 1; });
      EXPECT_GT(at_top * 8, static_cast<std::ptrdiff_t>(offered.size()));
      EXPECT_GT(bounded, static_cast<int>(offered.size()) / 3) << "request " << request;
    }
    const Scored again = score_with(scorer, model, *policy, demand, offered);
    ASSERT_EQ(bits_of(again.raw), bits_of(exact));
  }
}

// The first names offered (the sample score_top starts with) are scored with the floor too,
// once the top levels are known: nodes among them below those levels come out bounded, and a
// node among them in the state of a bounded one takes its bound. Where the states repeat (the
// state memo is kept), the rest is scored as score() does: exactly. The levels are the exact
// ones.
TEST(Scorer, TheFirstNamesOfferedAreBoundedBelowTheTopLevelsToo) {
  constexpr std::size_t kSampled = 256;
  for (const bool shuffled : {true, false}) {
    SCOPED_TRACE(shuffled);
    TiedCluster cluster(7, shuffled);
    const auto policy = make_policy("fgd-plus");
    policy->observe_cluster(cluster.model.nodes());
    Scorer scorer;
    const std::vector<std::string_view> views(cluster.offered.begin(), cluster.offered.end());
    const std::size_t top = rank_levels_apart();
    const int levels = static_cast<int>(top) + 1;
    PodDemand demand;
    demand.per_gpu = 2;
    demand.cpu_milli = 1000;
    const auto exact = expected_scores(cluster.model, *policy, demand, cluster.offered);
    const std::vector<int> expected_levels = rank_scores(exact, levels);
    Scored scored{std::vector<std::optional<double>>(views.size()),
                  std::vector<char>(views.size(), 0)};
    scorer.score_top(cluster.model, *policy, demand, views, scored.raw, scored.unknown, top);
    ASSERT_EQ(rank_scores(scored.raw, levels), expected_levels);
    std::size_t bounded_first = 0;
    std::size_t bounded_after = 0;
    for (std::size_t i = 0; i < views.size(); ++i) {
      ASSERT_EQ(scored.raw[i].has_value(), exact[i].has_value()) << views[i];
      if (!exact[i] || bits_of({scored.raw[i]}) == bits_of({exact[i]})) continue;
      ASSERT_EQ(expected_levels[i], 1) << views[i];
      ASSERT_GT(*scored.raw[i], *exact[i]) << views[i];
      ++(i < kSampled ? bounded_first : bounded_after);
    }
    EXPECT_GT(bounded_first, kSampled / 4);
    if (shuffled) {
      EXPECT_GT(bounded_after, views.size() / 4);
    } else {
      EXPECT_EQ(bounded_after, 0u);
    }
    // The bounds are kept as bounds: the same demand again gets the exact levels.
    Scored again{std::vector<std::optional<double>>(views.size()),
                 std::vector<char>(views.size(), 0)};
    scorer.score_top(cluster.model, *policy, demand, views, again.raw, again.unknown, top);
    EXPECT_EQ(rank_scores(again.raw, levels), expected_levels);
  }
}

// A demand whose table holds bounds, offered again with only the nodes it bounded: the
// threshold of the second request is lower than the one those bounds were computed against, so
// some of them now reach the top levels and must be scored again, not read back as bounds.
// The levels are the exact ones.
TEST(Scorer, KeptBoundsThatReachALowerThresholdAreScoredAgain) {
  Cluster cluster(41, 2000, 14);
  const auto policy = make_policy("fgd-plus");
  policy->observe_cluster(cluster.model.nodes());
  Scorer scorer;
  const std::size_t top = rank_levels_apart();
  const int levels = static_cast<int>(top) + 1;
  PodDemand demand;
  demand.per_gpu = 4;
  demand.cpu_milli = 1000;
  const auto request = [&](const std::vector<std::string>& offered) {
    const std::vector<std::string_view> views(offered.begin(), offered.end());
    Scored scored{std::vector<std::optional<double>>(offered.size()),
                  std::vector<char>(offered.size(), 0)};
    scorer.score_top(cluster.model, *policy, demand, views, scored.raw, scored.unknown, top);
    return scored.raw;
  };
  const std::vector<std::string>& all = cluster.names;
  const std::vector<std::optional<double>> first = request(all);
  const auto exact_all = expected_scores(cluster.model, *policy, demand, all);
  ASSERT_EQ(rank_scores(first, levels), rank_scores(exact_all, levels));
  std::vector<std::string> bounded;  // the nodes the first request bounded
  for (std::size_t i = 0; i < all.size(); ++i) {
    if (exact_all[i] && bits_of({first[i]}) != bits_of({exact_all[i]})) bounded.push_back(all[i]);
  }
  ASSERT_GE(bounded.size(), 600U);  // enough for the bounded path again
  const std::vector<std::optional<double>> second = request(bounded);
  const auto exact = expected_scores(cluster.model, *policy, demand, bounded);
  const std::vector<int> second_levels = rank_scores(exact, levels);
  ASSERT_EQ(rank_scores(second, levels), second_levels);
  // Not vacuous: nodes whose kept bound was all the first request knew are at the top now, with
  // their exact scores.
  int at_top = 0;
  for (std::size_t i = 0; i < bounded.size(); ++i) {
    if (second_levels[i] <= 1) continue;
    ++at_top;
    EXPECT_EQ(bits_of({second[i]}), bits_of({exact[i]})) << bounded[i];
  }
  EXPECT_GE(at_top, static_cast<int>(top));
}

// Threads score at once under the model's shared lock while a writer binds under its exclusive
// lock: one of them holds the caches, the others score without them, and every answer is the
// policy's for the model as that reader saw it (score_top's: its levels under rank mapping).
TEST(Scorer, ParallelRequestsWhileTheModelChangesGetExactScores) {
  Cluster cluster(7, 200);
  const auto policy = make_policy("fgd-plus");
  Scorer scorer;
  std::shared_mutex model_lock;
  const std::vector<std::string> offered = cluster.offer();
  std::vector<PodDemand> demands;
  for (int d = 0; d < 6; ++d) demands.push_back(cluster.pod());
  std::atomic<int> mismatches{0};
  std::atomic<int> requests{0};
  std::atomic<bool> stop{false};
  std::vector<std::thread> readers;
  for (int t = 0; t < 4; ++t) {
    readers.emplace_back([&, t] {
      for (int r = 0; r < 40; ++r) {
        const PodDemand& demand = demands[static_cast<std::size_t>((t + r) % 6)];
        std::shared_lock lock(model_lock);
        const auto exact = expected_scores(cluster.model, *policy, demand, offered);
        if (t % 2 == 0) {
          const Scored scored = score_with(scorer, cluster.model, *policy, demand, offered);
          if (bits_of(scored.raw) != bits_of(exact)) ++mismatches;
        } else {  // score_top: the same levels
          const std::vector<std::string_view> views(offered.begin(), offered.end());
          Scored scored{std::vector<std::optional<double>>(offered.size()),
                        std::vector<char>(offered.size(), 0)};
          scorer.score_top(cluster.model, *policy, demand, views, scored.raw, scored.unknown,
                           rank_levels_apart());
          if (rank_scores(scored.raw) != rank_scores(exact)) ++mismatches;
        }
        ++requests;
      }
    });
  }
  std::thread writer([&] {
    std::mt19937_64 rng(3);
    while (!stop) {
      std::unique_lock lock(model_lock);
      cluster.bind(static_cast<std::int64_t>(rng() % 200));
      if (rng() % 16 == 0) policy->observe(demands[rng() % 6]);
    }
  });
  for (auto& reader : readers) reader.join();
  stop = true;
  writer.join();
  EXPECT_EQ(requests, 160);
  EXPECT_EQ(mismatches, 0);
}

// A slice of `devices` shareable GPUs of 40 GiB on `node`.
DraSlice gpu_slice(const std::string& node, int devices) {
  std::string list;
  for (int d = 0; d < devices; ++d) {
    list += fmt::format(
        R"({}{{"name":"gpu-{}","allowMultipleAllocations":true,"capacity":{{"memory":{{"value":"40Gi"}}}}}})",
        d == 0 ? "" : ",", d);
  }
  return kube::parse_resource_slice(fmt::format(
      R"({{"metadata":{{"name":"{}-gpus"}},"spec":{{"driver":"gpu.nvidia.com","nodeName":"{}","pool":{{"name":"{}","generation":1,"resourceSliceCount":1}},"devices":[{}]}}}})",
      node, node, node, list));
}

TEST(Scorer, ScoresADraPodOnWhatFirstFitTakes) {
  ClusterModel model;
  for (const char* name : {"one", "two", "none"}) {
    NodeSpec spec;
    spec.name = name;
    spec.cpu_milli = 8000;
    spec.memory = 64 * 1024;
    model.upsert_node(spec);
  }
  model.update_dra([](DraState& dra) {
    dra.upsert_slice(gpu_slice("one", 1));
    dra.upsert_slice(gpu_slice("two", 2));
  });
  DraRequest request;
  request.device_class = "gpu.nvidia.com";
  request.memory_bytes = 30 * kGiB;
  request.count = 2;
  const auto policy = make_policy("fgd-plus");
  const std::vector<std::string_view> offered = {"one", "two", "none", "unknown"};
  std::vector<std::optional<double>> raw(offered.size());
  std::vector<char> unknown(offered.size(), 0);
  Scorer::score_dra(model, *policy, std::span(&request, 1), 2000, 1024, offered, raw, unknown);
  EXPECT_FALSE(raw[0]) << "two devices asked, one there";
  ASSERT_TRUE(raw[1]);
  const NodeState& two = *model.find_node("two");
  const auto takes = model.dra().first_fit(two, std::span(&request, 1));
  ASSERT_EQ(takes, (std::vector<GpuTake>{{0, 30}, {1, 30}}));
  PodDemand demand;
  demand.per_gpu = 0;
  demand.cpu_milli = 2000;
  demand.memory = 1024;
  EXPECT_EQ(std::bit_cast<std::uint64_t>(*raw[1]),
            std::bit_cast<std::uint64_t>(*policy->score_taken(two, demand, *takes)));
  EXPECT_FALSE(raw[2]) << "no devices";
  EXPECT_EQ(unknown, (std::vector<char>{0, 0, 0, 1}));
}

}  // namespace
}  // namespace gpushare::core
