// --leader-elect: two replicas against the fake API server. Only the leader binds and is
// ready; the follower takes over when the leader dies (crash: after the lease expires; clean
// shutdown: at once, the lease is released) and never binds before its model holds the old
// leader's binds, so no GPU is oversubscribed across a failover.

#include <gtest/gtest.h>

#include <atomic>
#include <iostream>
#include <map>

#include "gpushare/kube/node_info.h"
#include "gpushare/kube/pod_info.h"
#include "integration/live_fixture.h"

namespace gpushare::testing {
namespace {

LiveOptions replica(const std::string& identity) {
  return live_options([&](LiveOptions& o) {
    o.leader_election = test_election(identity);
    o.bind_timeout = 2s;
  });
}

std::string uid_of(FakeApiServer& fake, const std::string& name) {
  return fake.get(Resource::Pods, "default", name)->at("metadata").at("uid");
}

Json lease_of(FakeApiServer& fake) {
  auto lease = fake.get(Resource::Leases, "kube-system", "gpushare-extender");
  return lease ? *lease : Json();
}

std::string holder_of(FakeApiServer& fake) {
  const Json lease = lease_of(fake);
  if (!lease.is_object()) return "";
  return lease["spec"].value("holderIdentity", "");
}

// Sum of bound pods' requests per (node, GPU), from the API server's objects.
std::map<std::pair<std::string, std::string>, long long> usage_by_gpu(FakeApiServer& fake) {
  std::map<std::pair<std::string, std::string>, long long> used;
  for (const Json& pod : fake.list(Resource::Pods)) {
    if (!pod["spec"].contains("nodeName")) continue;
    const Json& annotations = pod["metadata"]["annotations"];
    used[{pod["spec"]["nodeName"], annotations["ALIYUN_COM_GPU_MEM_IDX"]}] +=
        std::stoll(annotations["ALIYUN_COM_GPU_MEM_POD"].get<std::string>());
  }
  return used;
}

// One unlabelled series' value from GET /metrics ("no answer" / "missing" otherwise).
std::string metric_value(LiveExtender& replica, const std::string& name) {
  const auto metrics = replica.http().Get("/metrics");
  if (!metrics) return "no answer";
  const std::string prefix = "\n" + name + " ";
  const auto at = metrics->body.find(prefix);
  if (at == std::string::npos) return "missing";
  const auto start = at + prefix.size();
  return metrics->body.substr(start, metrics->body.find('\n', start) - start);
}

// Which replica is ready (the leader), waiting for exactly one.
int wait_for_single_leader(const std::vector<LiveExtender*>& replicas) {
  int leader = -1;
  eventually([&] {
    int ready = 0;
    for (std::size_t i = 0; i < replicas.size(); ++i) {
      if (replicas[i]->readyz() == 200) {
        ++ready;
        leader = static_cast<int>(i);
      }
    }
    return ready == 1;
  });
  return leader;
}

TEST(LeaderElection, OnlyTheLeaderIsReadyAndBinds) {
  FakeApiServer fake;
  fake.create(Resource::Nodes, gpu_node("n1", 2, 32));
  fake.create(Resource::Pods, gpu_pod("p", 4));
  fake.create(Resource::Pods, gpu_pod("q", 4));
  LiveExtender a(fake, replica("replica-a"));
  LiveExtender b(fake, replica("replica-b"));
  ASSERT_TRUE(a.wait_for_sync());
  ASSERT_TRUE(b.wait_for_sync());
  const int leader = wait_for_single_leader({&a, &b});
  ASSERT_GE(leader, 0);
  LiveExtender& chief = leader == 0 ? a : b;
  LiveExtender& follower = leader == 0 ? b : a;
  EXPECT_EQ(holder_of(fake), leader == 0 ? "replica-a" : "replica-b");
  EXPECT_EQ(follower.readyz(), 503);
  // The follower names the leader once its next retry has read the Lease.
  std::string follower_readyz;
  EXPECT_TRUE(eventually([&] {
    const auto readyz = follower.http().Get("/readyz");
    follower_readyz = readyz ? readyz->body : "";
    return readyz && readyz->status == 503 &&
           follower_readyz.find("not the leader (the leader is replica-") != std::string::npos;
  })) << follower_readyz;

  // /metrics says the same, for the "no replica ready" alert, and which replica leads.
  EXPECT_EQ(metric_value(chief, "gpushare_ready"), "1");
  EXPECT_EQ(metric_value(follower, "gpushare_ready"), "0");
  EXPECT_EQ(metric_value(chief, "gpushare_leader"), "1");
  EXPECT_EQ(metric_value(follower, "gpushare_leader"), "0");
  EXPECT_EQ(metric_value(chief, "gpushare_leader_acquisitions_total"), "1");
  EXPECT_EQ(metric_value(follower, "gpushare_leader_acquisitions_total"), "0");
  // The follower's retries find the Lease held.
  EXPECT_TRUE(eventually(
      [&] { return metric_value(follower, "gpushare_leader_failed_attempts_total") != "0"; }));

  // The follower answers bind with an error (kube-scheduler retries), and writes nothing.
  fake.clear_request_log();
  const auto [code, reply] = follower.post("bind", Json{{"PodName", "p"},
                                                        {"PodNamespace", "default"},
                                                        {"PodUID", uid_of(fake, "p")},
                                                        {"Node", "n1"}});
  EXPECT_EQ(code, 500);
  EXPECT_NE(reply["Error"].get<std::string>().find("does not bind"), std::string::npos) << reply;
  EXPECT_EQ(fake.request_count(Verb::Bind), 0u);
  EXPECT_EQ(follower.read([](const core::ClusterModel& m) { return m.assumed_count(); }), 0u);
  // Filter works on both: every replica keeps a warm model.
  const Json pod = *fake.get(Resource::Pods, "default", "p");
  for (LiveExtender* replica : {&chief, &follower}) {
    const auto [status, filtered] =
        replica->post("filter", Json{{"Pod", pod}, {"NodeNames", {"n1"}}});
    EXPECT_EQ(status, 200);
    EXPECT_EQ(filtered["NodeNames"], Json::array({"n1"}));
  }
  // The leader binds.
  EXPECT_EQ(chief.bind("p", uid_of(fake, "p"), "n1"), 200);
  EXPECT_EQ(fake.get(Resource::Pods, "default", "p")->at("spec").value("nodeName", ""), "n1");
  // The lease is renewed with optimistic concurrency (PUT with the resourceVersion read).
  fake.clear_request_log();
  ASSERT_TRUE(fake.wait_for_request_count(Verb::Update, Resource::Leases, 3, 5s));
  for (const RequestRecord& request : fake.requests()) {
    if (request.resource == Resource::Leases) {
      EXPECT_TRUE(request.verb == Verb::Update || request.verb == Verb::Get)
          << to_string(request.verb);
    }
  }
  EXPECT_EQ(holder_of(fake), leader == 0 ? "replica-a" : "replica-b");
}

TEST(LeaderElection, AnExpiredLeaseIsTakenOverAndALiveOneIsNot) {
  FakeApiServer fake;
  fake.create(Resource::Nodes, gpu_node("n1", 1, 16));
  // Someone else holds the lease and keeps renewing it.
  Json lease = make_lease("kube-system", "gpushare-extender", "other");
  lease["spec"]["leaseDurationSeconds"] = 1;
  lease["spec"]["renewTime"] = "2020-01-01T00:00:00.000000Z";
  lease["spec"]["leaseTransitions"] = 4;
  fake.create(Resource::Leases, lease);
  std::atomic<bool> renewing{true};
  std::jthread other([&] {
    for (int i = 0; renewing; ++i) {
      fake.mutate(Resource::Leases, "kube-system", "gpushare-extender", [&](Json& l) {
        l["spec"]["renewTime"] = "2020-01-01T00:00:00." + std::to_string(100000 + i) + "Z";
      });
      std::this_thread::sleep_for(100ms);
    }
  });
  LiveExtender a(fake, replica("replica-a"));
  ASSERT_TRUE(a.wait_for_sync());
  // Several lease durations pass: the lease keeps changing, so it is never expired for us.
  std::this_thread::sleep_for(2500ms);
  EXPECT_EQ(holder_of(fake), "other");
  EXPECT_EQ(a.readyz(), 503);
  EXPECT_FALSE(a.gate()->elector().is_leader());
  // The other holder dies; ours once the lease expired (by our clock, not renewTime's).
  renewing = false;
  other.join();
  ASSERT_TRUE(eventually([&] { return a.readyz() == 200; }, 10s));
  const Json taken = lease_of(fake);
  EXPECT_EQ(taken["spec"]["holderIdentity"], "replica-a");
  EXPECT_EQ(taken["spec"]["leaseTransitions"], 5);
  EXPECT_EQ(taken["spec"]["leaseDurationSeconds"], kTestLeaseDuration.count() / 1000);
}

// A stop can cut a renewal whose PUT the server has already applied: the leader's copy of the
// lease is then one version behind and its release gets 409. It reads the lease again and, as
// it is still the holder, releases that version (not leaving it to expire, which
// would make the followers wait a whole lease duration).
TEST(LeaderElection, ReleaseAfterAStaleCopyReadsTheLeaseAgain) {
  FakeApiServer fake;
  fake.create(Resource::Nodes, gpu_node("n1", 1, 16));
  LiveExtender a(fake, replica("replica-a"));
  ASSERT_TRUE(a.wait_for_sync());
  ASSERT_TRUE(eventually([&] { return a.readyz() == 200; }));
  // The applied-but-unanswered renewal: same holder, a new resourceVersion.
  const Json bumped =
      fake.mutate(Resource::Leases, "kube-system", "gpushare-extender",
                  [](Json& lease) { lease["spec"]["renewTime"] = "2020-01-01T00:00:00.000000Z"; });
  EXPECT_EQ(bumped["spec"]["holderIdentity"], "replica-a");
  EXPECT_TRUE(a.shutdown());
  const Json lease = lease_of(fake);
  EXPECT_EQ(lease["spec"].value("holderIdentity", "?"), "");
  EXPECT_EQ(lease["spec"]["leaseDurationSeconds"], 1);
  EXPECT_EQ(lease["spec"]["leaseTransitions"], bumped["spec"]["leaseTransitions"]);
}

TEST(LeaderElection, TheLeaderStepsDownWhenItCannotRenew) {
  FakeApiServer fake;
  fake.create(Resource::Nodes, gpu_node("n1", 2, 32));
  fake.create(Resource::Pods, gpu_pod("p", 4));
  LiveExtender a(fake, replica("replica-a"));
  ASSERT_TRUE(a.wait_for_sync());
  ASSERT_TRUE(eventually([&] { return a.readyz() == 200; }));
  // Every lease write fails from now on: after the renew deadline the leader steps down, and
  // stops binding (it could not know whether someone else leads now).
  RequestFault fault;
  fault.verb = Verb::Update;
  fault.resource = Resource::Leases;
  fault.status = 500;
  fake.inject_fault(fault, 1000000);
  ASSERT_TRUE(eventually([&] { return a.readyz() == 503; }, 10s));
  EXPECT_FALSE(a.gate()->elector().is_leader());
  EXPECT_GE(a.gate()->elector().counters().lost, 1u);
  EXPECT_EQ(metric_value(a, "gpushare_leader"), "0");
  EXPECT_NE(metric_value(a, "gpushare_leader_lost_total"), "0");
  const auto [code, reply] = a.post("bind", Json{{"PodName", "p"},
                                                 {"PodNamespace", "default"},
                                                 {"PodUID", uid_of(fake, "p")},
                                                 {"Node", "n1"}});
  EXPECT_EQ(code, 500);
  EXPECT_NE(reply["Error"].get<std::string>().find("does not bind"), std::string::npos) << reply;
  // Writes work again: it leads again (a new term, with a new catch-up).
  fake.clear_faults();
  ASSERT_TRUE(eventually([&] { return a.readyz() == 200; }, 10s));
  EXPECT_GE(a.gate()->catch_ups(), 2u);
  EXPECT_EQ(a.bind("p", uid_of(fake, "p"), "n1"), 200);
}

// A "kube-scheduler" behind a Service: binds pods one after another, sending each bind to the
// replicas in turn until one accepts it, choosing the node with filter.
class Scheduler {
 public:
  Scheduler(FakeApiServer& fake, std::vector<std::string> pods, std::vector<std::string> nodes)
      : fake_(fake), pods_(std::move(pods)), nodes_(std::move(nodes)) {}

