// SchedulingService::filter and prioritize answer exactly what the plain computation answers
// (find_node, check_fit and place() for each offered name, then map_scores), for every policy and
// both score mappings, on a seeded cluster with every kind of node: no GPUs, misconfigured,
// unhealthy GPUs, unindexed usage, CPU and memory tracked or not, GPU models; offers with
// unknown and repeated names. The fast paths (batched look-ups, branch-free scans, reason texts
// formatted once) must not change an answer.
//
// OutputsArePinned also pins the answers and every policy's raw scores (their bits) against a
// digest taken before the speed work on the scoring paths: a change there changes
// placement decisions, which must be deliberate (update the digest then, saying why).

#include <gtest/gtest.h>

#include <atomic>
#include <bit>
#include <chrono>
#include <map>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "contract/service_harness.h"
#include "gpushare/core/fit.h"
#include "gpushare/core/placement_policy.h"
#include "gpushare/core/policy_registry.h"
#include "gpushare/core/score_mapping.h"
#include "gpushare/service/scheduling_service.h"

namespace gpushare::service {
namespace {

constexpr int kNodes = 400;

std::string node_name(int i) {
  // Both short names (within std::string's small buffer) and long ones, as real clusters have.
  return i % 3 == 0 ? "n" + std::to_string(i)
                    : "gke-ml-prod-a100-pool-3-1a2b3c4d-" + std::to_string(100000 + i);
}

// Nodes and pods from `seed`; learning policies observe every pod, as the service does.
void populate(core::ClusterModel& model, core::PlacementPolicy& policy, std::uint32_t seed) {
  std::mt19937 rng(seed);
  const auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<unsigned>(n)); };
  static const char* const kModels[] = {"NVIDIA-A100-SXM4-40GB", "Tesla-V100-SXM2-32GB", ""};
  for (int i = 0; i < kNodes; ++i) {
    core::NodeSpec spec;
    spec.name = node_name(i);
    spec.gpu_count = pick(10) == 0 ? 0 : 1 + pick(8);
    spec.memory_per_gpu = 8 * (1 + pick(4));
    spec.gpu_model = kModels[pick(3)];
    if (pick(2) == 0) spec.cpu_milli = 16000 + 8000 * pick(8);
    if (pick(2) == 0) spec.memory = (64LL << 30) * (1 + pick(4));
    if (pick(40) == 0) spec.misconfiguration = "aliyun.com/gpu-mem without aliyun.com/gpu-count";
    model.upsert_node(spec);
    if (pick(8) == 0) model.set_unhealthy(spec.name, {pick(8), pick(8)});
  }
  for (int p = 0; p < 6 * kNodes; ++p) {
    core::PodAllocation pod;
    pod.uid = "uid-" + std::to_string(p);
    pod.namespace_name = "default";
    pod.name = "pod-" + std::to_string(p);
    pod.node = pick(50) == 0 ? "gone-node" : node_name(pick(kNodes));
    const int kind = pick(12);
    if (kind > 0) {
      pod.gpus = {kind == 1 ? -1 : pick(8)};  // -1: bound without a valid index
      pod.per_gpu = 1 + pick(16);
    }
    pod.cpu_milli = 250 * pick(17);
    pod.memory = (1LL << 30) * pick(33);
    core::PodDemand demand;
    demand.per_gpu = pod.per_gpu;
    demand.cpu_milli = pod.cpu_milli;
    demand.memory = pod.memory;
    policy.observe(demand);
    model.add_pod(std::move(pod));
  }
}

std::vector<kube::PodInfo> pending_pods() {
  std::vector<kube::PodInfo> pods;
  int serial = 0;
  for (core::Units request : {0, 1, 3, 4, 8, 17, 40}) {
    for (int variant = 0; variant < 3; ++variant) {
      kube::PodInfo pod;
      pod.namespace_name = "default";
      pod.name = "pending-" + std::to_string(++serial);
      pod.uid = "pending-uid-" + std::to_string(serial);
      pod.request = request;
      if (variant >= 1) {
        pod.cpu_milli = 4000;
        pod.memory = 32LL << 30;
      }
      if (variant == 2) pod.allowed_models = {"NVIDIA-A100-SXM4-40GB"};
      pods.push_back(std::move(pod));
    }
  }
  return pods;
}

