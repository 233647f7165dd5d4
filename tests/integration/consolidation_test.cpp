// Consolidation in live mode against the fake API server (its pods/eviction checks
// PodDisruptionBudgets as the real one does): the plan GET /gpushare-scheduler/consolidation
// reports, and evict mode's faults: a refused eviction (429) then allowed, the pod deleted or
// re-created mid-plan (404, 409), the target node gone, a restart mid-plan, pods that must never
// move; and the hold on the target GPU for the moved pod's replacement: filter, prioritize and
// bind place the replacement there, refuse the held memory to other pods until the hold ends
// (expiry, the replacement bound elsewhere), and a restarted instance holds nothing. After each:
// no GPU oversubscribed and the model equals the API server's truth.

#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <map>
#include <memory>
#include <sstream>
#include <thread>
#include <vector>

#include "cmd/inspect/cli.h"
#include "integration/live_fixture.h"

namespace gpushare::testing {
namespace {

constexpr const char* kOwnerUid = "rs-web-uid";

// A pod of ReplicaSet "web" (opted in by label), bound to `node` GPU `gpu` when given.
Json owned_pod(const std::string& name, long long request, const std::string& node = "",
               int gpu = -1, bool opted_in = true, bool owned = true) {
  Json pod = gpu_pod(name, request, node, gpu);
  pod["metadata"]["labels"] = {{"app", "web"}};
  if (opted_in) pod["metadata"]["labels"][std::string(consolidation::kOptInLabel)] = "true";
  if (owned) {
    pod["metadata"]["ownerReferences"] = Json::array({{{"apiVersion", "apps/v1"},
                                                       {"kind", "ReplicaSet"},
                                                       {"name", "web"},
                                                       {"uid", kOwnerUid},
                                                       {"controller", true}}});
  }
  return pod;
}

Json budget(int allowed) {
  return {{"apiVersion", "policy/v1"},
          {"kind", "PodDisruptionBudget"},
          {"metadata", {{"name", "web"}, {"namespace", "default"}, {"generation", 1}}},
          {"spec", {{"selector", {{"matchLabels", {{"app", "web"}}}}}, {"minAvailable", 1}}},
          {"status",
           {{"observedGeneration", 1},
            {"disruptionsAllowed", allowed},
            {"currentHealthy", 1},
            {"desiredHealthy", 1}}}};
}

// n1 holds pod b (4 of 16, opted in); n2 holds pod a (8 of 16, not opted in): the plan moves b
// onto n2's GPU and frees n1's.
void seed(FakeApiServer& fake, bool b_owned = true) {
  fake.create(Resource::Nodes, gpu_node("n1", 1, 16));
  fake.create(Resource::Nodes, gpu_node("n2", 1, 16));
  fake.create(Resource::Pods, gpu_pod("a", 8, "n2", 0));
  fake.create(Resource::Pods, owned_pod("b", 4, "n1", 0, true, b_owned));
}

std::string uid_of(FakeApiServer& fake, const std::string& name) {
  return fake.get(Resource::Pods, "default", name)->at("metadata").at("uid");
}

// A clock the test moves: consolidation's back-offs and timeouts without waiting.
struct TestClock {
  std::shared_ptr<std::atomic<double>> now =
      std::make_shared<std::atomic<double>>(static_cast<double>(std::time(nullptr)));
  void advance(double seconds) { now->store(now->load() + seconds); }
};

Json report(LiveExtender& extender) {
  auto reply = extender.http().Get("/gpushare-scheduler/consolidation");
  if (!reply) return nullptr;
  EXPECT_EQ(reply->status, 200);
  return Json::parse(reply->body, nullptr, false);
}

// No GPU holds more than its capacity, and the model is the API server's truth.
void expect_consistent(LiveExtender& extender, FakeApiServer& fake) {
  const core::ClusterModel expected = truth_model(fake);
  EXPECT_TRUE(eventually([&] { return extender.snapshot().same_allocation_as(expected); }))
      << "the model differs from the API server's objects";
  const core::ClusterModel model = extender.snapshot();
  for (const core::ClusterModel* each : {&expected, &model}) {
    for (const core::NodeState& node : each->nodes()) {
      for (const core::GpuState& gpu : node.gpus())
        EXPECT_LE(gpu.used, gpu.capacity) << node.name();
    }
  }
}

std::size_t evictions(FakeApiServer& fake) {
  return fake.request_count(Verb::Evict, Resource::Pods);
}

// The replacement the ReplicaSet would create for b, bound by the extender (as kube-scheduler
// would have it bound).
void replace_b(FakeApiServer& fake, LiveExtender& extender, const std::string& name = "b2") {
  fake.create(Resource::Pods, owned_pod(name, 4));
  ASSERT_TRUE(eventually([&] { return extender.bind(name, uid_of(fake, name), "n2") == 200; }));
}

// The pod object as kube-scheduler sends it to filter and prioritize.
Json pod_object(FakeApiServer& fake, const std::string& name) {
  return *fake.get(Resource::Pods, "default", name);
}

// The nodes filter passes for pod `name`.
std::vector<std::string> passed(LiveExtender& extender, FakeApiServer& fake,
                                const std::string& name, const std::vector<std::string>& nodes) {
  const auto [status, reply] =
      extender.post("filter", Json{{"Pod", pod_object(fake, name)}, {"NodeNames", nodes}});
  EXPECT_EQ(status, 200);
  if (status != 200 || !reply["NodeNames"].is_array()) return {};
  return reply["NodeNames"].get<std::vector<std::string>>();
}

// Prioritize's scores for pod `name`, by node.
std::map<std::string, int> scores(LiveExtender& extender, FakeApiServer& fake,
                                  const std::string& name, const std::vector<std::string>& nodes) {
  const auto [status, reply] =
      extender.post("prioritize", Json{{"Pod", pod_object(fake, name)}, {"NodeNames", nodes}});
  EXPECT_EQ(status, 200);
  std::map<std::string, int> result;
  if (status != 200 || !reply.is_array()) return result;
  for (const Json& entry : reply) result[entry["Host"]] = entry["Score"];
  return result;
}

bool metric_has(LiveExtender& extender, const std::string& line) {
  const auto metrics = extender.http().Get("/metrics");
  return metrics && metrics->body.find(line) != std::string::npos;
}

// A fake API server, a clock the test moves, and the extender started on them.
class Consolidation : public ::testing::Test {
 protected:
  LiveExtender& start(consolidation::Mode mode, LiveOptions options = {}) {
    consolidation::ConsolidatorOptions c =
        options.consolidation.value_or(consolidation::ConsolidatorOptions{});
    c.mode = mode;
    c.retry_initial = std::chrono::seconds(5);
    c.now = [now = clock.now] { return now->load(); };
    options.consolidation = c;
    extenders.push_back(std::make_unique<LiveExtender>(fake, options));
    EXPECT_TRUE(extenders.back()->wait_for_sync());
    return *extenders.back();
  }
  // The next eviction is answered 429, as a PodDisruptionBudget would have it.
  void refuse_next_eviction() {
    RequestFault refused;
    refused.verb = Verb::Evict;
    refused.status = 429;
    fake.inject_fault(refused);
  }
  // The eviction call is held at the fake while the test changes the cluster, then answered as
  // the real server would answer it then.
  void evict_while(LiveExtender& extender, const std::function<void()>& change) {
    RequestFault slow;
    slow.verb = Verb::Evict;
    slow.status = 0;
    slow.delay = std::chrono::milliseconds(1500);
    fake.inject_fault(slow);
    auto round = std::async(std::launch::async, [&] { extender.consolidator()->run_once(); });
    ASSERT_TRUE(fake.wait_for_request_count(Verb::Evict, Resource::Pods, 1, 5s));
    change();
    round.get();
  }
  void allow_disruptions(int allowed) {
    fake.mutate(Resource::PodDisruptionBudgets, "default", "web",
                [&](Json& pdb) { pdb["status"]["disruptionsAllowed"] = allowed; });
  }
  FakeApiServer fake;
  TestClock clock;
  std::vector<std::unique_ptr<LiveExtender>> extenders;
};

TEST_F(Consolidation, PlanModeReportsTheMoveAndEvictsNothing) {
  seed(fake);
  LiveExtender& extender = start(consolidation::Mode::kPlan);
  extender.consolidator()->run_once();
  const Json state = report(extender);
  ASSERT_TRUE(state["plan"].is_object()) << state.dump();
  EXPECT_EQ(state["mode"], "plan");
  EXPECT_EQ(state["plan"]["gpusFreed"], 1);
  EXPECT_EQ(state["plan"]["podsMoved"], 1);
  const Json& move = state["plan"]["moves"][0];
  EXPECT_EQ(move["pod"], "default/b");
  EXPECT_EQ(move["from"], Json({{"node", "n1"}, {"gpu", 0}}));
  EXPECT_EQ(move["to"], Json({{"node", "n2"}, {"gpu", 0}}));
  EXPECT_EQ(move["memory"], 4);
  extender.consolidator()->run_once();
  EXPECT_EQ(evictions(fake), 0u);
  const auto metrics = extender.http().Get("/metrics");
  ASSERT_TRUE(metrics);
  EXPECT_NE(metrics->body.find("gpushare_consolidation_planned_moves 1"), std::string::npos);
  EXPECT_NE(metrics->body.find("gpushare_consolidation_planned_gpus_freed 1"), std::string::npos);
}

TEST_F(Consolidation, KubectlInspectShowsThePlan) {
  seed(fake);
  LiveExtender& extender = start(consolidation::Mode::kPlan);
  extender.consolidator()->run_once();
  std::ostringstream out, err;
  const auto no_env = [](std::string_view) { return std::optional<std::string>(); };
  const std::string url = "http://127.0.0.1:" + std::to_string(extender.port());
  ASSERT_EQ(cmd::inspect::run_cli({"--consolidation", "--extender", url}, out, err, no_env), 0)
      << err.str();
  EXPECT_NE(out.str().find("Plan: move 1 pod(s) to free 1 GPU(s)"), std::string::npos) << out.str();
  EXPECT_NE(out.str().find("default/b  n1/GPU0  n2/GPU0  4"), std::string::npos) << out.str();
  // Without --extender there is no plan to read.
  std::ostringstream out2, err2;
  EXPECT_EQ(cmd::inspect::run_cli({"--consolidation"}, out2, err2, no_env), 2);
}

TEST_F(Consolidation, TheEndpointSaysSoWhenConsolidationIsOff) {
  seed(fake);
  LiveExtender extender(fake);
  const auto reply = extender.http().Get("/gpushare-scheduler/consolidation");
  ASSERT_TRUE(reply);
  EXPECT_EQ(reply->status, 404);
  EXPECT_NE(reply->body.find("consolidation is off"), std::string::npos) << reply->body;
}

TEST_F(Consolidation, ABarePodIsNeverMoved) {
  seed(fake, /*b_owned=*/false);
  LiveExtender& extender = start(consolidation::Mode::kEvict);
  for (int round = 0; round < 3; ++round) {
    extender.consolidator()->run_once();
    clock.advance(120);
  }
  const Json state = report(extender);
  EXPECT_TRUE(state["plan"].is_null()) << state.dump();
  EXPECT_EQ(state["skipped"]["no_owner"], 1);
  EXPECT_EQ(evictions(fake), 0u);
  expect_consistent(extender, fake);
}

TEST_F(Consolidation, APodWhoseBudgetAllowsNoDisruptionIsNotMovedUntilItAllowsOne) {
  seed(fake);
  fake.create(Resource::PodDisruptionBudgets, budget(0));
  LiveExtender& extender = start(consolidation::Mode::kEvict);
  extender.consolidator()->run_once();
  Json state = report(extender);
  EXPECT_TRUE(state["plan"].is_null()) << state.dump();
  EXPECT_EQ(state["skipped"]["disruption_budget"], 1);
  EXPECT_EQ(evictions(fake), 0u);
  // The disruption controller allows one: the move goes ahead and spends it.
  fake.mutate(Resource::PodDisruptionBudgets, "default", "web",
              [](Json& pdb) { pdb["status"]["disruptionsAllowed"] = 1; });
  extender.consolidator()->run_once();
  EXPECT_EQ(evictions(fake), 1u);
  EXPECT_EQ(fake.get(Resource::PodDisruptionBudgets, "default", "web")
                ->at("status")
                .at("disruptionsAllowed"),
            0);
  expect_consistent(extender, fake);
}

TEST_F(Consolidation, ARefusedEvictionIsRetriedAfterABackOffThenTheMoveCompletes) {
  seed(fake);
  fake.create(Resource::PodDisruptionBudgets, budget(1));
  LiveExtender& extender = start(consolidation::Mode::kEvict);
  // The disruption controller takes the disruption back while the eviction is on its way: 429.
  evict_while(extender, [&] { allow_disruptions(0); });
  EXPECT_EQ(evictions(fake), 1u);
  Json state = report(extender);
  ASSERT_TRUE(state["inFlight"].is_object()) << state.dump();
  EXPECT_EQ(state["inFlight"]["phase"], "evicting");
  EXPECT_EQ(state["inFlight"]["refusals"], 1);
  EXPECT_FALSE(
      fake.get(Resource::Pods, "default", "b")->at("metadata").contains("deletionTimestamp"));
  // Within the back-off: no new call.
  extender.consolidator()->run_once();
  EXPECT_EQ(evictions(fake), 1u);
  allow_disruptions(1);
  clock.advance(6);
  extender.consolidator()->run_once();
  EXPECT_EQ(evictions(fake), 2u);
  EXPECT_EQ(fake.get(Resource::PodDisruptionBudgets, "default", "web")
                ->at("status")
                .at("disruptionsAllowed"),
            0);
  const auto evicted = fake.get(Resource::Pods, "default", "b");
  ASSERT_TRUE(evicted);
  EXPECT_TRUE(evicted->at("metadata").contains("deletionTimestamp"));
  // An Event on the moved pod says where it goes.
  const auto events = fake.list(Resource::Events, "default");
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0]["reason"], "GPUConsolidation");
  EXPECT_EQ(events[0]["involvedObject"]["name"], "b");
  EXPECT_NE(events[0]["message"].get<std::string>().find("to node n2 GPU 0"), std::string::npos);
  // The kubelet finishes it; the ReplicaSet's replacement is bound on the planned GPU.
  fake.finalize_pod_deletion("default", "b");
  ASSERT_TRUE(eventually([&] { return extender.used_on("n1", 0) == 0; }));
  extender.consolidator()->run_once();
  EXPECT_EQ(report(extender)["waiting"], "");
  replace_b(fake, extender);
  ASSERT_TRUE(eventually([&] { return extender.snapshot().assumed_count() == 0; }));
  extender.consolidator()->run_once();
  state = report(extender);
  EXPECT_TRUE(state["inFlight"].is_null()) << state.dump();
  EXPECT_TRUE(state["plan"].is_null()) << state.dump();  // nothing left to free
  EXPECT_EQ(state["movedInLastHour"], 1);
  const auto metrics = extender.http().Get("/metrics");
  ASSERT_TRUE(metrics);
  for (const char* line : {"gpushare_consolidation_moves_total{result=\"done\"} 1",
                           "gpushare_consolidation_moves_total{result=\"attempted\"} 1",
                           "gpushare_consolidation_evictions_total{result=\"refused\"} 1",
                           "gpushare_consolidation_gpus_freed_total 1"}) {
    EXPECT_NE(metrics->body.find(line), std::string::npos) << line;
  }
  EXPECT_EQ(evictions(fake), 2u);
  expect_consistent(extender, fake);
}