  void run(const std::function<std::vector<LiveExtender*>()>& replicas, std::stop_token stop) {
    for (const std::string& name : pods_) {
      const Json pod = *fake_.get(Resource::Pods, "default", name);
      bool bound = false;
      while (!bound && !stop.stop_requested()) {
        for (LiveExtender* replica : replicas()) {
          const auto [fstatus, filtered] =
              replica->post("filter", Json{{"Pod", pod}, {"NodeNames", nodes_}});
          if (fstatus != 200 || !filtered["NodeNames"].is_array() || filtered["NodeNames"].empty())
            continue;
          const auto [bstatus, reply] =
              replica->post("bind", Json{{"PodName", name},
                                         {"PodNamespace", "default"},
                                         {"PodUID", pod["metadata"]["uid"]},
                                         {"Node", filtered["NodeNames"][0]}});
          ++attempts;
          if (bstatus == 200) {
            bound = true;
            ++binds;
            break;
          }
        }
        if (!bound) std::this_thread::sleep_for(10ms);
      }
    }
    done = true;
  }

  std::atomic<int> binds{0};
  std::atomic<int> attempts{0};
  std::atomic<bool> done{false};

 private:
  FakeApiServer& fake_;
  std::vector<std::string> pods_;
  std::vector<std::string> nodes_;
};

// The core HA property. The leader binds a stream of pods and dies mid-stream; just before,
// the watches stall, so the follower's model lacks the leader's last binds when it takes the
// lease. It must not bind until its model shows them; the cluster is sized so that every GPU
// fills up, which makes any decision on the stale model oversubscribe a GPU.
TEST(LeaderElection, FailoverMidStreamOfBindsNeverOversubscribes) {
  FakeApiServer fake;
  std::vector<std::string> nodes;
  for (int n = 0; n < 3; ++n) {
    nodes.push_back("n" + std::to_string(n));
    fake.create(Resource::Nodes, gpu_node(nodes.back(), 2, 16));  // 6 GPUs of 8
  }
  std::vector<std::string> pods;
  for (int i = 0; i < 24; ++i) {  // 24 x 2 = 48 = all the memory there is
    pods.push_back("job-" + std::to_string(i));
    fake.create(Resource::Pods, gpu_pod(pods.back(), 2));
  }
  auto a = std::make_unique<LiveExtender>(fake, replica("replica-a"));
  ASSERT_TRUE(a->wait_for_sync());
  ASSERT_TRUE(eventually([&] { return a->readyz() == 200; }));  // a leads
  LiveExtender b(fake, replica("replica-b"));
  ASSERT_TRUE(b.wait_for_sync());

  std::mutex replicas_mutex;
  std::vector<LiveExtender*> replicas = {a.get(), &b};
  Scheduler scheduler(fake, pods, nodes);
  std::jthread scheduling([&](std::stop_token stop) {
    scheduler.run(
        [&] {
          std::lock_guard lock(replicas_mutex);
          return replicas;
        },
        stop);
  });
  // Mid-stream: the watches stall, a keeps binding (b does not see those), then a dies.
  ASSERT_TRUE(eventually([&] { return scheduler.binds >= 6; }, 20s));
  fake.hold_watch_events();
  const int before_hold = scheduler.binds;
  ASSERT_TRUE(eventually([&] { return scheduler.binds >= before_hold + 6; }, 20s));
  {
    std::lock_guard lock(replicas_mutex);
    replicas = {&b};
  }
  const auto crashed_at = std::chrono::steady_clock::now();
  a->crash();  // returns once a's binds in flight are done
  auto bound_in_truth = [&] {
    int bound = 0;
    for (const Json& pod : fake.list(Resource::Pods)) bound += pod["spec"].contains("nodeName");
    return bound;
  };
  const int bound_by_a = bound_in_truth();
  // b takes the lease once it expires, but holds binds back while its model is stale.
  ASSERT_TRUE(eventually([&] { return b.gate()->elector().is_leader(); }, 10s));
  const auto took_over_at = std::chrono::steady_clock::now();
  std::this_thread::sleep_for(500ms);
  EXPECT_EQ(b.readyz(), 503);
  EXPECT_EQ(bound_in_truth(), bound_by_a);
  EXPECT_GT(b.read([](const core::ClusterModel& m) { return m.pod_count(); }), 0u);
  fake.release_watch_events();
  ASSERT_TRUE(eventually([&] { return scheduler.done.load(); }, 30s));
  const double takeover_ms =
      std::chrono::duration<double, std::milli>(took_over_at - crashed_at).count();
  std::cout << "[ measured ] lease takeover after a crash: " << takeover_ms << " ms (lease "
            << kTestLeaseDuration.count() << " ms, retry " << kTestRetryPeriod.count() << " ms)\n";
  ::testing::Test::RecordProperty("takeover_ms", static_cast<int>(takeover_ms));

  EXPECT_EQ(scheduler.binds, 24);
  // No GPU holds more than it has; every pod holds exactly one place.
  for (const auto& [gpu, used] : usage_by_gpu(fake))
    EXPECT_LE(used, 8) << gpu.first << "/" << gpu.second;
  EXPECT_EQ(bound_in_truth(), 24);
  // The new leader's model is the API server's truth.
  ASSERT_TRUE(eventually([&] { return b.snapshot().assumed_count() == 0; }));
  EXPECT_TRUE(b.snapshot().same_allocation_as(truth_model(fake)));
}

// Failover time with two replicas: after a crash (the lease must expire) and after a clean
// shutdown (the lease is released). Bounded waits only; the times are reported, not asserted.
TEST(LeaderElection, FailoverTime) {
  for (const bool clean : {false, true}) {
    FakeApiServer fake;
    fake.create(Resource::Nodes, gpu_node("n1", 4, 64));
    for (int i = 0; i < 8; ++i) fake.create(Resource::Pods, gpu_pod("p" + std::to_string(i), 2));
    auto a = std::make_unique<LiveExtender>(fake, replica("replica-a"));
    ASSERT_TRUE(a->wait_for_sync());
    ASSERT_TRUE(eventually([&] { return a->readyz() == 200; }));
    LiveExtender b(fake, replica("replica-b"));
    ASSERT_TRUE(b.wait_for_sync());
    for (int i = 0; i < 4; ++i)
      ASSERT_EQ(a->bind("p" + std::to_string(i), uid_of(fake, "p" + std::to_string(i)), "n1"), 200);
    std::this_thread::sleep_for(300ms);  // a few renewals
    const auto stopped_at = std::chrono::steady_clock::now();
    if (clean) {
      EXPECT_TRUE(a->shutdown());
      // Released: empty, or already taken by replica-b, which may retry in between.
      EXPECT_NE(holder_of(fake), "replica-a");
    } else {
      a->crash();
      EXPECT_EQ(holder_of(fake), "replica-a");  // left to expire
    }
    ASSERT_TRUE(eventually([&] { return b.readyz() == 200; }, 10s));
    const double failover_ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - stopped_at)
            .count();
    std::cout << "[ measured ] failover after a " << (clean ? "clean shutdown" : "crash") << ": "
              << failover_ms << " ms (lease " << kTestLeaseDuration.count()
              << " ms, renew deadline " << kTestRenewDeadline.count() << " ms, retry "
              << kTestRetryPeriod.count() << " ms)\n";
    ::testing::Test::RecordProperty(clean ? "failover_clean_ms" : "failover_crash_ms",
                                    static_cast<int>(failover_ms));
    for (int i = 4; i < 8; ++i)
      EXPECT_EQ(b.bind("p" + std::to_string(i), uid_of(fake, "p" + std::to_string(i)), "n1"), 200);
    EXPECT_EQ(holder_of(fake), "replica-b");
    const Json lease = lease_of(fake);
    EXPECT_EQ(lease["spec"]["leaseTransitions"], 1);
    ASSERT_TRUE(eventually([&] { return b.snapshot().assumed_count() == 0; }));
    EXPECT_TRUE(b.snapshot().same_allocation_as(truth_model(fake)));
  }
}

}  // namespace
}  // namespace gpushare::testing