std::vector<std::string> offered_names(std::uint32_t seed) {
  std::vector<std::string> names;
  for (int i = 0; i < kNodes; ++i) names.push_back(node_name(i));
  names.push_back("unknown-node-a");
  names.push_back("gone-node");
  names.push_back(node_name(7));  // offered twice
  names.push_back(node_name(11));
  std::mt19937 rng(seed);  // Fisher-Yates by hand: std::shuffle's order is the library's own
  for (std::size_t i = names.size() - 1; i > 0; --i) std::swap(names[i], names[rng() % (i + 1)]);
  return names;
}

core::PodDemand without_cpu_memory(core::PodDemand demand) {
  demand.cpu_milli = 0;
  demand.memory = 0;
  return demand;
}

// The filter reply, computed name by name.
wire::FilterResult reference_filter(const core::ClusterModel& model, const kube::PodInfo& pod,
                                    const std::vector<std::string>& names,
                                    std::string_view resource) {
  wire::FilterResult result;
  const core::PodDemand demand = without_cpu_memory(pod.demand());
  for (const std::string& name : names) {
    if (!demand.wants_gpu()) {
      result.node_names.push_back(name);
      continue;
    }
    const core::NodeState* node = model.find_node(name);
    if (node == nullptr) {
      result.failed_unresolvable[name] =
          "node is not known to the gpushare extender (not synced yet, or not a node of this "
          "cluster)";
      continue;
    }
    const core::FitResult fit = core::check_fit(*node, demand);
    if (fit.fits()) {
      result.node_names.push_back(name);
    } else {
      (fit.unresolvable() ? result.failed_unresolvable : result.failed)[name] =
          fit.reason(resource);
    }
  }
  for (const auto& [name, reason] : result.failed_unresolvable) result.failed.emplace(name, reason);
  return result;
}

// Raw prioritize scores, from place() (bind's path) rather than score().
std::vector<std::optional<double>> reference_raw(const core::ClusterModel& model,
                                                 const core::PlacementPolicy& policy,
                                                 const kube::PodInfo& pod,
                                                 const std::vector<std::string>& names) {
  const core::PodDemand demand = pod.demand();
  const bool tracks = demand.cpu_milli > 0 || demand.memory > 0;
  std::vector<std::optional<double>> raw;
  for (const std::string& name : names) {
    const core::NodeState* node = model.find_node(name);
    std::optional<double> score;
    if (node != nullptr) {
      auto placed = policy.place(*node, demand);
      if (!placed && tracks) placed = policy.place(*node, without_cpu_memory(demand));
      if (placed) score = placed->score;
    }
    raw.push_back(score);
  }
  return raw;
}

struct Digest {
  std::uint64_t value = 0xcbf29ce484222325ULL;
  void add(std::string_view text) {
    for (const char c : text) value = (value ^ static_cast<unsigned char>(c)) * 0x100000001b3ULL;
    add_number(text.size());
  }
  void add_number(std::uint64_t number) {
    for (int byte = 0; byte < 8; ++byte)
      value = (value ^ ((number >> (8 * byte)) & 0xff)) * 0x100000001b3ULL;
  }
};

struct Case {
  std::string policy;
  core::ScoreMapping mapping;
};

// Runs every pod through filter and prioritize of one policy; compares with the reference and
// adds everything (raw score bits included) to `digest`.
// A service over a populated store of one policy.
struct ServiceUnderTest : ServiceHarness {
  ServiceUnderTest(const std::string& policy, std::uint32_t seed,
                   core::ScoreMapping mapping = core::ScoreMapping::kMinMax)
      : ServiceHarness(core::make_policy(policy), mapping) {
    store.write(
        [&](core::ClusterModel& model, core::PlacementPolicy& p) { populate(model, p, seed); });
  }
  // prioritize's answer computed name by name.
  std::vector<int> expected_scores(const kube::PodInfo& pod,
                                   const std::vector<std::string>& names) {
    const auto raw =
        store.read([&](const core::ClusterModel& model, const core::PlacementPolicy& policy) {
          return reference_raw(model, policy, pod, names);
        });
    return core::map_scores(raw, service->config().score_mapping);
  }
};