TEST_F(Consolidation, APodDeletedMidPlanStopsThePlan) {
  seed(fake);
  LiveExtender& extender = start(consolidation::Mode::kEvict);
  evict_while(extender, [&] { fake.remove(Resource::Pods, "default", "b"); });
  const Json state = report(extender);
  EXPECT_TRUE(state["inFlight"].is_null()) << state.dump();
  ASSERT_TRUE(state["lastStop"].is_object()) << state.dump();
  EXPECT_NE(state["lastStop"]["reason"].get<std::string>().find("pod default/b is gone"),
            std::string::npos);
  // Stopped: no new move for an interval.
  extender.consolidator()->run_once();
  EXPECT_EQ(evictions(fake), 1u);
  expect_consistent(extender, fake);
}

TEST_F(Consolidation, APodReCreatedMidPlanIsNotEvicted) {
  seed(fake);
  LiveExtender& extender = start(consolidation::Mode::kEvict);
  evict_while(extender, [&] {
    fake.remove(Resource::Pods, "default", "b");
    fake.create(Resource::Pods, owned_pod("b", 4, "n1", 0));  // same name, another UID
  });
  const Json state = report(extender);
  ASSERT_TRUE(state["lastStop"].is_object()) << state.dump();
  EXPECT_NE(state["lastStop"]["reason"].get<std::string>().find("pod default/b changed"),
            std::string::npos);
  const auto pod = fake.get(Resource::Pods, "default", "b");
  ASSERT_TRUE(pod);
  EXPECT_FALSE(pod->at("metadata").contains("deletionTimestamp"));  // the new pod runs on
  expect_consistent(extender, fake);
}