std::vector<int> scores_of(const wire::HostPriorityList& priorities) {
  std::vector<int> scores;
  for (const wire::HostPriority priority : priorities)
    scores.push_back(static_cast<int>(priority.score));
  return scores;
}

void check_policy(const Case& c, std::uint32_t seed, Digest& digest) {
  ServiceUnderTest setup(c.policy, seed, c.mapping);
  ModelStore& store = setup.store;
  SchedulingService& service = *setup.service;
  const ServiceConfig& config = service.config();
  const std::vector<std::string> names = offered_names(seed);
  for (const kube::PodInfo& pod : pending_pods()) {
    const std::string label = c.policy + " pod " + pod.name;
    wire::ExtenderArgs args;
    args.pod = pod;
    args.node_names = names;

    const wire::FilterResult expected_filter =
        store.read([&](const core::ClusterModel& model, const core::PlacementPolicy&) {
          return reference_filter(model, pod, names, config.names.memory);
        });
    wire::ExtenderArgs moved = args;
    for (const wire::FilterResult& got : {service.filter(args), service.filter(std::move(moved))}) {
      EXPECT_EQ(got.node_names, expected_filter.node_names) << label;
      EXPECT_EQ(got.failed, expected_filter.failed) << label;
      EXPECT_EQ(got.failed_unresolvable, expected_filter.failed_unresolvable) << label;
    }
    const wire::FilterResult filtered = service.filter(args);
    for (const std::string_view name : filtered.node_names) digest.add(name);
    for (const auto& [name, reason] : filtered.failed) digest.add(name + "=" + reason);
    for (const auto& [name, reason] : filtered.failed_unresolvable) digest.add(name + "!" + reason);

    const std::vector<std::optional<double>> raw =
        store.read([&](const core::ClusterModel& model, const core::PlacementPolicy& policy) {
          // score() is what prioritize calls: the same bits as place()'s score.
          const auto placed = reference_raw(model, policy, pod, names);
          for (std::size_t i = 0; i < names.size(); ++i) {
            const core::NodeState* node = model.find_node(names[i]);
            if (node == nullptr) continue;
            const auto scored = policy.score(*node, pod.demand());
            const auto placed_here = policy.place(*node, pod.demand());
            EXPECT_EQ(scored.has_value(), placed_here.has_value()) << label << " " << names[i];
            if (scored && placed_here) {
              EXPECT_EQ(*scored, placed_here->score) << label << " " << names[i];
            }
            if (placed_here) {
              for (int gpu : placed_here->gpus) digest.add_number(static_cast<std::uint64_t>(gpu));
            }
          }
          return placed;
        });
    const std::vector<int> expected_scores = core::map_scores(raw, c.mapping);
    wire::ExtenderArgs moved_again = args;
    for (const wire::HostPriorityList& got :
         {service.prioritize(args), service.prioritize(std::move(moved_again))}) {
      ASSERT_EQ(got.size(), names.size()) << label;
      for (std::size_t i = 0; i < names.size(); ++i) {
        EXPECT_EQ(got[i].host, names[i]) << label;
        EXPECT_EQ(got[i].score, expected_scores[i]) << label << " " << names[i];
      }
    }
    for (std::size_t i = 0; i < names.size(); ++i) {
      digest.add_number(raw[i] ? std::bit_cast<std::uint64_t>(*raw[i]) : 0x7ff4000000000001ULL);
      digest.add_number(static_cast<std::uint64_t>(expected_scores[i]));
    }
  }
}