TEST_F(Consolidation, TheTargetNodeGoneStopsThePlan) {
  seed(fake);
  LiveExtender& extender = start(consolidation::Mode::kEvict);
  refuse_next_eviction();
  extender.consolidator()->run_once();
  ASSERT_TRUE(report(extender)["inFlight"].is_object());
  fake.remove(Resource::Pods, "default", "a");
  fake.remove(Resource::Nodes, "", "n2");
  ASSERT_TRUE(eventually([&] { return extender.snapshot().find_node("n2") == nullptr; }));
  clock.advance(6);
  extender.consolidator()->run_once();
  const Json state = report(extender);
  ASSERT_TRUE(state["lastStop"].is_object()) << state.dump();
  EXPECT_NE(state["lastStop"]["reason"].get<std::string>().find("target node n2 is gone"),
            std::string::npos);
  EXPECT_EQ(evictions(fake), 1u);  // the refused one only
  const auto pod = fake.get(Resource::Pods, "default", "b");
  ASSERT_TRUE(pod);
  EXPECT_FALSE(pod->at("metadata").contains("deletionTimestamp"));
  expect_consistent(extender, fake);
}

TEST_F(Consolidation, ANewInstanceWaitsForTheMoveItFindsInFlight) {
  seed(fake);
  const std::string b_uid = uid_of(fake, "b");
  fake.create(Resource::Pods, gpu_pod("x", 6));
  LiveExtender& first = start(consolidation::Mode::kEvict);
  first.consolidator()->run_once();
  ASSERT_EQ(evictions(fake), 1u);
  ASSERT_EQ(report(first)["holds"].size(), 1u);
  EXPECT_TRUE(passed(first, fake, "x", {"n2"}).empty());
  first.crash();
  extenders.clear();
  // The evicted pod is still terminating: the new instance does not act. It holds nothing
  // (holds are in memory): n2's memory is offered to any pod, and nothing is oversubscribed.
  LiveExtender& second = start(consolidation::Mode::kEvict);
  second.consolidator()->run_once();
  EXPECT_EQ(report(second)["waiting"], "pod default/b is being deleted");
  EXPECT_TRUE(report(second)["holds"].empty());
  EXPECT_EQ(passed(second, fake, "x", {"n2"}), std::vector<std::string>{"n2"});
  expect_consistent(second, fake);
  // Gone, and its replacement waits to be scheduled: still waiting.
  fake.finalize_pod_deletion("default", "b");
  fake.create(Resource::Pods, owned_pod("b2", 4));
  ASSERT_TRUE(eventually([&] { return second.snapshot().find_pod(b_uid) == nullptr; }));
  second.consolidator()->run_once();
  EXPECT_EQ(report(second)["waiting"], "pod default/b2 waits to be scheduled");
  EXPECT_EQ(evictions(fake), 1u);
  // Bound: the cluster is consolidated and nothing more moves.
  ASSERT_EQ(second.bind("b2", uid_of(fake, "b2"), "n2"), 200);
  ASSERT_TRUE(eventually([&] { return second.snapshot().assumed_count() == 0; }));
  second.consolidator()->run_once();
  const Json state = report(second);
  EXPECT_EQ(state["waiting"], "");
  EXPECT_TRUE(state["plan"].is_null()) << state.dump();
  EXPECT_EQ(evictions(fake), 1u);
  expect_consistent(second, fake);
}

// Evict mode holds n2 GPU 0's 4 units for ReplicaSet web from before b's eviction: the
// replacement passes filter, prioritize scores n2 top, bind puts it on GPU 0, and the hold ends
// honoured.
TEST_F(Consolidation, TheReplacementLandsOnTheHeldGpu) {
  seed(fake);
  LiveExtender& extender = start(consolidation::Mode::kEvict);
  extender.consolidator()->run_once();
  ASSERT_EQ(evictions(fake), 1u);
  Json state = report(extender);
  ASSERT_EQ(state["holds"].size(), 1u) << state.dump();
  EXPECT_EQ(state["holds"][0]["node"], "n2");
  EXPECT_EQ(state["holds"][0]["gpu"], 0);
  EXPECT_EQ(state["holds"][0]["memory"], 4);
  EXPECT_EQ(state["holds"][0]["owner"], "ReplicaSet/web");
  EXPECT_EQ(state["holds"][0]["replacing"], "default/b");
  EXPECT_TRUE(metric_has(extender, "gpushare_consolidation_holds_total{event=\"created\"} 1"));
  EXPECT_TRUE(metric_has(extender, "gpushare_consolidation_holds 1"));
  // The web view's source: /inspect carries the plan and the hold.
  const auto inspect = extender.http().Get("/gpushare-scheduler/inspect");
  ASSERT_TRUE(inspect);
  const Json document = Json::parse(inspect->body);
  EXPECT_EQ(document["consolidation"]["holds"][0]["node"], "n2") << inspect->body;

  fake.finalize_pod_deletion("default", "b");
  fake.create(Resource::Pods, owned_pod("b2", 4));
  ASSERT_TRUE(eventually([&] { return extender.used_on("n1", 0) == 0; }));
  EXPECT_EQ(passed(extender, fake, "b2", {"n1", "n2"}), (std::vector<std::string>{"n1", "n2"}));
  const std::map<std::string, int> scored = scores(extender, fake, "b2", {"n1", "n2"});
  EXPECT_EQ(scored.at("n2"), 10);
  EXPECT_LT(scored.at("n1"), 10);
  ASSERT_EQ(extender.bind("b2", uid_of(fake, "b2"), "n2"), 200);
  EXPECT_EQ(gpu_index_of(fake, "b2"), "0");
  ASSERT_TRUE(eventually([&] { return extender.snapshot().assumed_count() == 0; }));
  extender.consolidator()->run_once();
  state = report(extender);
  EXPECT_TRUE(state["inFlight"].is_null()) << state.dump();
  EXPECT_TRUE(state["holds"].empty()) << state.dump();
  EXPECT_TRUE(metric_has(extender, "gpushare_consolidation_holds_total{event=\"honoured\"} 1"));
  EXPECT_TRUE(metric_has(extender, "gpushare_consolidation_moves_total{result=\"done\"} 1"));
  EXPECT_TRUE(metric_has(extender, "gpushare_consolidation_holds 0"));
  expect_consistent(extender, fake);
}