TEST(ServiceOutputs, EqualTheReferenceComputationForEveryPolicy) {
  Digest digest;
  for (const std::string& policy : core::policy_names()) {
    for (const auto mapping : {core::ScoreMapping::kMinMax, core::ScoreMapping::kRank}) {
      check_policy({policy, mapping}, 20261125, digest);
    }
  }
}

TEST(ServiceOutputs, OutputsArePinned) {
  // Per policy, so a failure names the policy whose decisions moved.
  std::map<std::string, std::uint64_t> digests;
  for (const std::string& policy : core::policy_names()) {
    Digest digest;
    check_policy({policy, core::ScoreMapping::kMinMax}, 7, digest);
    digests[policy] = digest.value;
  }
  const std::map<std::string, std::uint64_t> pinned = {
      // Taken before the speed work on the scoring paths: see the top of this file.
      {"best-fit", 0xa12f84091544a6ddULL},    {"binpack", 0xd3cb302d7497d195ULL},
      {"dot-product", 0x278b2743a89fdb93ULL}, {"fgd", 0xaab76f202e6a7955ULL},
      {"fgd-plus", 0xe0b542c1a70ccd91ULL},    {"gpu-packing", 0xa68a4ad91a07f5b4ULL},
      {"random", 0x657f89065c0c67e2ULL},      {"spread", 0x021d395c8266ccc5ULL},
  };
  for (const auto& [policy, value] : digests) {
    const auto it = pinned.find(policy);
    if (it == pinned.end()) {
      ADD_FAILURE() << "no digest pinned for " << policy << ": {\"" << policy << "\", 0x"
                    << std::hex << value << "},";
      continue;
    }
    EXPECT_EQ(value, it->second) << policy << ": placement decisions or scores changed; digest now "
                                 << std::hex << value;
  }
}

}  // namespace
}  // namespace gpushare::service