// Pod x (6, no owner) fits n2 GPU 0 (8 free) only without the hold of 4: refused while it
// lasts, passed once it expired with no replacement bound.
TEST_F(Consolidation, AnotherPodIsRefusedTheHeldMemoryUntilTheHoldExpires) {
  seed(fake);
  fake.create(Resource::Pods, gpu_pod("x", 6));
  LiveExtender& extender = start(consolidation::Mode::kEvict);
  EXPECT_EQ(passed(extender, fake, "x", {"n2"}), std::vector<std::string>{"n2"});
  extender.consolidator()->run_once();
  ASSERT_EQ(evictions(fake), 1u);
  ASSERT_EQ(report(extender)["holds"].size(), 1u);
  const auto [status, refused] =
      extender.post("filter", Json{{"Pod", pod_object(fake, "x")}, {"NodeNames", {"n2"}}});
  ASSERT_EQ(status, 200);
  EXPECT_TRUE(refused["NodeNames"].empty()) << refused.dump();
  EXPECT_TRUE(refused["FailedNodes"].contains("n2")) << refused.dump();
  // Bind too: kube-scheduler may ask without filtering first.
  EXPECT_NE(extender.bind("x", uid_of(fake, "x"), "n2"), 200);
  EXPECT_EQ(extender.used_on("n2", 0), 8);
  // Still within the time-out: still held.
  clock.advance(200);
  extender.consolidator()->run_once();
  EXPECT_TRUE(passed(extender, fake, "x", {"n2"}).empty());
  // No replacement in time: the plan stops and the hold ends.
  clock.advance(101);
  extender.consolidator()->run_once();
  const Json state = report(extender);
  ASSERT_TRUE(state["lastStop"].is_object()) << state.dump();
  EXPECT_NE(state["lastStop"]["reason"].get<std::string>().find("no replacement"),
            std::string::npos);
  EXPECT_TRUE(state["holds"].empty()) << state.dump();
  EXPECT_TRUE(metric_has(extender, "gpushare_consolidation_holds_total{event=\"expired\"} 1"));
  EXPECT_EQ(passed(extender, fake, "x", {"n2"}), std::vector<std::string>{"n2"});
  ASSERT_EQ(extender.bind("x", uid_of(fake, "x"), "n2"), 200);
  expect_consistent(extender, fake);
}

// The replacement bound on n1 instead (kube-scheduler may choose so): the bind ends the hold,
// the next round stops the plan, and n2's memory is anyone's again.
TEST_F(Consolidation, AReplacementBoundElsewhereStopsThePlanAndFreesTheHold) {
  seed(fake);
  LiveExtender& extender = start(consolidation::Mode::kEvict);
  extender.consolidator()->run_once();
  ASSERT_EQ(report(extender)["holds"].size(), 1u);
  fake.finalize_pod_deletion("default", "b");
  fake.create(Resource::Pods, owned_pod("b2", 4));
  ASSERT_TRUE(eventually([&] { return extender.used_on("n1", 0) == 0; }));
  ASSERT_EQ(extender.bind("b2", uid_of(fake, "b2"), "n1"), 200);
  ASSERT_TRUE(eventually([&] { return extender.snapshot().assumed_count() == 0; }));
  fake.create(Resource::Pods, gpu_pod("x", 8));
  EXPECT_EQ(passed(extender, fake, "x", {"n2"}), std::vector<std::string>{"n2"});
  extender.consolidator()->run_once();
  const Json state = report(extender);
  ASSERT_TRUE(state["lastStop"].is_object()) << state.dump();
  EXPECT_NE(state["lastStop"]["reason"].get<std::string>().find("not the planned node n2"),
            std::string::npos)
      << state.dump();
  EXPECT_TRUE(state["holds"].empty()) << state.dump();
  EXPECT_TRUE(state["inFlight"].is_null()) << state.dump();
  EXPECT_TRUE(metric_has(extender, "gpushare_consolidation_holds_total{event=\"released\"} 1"));
  EXPECT_TRUE(metric_has(extender, "gpushare_consolidation_holds_total{event=\"honoured\"} 0"));
  expect_consistent(extender, fake);
}