namespace gpushare::service {
namespace {

// prioritize reuses the last request's raw scores for nodes whose stamp did not move (same
// demand, same policy version): after every kind of change, the same pod again must get what
// the name-by-name computation gives.
TEST(ServiceOutputs, ReusedScoresFollowEveryChange) {
  for (const std::string policy : {"binpack", "fgd-plus", "fgd", "spread"}) {
    ServiceUnderTest setup(policy, 3);
    const std::vector<std::string> names = offered_names(3);
    const std::vector<kube::PodInfo> pods = pending_pods();
    std::mt19937 rng(17);
    for (int step = 0; step < 60; ++step) {
      const kube::PodInfo& pod =
          pods[step % 3 == 0 ? rng() % pods.size() : 10];  // mostly the same pod
      wire::ExtenderArgs args;
      args.pod = pod;
      args.node_names = names;
      EXPECT_EQ(scores_of(setup.service->prioritize(args)), setup.expected_scores(pod, names))
          << policy << " step " << step;
      // One change of some kind, under the store's write lock as the sync and bind make them.
      setup.store.write([&](core::ClusterModel& model, core::PlacementPolicy& p) {
        const std::string node = node_name(static_cast<int>(rng() % kNodes));
        switch (step % 6) {
          case 0: {
            core::PodAllocation added;
            added.uid = "step-" + std::to_string(step);
            added.node = node;
            added.gpus = {0};
            added.per_gpu = 4;
            added.cpu_milli = 2000;
            model.add_pod(added);
            break;
          }
          case 1:
            model.remove_pod("uid-" + std::to_string(rng() % (6 * kNodes)));
            break;
          case 2:
            model.remove_node(node);  // the last node moves into its place
            break;
          case 3: {
            core::NodeSpec spec;
            if (const core::NodeState* known = model.find_node(node)) spec = known->spec();
            spec.name = node;
            spec.memory_per_gpu += 8;
            spec.gpu_count = std::max(1, spec.gpu_count);
            model.upsert_node(spec);
            break;
          }
          case 4:
            model.set_unhealthy(node, {static_cast<int>(rng() % 8)});
            break;
          default:
            for (int n = 0; n < 200; ++n)
              p.observe(pod.demand());  // moves learning policies' version
        }
      });
    }
  }
}

// filter counts its rejections per reason in one step per reason; the counts still add up to
// every offered name it rejected (repeated names counted each time they are offered).
TEST(ServiceOutputs, RejectionCountsAddUp) {
  ServiceUnderTest setup("binpack", 7);
  wire::ExtenderArgs args;
  args.pod = pending_pods()[12];  // 8 GiB: rejected by several reasons here
  args.node_names = offered_names(7);
  const std::size_t offered = args.node_names->size();
  const wire::FilterResult result = setup.service->filter(args);
  double counted = 0;
  std::size_t reasons = 0;
  std::istringstream text(setup.metrics.render());
  for (std::string line; std::getline(text, line);) {
    if (!line.starts_with("gpushare_filter_rejections_total{")) continue;
    counted += std::stod(line.substr(line.rfind(' ') + 1));
    ++reasons;
  }
  EXPECT_GE(reasons, 3u);
  EXPECT_EQ(counted, static_cast<double>(offered - result.node_names.size()));
}

// Readers against the writer: prioritize from several threads while a writer flips one pod on
// and off a node. Each request reads the model under one shared lock, so its answer must be
// exactly the answer with the pod or without it; a reused score from the other state would
// mix them.
TEST(ServiceOutputs, ConcurrentPrioritizeSeesOneModelState) {
  for (const std::string policy : {"binpack", "fgd-plus"}) {
    ServiceUnderTest setup(policy, 5);
    const std::vector<std::string> names = offered_names(5);
    const kube::PodInfo pod = pending_pods()[10];
    const std::vector<int> without = setup.expected_scores(pod, names);
    // A pod that fills every GPU of a node that can take `pod` now.
    const auto feasible =
        std::find_if(without.begin(), without.end(), [](int score) { return score > 0; });
    ASSERT_NE(feasible, without.end());
    core::PodAllocation flip;
    flip.uid = "flipping";
    flip.node = names[static_cast<std::size_t>(feasible - without.begin())];
    for (int gpu = 0; gpu < 8; ++gpu) flip.gpus.push_back(gpu);
    flip.per_gpu = core::kMaxGpuMemoryClaim;
    setup.store.write(
        [&](core::ClusterModel& model, core::PlacementPolicy&) { model.add_pod(flip); });
    const std::vector<int> with = setup.expected_scores(pod, names);
    ASSERT_NE(with, without);  // the flip changes the answer, so a mix is visible
    std::atomic<bool> stop{false};
    std::atomic<int> mixed{0};
    std::atomic<int> answers{0};
    std::vector<std::jthread> readers;
    for (int r = 0; r < 2; ++r) {
      readers.emplace_back([&] {
        wire::ExtenderArgs args;
        args.pod = pod;
        args.node_names = names;
        while (!stop) {
          const std::vector<int> got = scores_of(setup.service->prioritize(args));
          if (got != with && got != without) ++mixed;
          ++answers;
          // Between requests, as kube-scheduler's come: the reader-preferring lock would
          // otherwise keep the writer out while two readers overlap without pause.
          std::this_thread::sleep_for(std::chrono::microseconds(50));
        }
      });
    }
    for (int i = 0; i < 200 || answers < 200; ++i) {
      setup.store.write([&](core::ClusterModel& model, core::PlacementPolicy&) {
        if (i % 2 == 0) {
          model.remove_pod(flip.uid);
        } else {
          model.add_pod(flip);
        }
      });
      std::this_thread::yield();
    }
    stop = true;
    readers.clear();
    EXPECT_EQ(mixed, 0) << policy << ": " << mixed << " of " << answers
                        << " answers mixed two states";
    // And once the writer is done, the answer of the state it left (a score reused past a
    // change would be the other state's).
    wire::ExtenderArgs args;
    args.pod = pod;
    args.node_names = names;
    EXPECT_EQ(scores_of(setup.service->prioritize(args)), setup.expected_scores(pod, names))
        << policy;
  }
}

}  // namespace
}  // namespace gpushare::service