// A refused eviction (429) releases the hold until the retry holds it again.
TEST_F(Consolidation, ARefusedEvictionHoldsNothingUntilTheRetry) {
  seed(fake);
  LiveExtender& extender = start(consolidation::Mode::kEvict);
  refuse_next_eviction();
  extender.consolidator()->run_once();
  ASSERT_EQ(evictions(fake), 1u);
  EXPECT_TRUE(report(extender)["holds"].empty());
  fake.create(Resource::Pods, gpu_pod("x", 6));
  EXPECT_EQ(passed(extender, fake, "x", {"n2"}), std::vector<std::string>{"n2"});
  clock.advance(6);
  extender.consolidator()->run_once();
  ASSERT_EQ(evictions(fake), 2u);
  EXPECT_EQ(report(extender)["holds"].size(), 1u);
  EXPECT_TRUE(passed(extender, fake, "x", {"n2"}).empty());
  EXPECT_TRUE(metric_has(extender, "gpushare_consolidation_holds_total{event=\"created\"} 2"));
  EXPECT_TRUE(metric_has(extender, "gpushare_consolidation_holds_total{event=\"released\"} 1"));
}

TEST_F(Consolidation, AnInstanceThatMayNotActOnlyPlans) {
  seed(fake);
  LiveOptions options;
  options.consolidation.emplace();
  options.consolidation->act_budget = [] { return std::optional<std::chrono::milliseconds>(); };
  LiveExtender& follower = start(consolidation::Mode::kEvict, options);
  follower.consolidator()->run_once();
  const Json state = report(follower);
  EXPECT_TRUE(state["plan"].is_object()) << state.dump();
  EXPECT_EQ(state["acting"], false);
  EXPECT_EQ(evictions(fake), 0u);
}

TEST_F(Consolidation, MovesPerHourAreBounded) {
  seed(fake);
  // A second GPU to free: c, of another ReplicaSet, alone on n3.
  fake.create(Resource::Nodes, gpu_node("n3", 1, 16));
  Json c = owned_pod("c", 4, "n3", 0);
  c["metadata"]["ownerReferences"][0]["uid"] = "rs-other-uid";
  fake.create(Resource::Pods, c);
  LiveOptions options;
  options.consolidation.emplace();
  options.consolidation->max_moves_per_hour = 1;
  LiveExtender& extender = start(consolidation::Mode::kEvict, options);
  extender.consolidator()->run_once();
  Json state = report(extender);
  ASSERT_TRUE(state["plan"].is_object()) << state.dump();
  EXPECT_EQ(state["plan"]["gpusFreed"], 2);
  EXPECT_EQ(evictions(fake), 1u);
  fake.finalize_pod_deletion("default", "b");
  replace_b(fake, extender);
  ASSERT_TRUE(eventually([&] { return extender.snapshot().assumed_count() == 0; }));
  extender.consolidator()->run_once();  // b's move is done
  extender.consolidator()->run_once();  // c's is planned, but the hour's move is spent
  state = report(extender);
  ASSERT_TRUE(state["plan"].is_object()) << state.dump();
  EXPECT_EQ(state["plan"]["moves"][0]["pod"], "default/c");
  EXPECT_EQ(state["movedInLastHour"], 1);
  EXPECT_EQ(evictions(fake), 1u);
  clock.advance(3601);
  extender.consolidator()->run_once();
  EXPECT_EQ(evictions(fake), 2u);
  expect_consistent(extender, fake);
}

// report() (the endpoint) while rounds run: every answer is a whole document.
TEST_F(Consolidation, TheReportIsReadWhileRoundsRun) {
  seed(fake);
  LiveExtender& extender = start(consolidation::Mode::kPlan);
  std::atomic<bool> done{false};
  std::vector<std::thread> readers;
  std::atomic<int> bad{0};
  for (int i = 0; i < 8; ++i) {
    readers.emplace_back([&] {
      while (!done) {
        const Json state = Json::parse(extender.consolidator()->report(), nullptr, false);
        if (state.is_discarded() || !state.contains("mode")) ++bad;
      }
    });
  }
  for (int round = 0; round < 20; ++round) extender.consolidator()->run_once();
  done = true;
  for (auto& reader : readers) reader.join();
  EXPECT_EQ(bad, 0);
  EXPECT_TRUE(report(extender)["plan"].is_object());
}

}  // namespace
}  // namespace gpushare::testing
