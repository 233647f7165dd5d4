// gpushare-soak: a bounded soak run of the live extender against the in-process fake API server,
// with churn, then a check of the extender's model against the API server's truth.
//
//   gpushare-soak [--seconds N] [--seed S] [--ha]
//
// Churn, all at once from several threads for N seconds (default 60):
//  * a scheduler creates GPU pods and places each one with filter -> prioritize -> bind over HTTP;
//    every fourth pod asks for CPU and memory only: prioritize over HTTP, then bound directly
//    (kube-scheduler's default binder), as a prioritize-only extender entry would see it;
//  * pods are deleted (immediately, or gracefully: deletionTimestamp first, gone later) and some
//    finish (phase Succeeded), keeping the cluster roughly two-thirds full;
//  * nodes are added and removed (with their pods), and unhealthy-gpu ConfigMaps come and go;
//  * watches are dropped (reset), closed cleanly, and from time to time history is compacted so
//    that the reflectors must relist;
//  * with --ha: two replicas with leader election; the leader is shut down and a fresh replica
//    started from time to time (clean shutdowns and crashes alternate).
// Then churn stops and the run checks, within a bounded wait, that (1) the serving extender's model
// equals one built from the fake's objects (ClusterModel::same_allocation_as: pods with their
// GPUs, CPU and memory, and every node's usage; differences are printed), (2) no GPU is
// oversubscribed in the API server's truth. It reports counts and RSS (VmRSS after warm-up and
// at the end; the fake API server runs in the same process).
// Exit status: 0 if both checks pass, 1 otherwise.

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <atomic>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "gpushare/kube/node_info.h"
#include "gpushare/kube/pod_info.h"
#include "integration/live_fixture.h"

namespace gpushare::testing {
namespace {

long rss_kib() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stol(line.substr(6));
  }
  return -1;
}

struct Counts {
  std::atomic<long> pods_created{0}, filters{0}, prioritizes{0}, binds_ok{0}, binds_failed{0},
      unschedulable{0};
  std::atomic<long> cpu_only_bound{0};
  std::atomic<long> pods_deleted{0}, pods_deleted_gracefully{0}, pods_finished{0};
  std::atomic<long> nodes_added{0}, nodes_removed{0}, configmap_changes{0};
  std::atomic<long> watch_drops{0}, watch_closes{0}, compactions{0}, leader_changes{0};
};

// The API server's truth as a model, the unhealthy-GPU ConfigMaps included.
core::ClusterModel truth_with_unhealthy_gpus(FakeApiServer& fake) {
  core::ClusterModel model;
  const kube::ResourceNames names;
  for (const Json& node : fake.list(Resource::Nodes))
    model.upsert_node(kube::parse_node(node, names));
  for (const Json& configmap : fake.list(Resource::ConfigMaps, names.unhealthy_namespace)) {
    if (auto unhealthy = kube::parse_unhealthy_configmap(configmap))
      model.set_unhealthy(unhealthy->node, unhealthy->indices);
  }
  for (const Json& object : fake.list(Resource::Pods)) {
    if (auto allocation = kube::allocation_of(kube::parse_pod(object, names)))
      model.add_pod(std::move(*allocation));
  }
  return model;
}

std::string describe(const core::PodAllocation& pod) {
  return fmt::format("node {} gpus [{}] {} per GPU, cpu {}m, memory {}{}", pod.node,
                     fmt::join(pod.gpus, ","), pod.per_gpu, pod.cpu_milli, pod.memory,
                     pod.assumed ? " (assumed)" : "");
}

// The pod's GPU memory limit, 0 for a pod without one (CPU-only).
long long gpu_request_of(const Json& pod) {
  static const Json::json_pointer limit("/spec/containers/0/resources/limits/aliyun.com~1gpu-mem");
  return std::stoll(pod.value(limit, std::string("0")));
}

// What differs between the extender's model and the truth, one line each.
std::vector<std::string> model_diff(const core::ClusterModel& model,
                                    const core::ClusterModel& truth) {
  std::vector<std::string> diff;
  for (const auto& [uid, pod] : model.pods()) {
    const core::PodAllocation* other = truth.find_pod(uid);
    if (other == nullptr) {
      diff.push_back(fmt::format("pod {} only in the extender: {}", uid, describe(pod)));
    } else if (!(*other == pod)) {
      diff.push_back(
          fmt::format("pod {}: extender {} / truth {}", uid, describe(pod), describe(*other)));
    }
  }
  for (const auto& [uid, pod] : truth.pods()) {
    if (model.find_pod(uid) == nullptr)
      diff.push_back(fmt::format("pod {} missing from the extender: {}", uid, describe(pod)));
  }
  for (const auto& node : truth.nodes()) {
    const core::NodeState* mine = model.find_node(node.name());
    if (mine == nullptr) {
      diff.push_back(fmt::format("node {} missing from the extender", node.name()));
      continue;
    }
    for (int i = 0; i < std::min(node.gpu_count(), mine->gpu_count()); ++i) {
      const auto& a = mine->gpus()[static_cast<std::size_t>(i)];
      const auto& b = node.gpus()[static_cast<std::size_t>(i)];
      if (a.capacity != b.capacity || a.used != b.used || a.healthy != b.healthy) {
        diff.push_back(fmt::format("node {} GPU {}: extender {}/{}{} / truth {}/{}{}", node.name(),
                                   i, a.used, a.capacity, a.healthy ? "" : " unhealthy", b.used,
                                   b.capacity, b.healthy ? "" : " unhealthy"));
      }
    }
    if (mine->cpu_used() != node.cpu_used() || mine->memory_used() != node.memory_used()) {
      diff.push_back(fmt::format(
          "node {}: extender cpu {}m memory {} used / truth cpu {}m memory {}", node.name(),
          mine->cpu_used(), mine->memory_used(), node.cpu_used(), node.memory_used()));
    }
    if (mine->gpu_count() != node.gpu_count()) {
      diff.push_back(fmt::format("node {}: {} GPUs in the extender, {} in truth", node.name(),
                                 mine->gpu_count(), node.gpu_count()));
    }
  }
  for (const auto& node : model.nodes()) {
    if (truth.find_node(node.name()) == nullptr)
      diff.push_back(fmt::format("node {} only in the extender", node.name()));
  }
  return diff;
}

// Per (node, GPU): held memory over capacity, from the API server's objects.
std::vector<std::string> oversubscribed(const core::ClusterModel& truth) {
  std::vector<std::string> over;
  for (const auto& node : truth.nodes()) {
    for (int i = 0; i < node.gpu_count(); ++i) {
      const auto& gpu = node.gpus()[static_cast<std::size_t>(i)];
      if (gpu.used > gpu.capacity)
        over.push_back(fmt::format("{} GPU {}: {} > {}", node.name(), i, gpu.used, gpu.capacity));
    }
  }
  return over;
}

struct Args {
  int seconds = 60;
  unsigned seed = 1;
  bool ha = false;
  bool quiet = false;  // errors only (churn makes many expected bind-failure warnings)
};

Args parse_args(int argc, char** argv) {
  Args args;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--seconds" && i + 1 < argc) {
      args.seconds = std::stoi(argv[++i]);
    } else if (arg == "--seed" && i + 1 < argc) {
      args.seed = static_cast<unsigned>(std::stoul(argv[++i]));
    } else if (arg == "--ha") {
      args.ha = true;
    } else if (arg == "--quiet") {
      args.quiet = true;
    } else {
      std::cerr << "usage: gpushare-soak [--seconds N] [--seed S] [--ha] [--quiet]\n";
      std::exit(2);
    }
  }
  return args;
}

class Soak {
 public:
  explicit Soak(Args args) : args_(args), random_(args.seed) {}

  int run() {
    FakeApiServerOptions fake_options;
    fake_options.bookmark_interval = std::chrono::milliseconds(500);
    FakeApiServer fake(fake_options);
    fake_ = &fake;
    for (int i = 0; i < 6; ++i) add_node();
    counts_.nodes_added = 0;

    std::vector<std::unique_ptr<LiveExtender>> replicas;
    auto make_replica = [&] {
      LiveOptions options;
      options.bind_timeout = 2s;
      if (args_.ha) {
        options.leader_election = test_election(fmt::format("soak-{}", ++replica_serial_));
      }
      return std::make_unique<LiveExtender>(fake, options);
    };
    replicas.push_back(make_replica());
    if (args_.ha) replicas.push_back(make_replica());
    for (auto& replica : replicas) {
      if (!replica->wait_for_sync()) {
        std::cerr << "soak: initial sync failed\n";
        return 1;
      }
    }
    {
      std::lock_guard lock(replicas_mutex_);
      for (auto& replica : replicas) serving_.push_back(replica.get());
    }

    const auto start = std::chrono::steady_clock::now();
    const auto end = start + std::chrono::seconds(args_.seconds);
    long rss_warm = -1;
    {
      std::vector<std::jthread> workers;
      workers.emplace_back([&](std::stop_token stop) { schedule(stop, args_.seed * 7 + 1); });
      workers.emplace_back([&](std::stop_token stop) { schedule(stop, args_.seed * 7 + 2); });
      workers.emplace_back([&](std::stop_token stop) { delete_pods(stop); });
      workers.emplace_back([&](std::stop_token stop) { churn_nodes(stop); });
      workers.emplace_back([&](std::stop_token stop) { churn_watches(stop); });
      const auto warm_at = start + std::chrono::seconds(std::max(2, args_.seconds / 6));
      auto next_leader_change = start + 5s;
      while (std::chrono::steady_clock::now() < end) {
        std::this_thread::sleep_for(100ms);
        if (rss_warm < 0 && std::chrono::steady_clock::now() >= warm_at) rss_warm = rss_kib();
        if (args_.ha && std::chrono::steady_clock::now() >= next_leader_change) {
          change_leader(replicas, make_replica);
          next_leader_change = std::chrono::steady_clock::now() + 5s;
        }
        const auto elapsed = std::chrono::duration_cast<std::chrono::seconds>(
            std::chrono::steady_clock::now() - start);
        if (elapsed.count() % 10 == 0 && elapsed.count() != last_report_) {
          last_report_ = elapsed.count();
          std::cerr << fmt::format(
              "soak: {:4}s  pods created {} bound {} deleted {}  nodes +{} -{}  watch drops {}  "
              "RSS {} KiB\n",
              elapsed.count(), counts_.pods_created.load(), counts_.binds_ok.load(),
              counts_.pods_deleted.load(), counts_.nodes_added.load(), counts_.nodes_removed.load(),
              counts_.watch_drops.load() + counts_.watch_closes.load(), rss_kib());
        }
      }
    }  // workers stop and join
    fake.release_watch_events();
    const double churn_seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

    // Quiescence: the serving replica (the leader in HA mode) must converge on the truth.
    LiveExtender* serving = nullptr;
    if (args_.ha) {
      eventually(
          [&] {
            for (auto& replica : replicas) {
              if (replica->readyz() == 200) serving = replica.get();
            }
            return serving != nullptr;
          },
          30s);
    } else {
      serving = replicas.front().get();
    }
    bool same = false;
    core::ClusterModel truth;
    const auto settle_start = std::chrono::steady_clock::now();
    if (serving != nullptr) {
      same = eventually(
          [&] {
            truth = truth_with_unhealthy_gpus(fake);
            const core::ClusterModel model = serving->snapshot();
            return model.assumed_count() == 0 && model.same_allocation_as(truth);
          },
          60s);
    }
    const double settle_seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - settle_start).count();
    const long rss_end = rss_kib();
    truth = truth_with_unhealthy_gpus(fake);
    const std::vector<std::string> diff = serving
                                              ? model_diff(serving->snapshot(), truth)
                                              : std::vector<std::string>{"no replica became ready"};
    const std::vector<std::string> over = oversubscribed(truth);
    std::size_t live_pods = fake.list(Resource::Pods).size();

    std::cout << fmt::format(
        "soak: {:.1f} s of churn (seed {}{}), settled in {:.2f} s\n"
        "  pods: created {}, filter calls {}, prioritize calls {}, binds ok {}, binds failed {}, "
        "unschedulable {}, "
        "CPU-only bound {}\n"
        "  pods: deleted {} ({} gracefully), finished {}, still in the API server {}\n"
        "  nodes: added {}, removed {}; unhealthy-gpu ConfigMap changes {}\n"
        "  watches: dropped {}, closed {}, history compactions {}{}\n"
        "  final model: {} nodes, {} pods holding GPU memory and {} only CPU and memory, {} units "
        "used of {}\n"
        "  model vs API server truth: {} ({} differences)\n"
        "  oversubscribed GPUs in truth: {}\n"
        "  RSS: {} KiB after warm-up, {} KiB at the end, growth {} KiB\n",
        churn_seconds, args_.seed, args_.ha ? ", two replicas with leader election" : "",
        settle_seconds, counts_.pods_created.load(), counts_.filters.load(),
        counts_.prioritizes.load(), counts_.binds_ok.load(), counts_.binds_failed.load(),
        counts_.unschedulable.load(), counts_.cpu_only_bound.load(), counts_.pods_deleted.load(),
        counts_.pods_deleted_gracefully.load(), counts_.pods_finished.load(), live_pods,
        counts_.nodes_added.load(), counts_.nodes_removed.load(), counts_.configmap_changes.load(),
        counts_.watch_drops.load(), counts_.watch_closes.load(), counts_.compactions.load(),
        args_.ha ? fmt::format("; leader changes {}", counts_.leader_changes.load())
                 : std::string(),
        truth.node_count(), truth.gpu_pod_count(), truth.pod_count() - truth.gpu_pod_count(),
        truth.total_used(), truth.total_capacity(),
        same && diff.empty() ? "identical" : "DIFFERENT", diff.size(), over.size(), rss_warm,
        rss_end, rss_end - rss_warm);
    for (std::size_t i = 0; i < diff.size() && i < 20; ++i) std::cout << "    " << diff[i] << "\n";
    for (const auto& line : over) std::cout << "    oversubscribed: " << line << "\n";
    {
      std::lock_guard lock(replicas_mutex_);
      serving_.clear();
    }
    replicas.clear();
    retired_.clear();
    return same && diff.empty() && over.empty() ? 0 : 1;
  }

 private:
  int uniform(int low, int high) {
    std::lock_guard lock(random_mutex_);
    return std::uniform_int_distribution<int>(low, high)(random_);
  }

  std::vector<std::string> node_names() {
    std::vector<std::string> names;
    for (const Json& node : fake_->list(Resource::Nodes)) names.push_back(node["metadata"]["name"]);
    return names;
  }

  void add_node() {
    const int gpus = uniform(1, 4);
    const int per_gpu = uniform(0, 1) ? 16 : 24;
    const std::string name = fmt::format("node-{}", node_serial_++);
    fake_->create(Resource::Nodes, gpu_node(name, gpus, static_cast<long long>(gpus) * per_gpu));
    ++counts_.nodes_added;
  }

  std::vector<LiveExtender*> serving() {
    std::lock_guard lock(replicas_mutex_);
    return serving_;
  }

  // kube-scheduler: create a pod, filter, prioritize, bind to the best node (any replica that
  // accepts; a follower refuses bind).
  void schedule(std::stop_token stop, unsigned seed) {
    std::mt19937 random(seed);
    long serial = 0;
    while (!stop.stop_requested()) {
      const std::string name = fmt::format("soak-{}-{}", seed, serial++);
      const int request = std::uniform_int_distribution<int>(1, 8)(random);
      const bool cpu_only = serial % 4 == 0;
      // Every pod asks for CPU and memory too, so the model's CPU and memory are compared as well.
      const std::string cpu =
          fmt::format("{}m", std::uniform_int_distribution<int>(1, 4000)(random));
      const std::string memory =
          fmt::format("{}Mi", std::uniform_int_distribution<int>(1, 8192)(random));
      Json pod;
      try {
        Json object = cpu_only ? cpu_pod(name, "", cpu, memory) : gpu_pod(name, request);
        if (!cpu_only)
          object["spec"]["containers"][0]["resources"]["requests"] = {{"cpu", cpu},
                                                                      {"memory", memory}};
        pod = fake_->create(Resource::Pods, std::move(object));
      } catch (const std::exception&) {
        continue;
      }
      ++counts_.pods_created;
      if (cpu_only) {
        place_cpu_only(pod, random);
        continue;
      }
      const std::vector<std::string> nodes = node_names();
      bool placed = false;
      for (int attempt = 0; attempt < 3 && !placed && !stop.stop_requested(); ++attempt) {
        for (LiveExtender* replica : serving()) {
          const auto [fstatus, filtered] =
              replica->post("filter", Json{{"Pod", pod}, {"NodeNames", nodes}});
          ++counts_.filters;
          if (fstatus != 200 || !filtered["NodeNames"].is_array()) continue;
          if (filtered["NodeNames"].empty()) {
            ++counts_.unschedulable;
            placed = true;
            // Give up on it, as a job controller would: on a fast machine the scheduler outruns
            // the deleter, and pending pods piling up in the fake would swamp the RSS figure.
            try {
              fake_->remove(Resource::Pods, "default", name);
              ++counts_.pods_deleted;
            } catch (const std::exception&) {
              // The deleter got there first.
            }
            break;
          }
          std::string best = filtered["NodeNames"][0];
          if (filtered["NodeNames"].size() > 1) {
            const auto [pstatus, scores] = replica->post(
                "prioritize", Json{{"Pod", pod}, {"NodeNames", filtered["NodeNames"]}});
            ++counts_.prioritizes;
            long long top = -1;
            if (pstatus == 200 && scores.is_array()) {
              for (const auto& entry : scores) {
                if (entry["Score"].get<long long>() > top) {
                  top = entry["Score"];
                  best = entry["Host"];
                }
              }
            }
          }
          const auto [bstatus, reply] =
              replica->post("bind", Json{{"PodName", name},
                                         {"PodNamespace", "default"},
                                         {"PodUID", pod["metadata"]["uid"]},
                                         {"Node", best}});
          if (bstatus == 200) {
            ++counts_.binds_ok;
            placed = true;
            break;
          }
          ++counts_.binds_failed;
        }
        if (!placed) std::this_thread::sleep_for(20ms);
      }
      std::this_thread::sleep_for(
          std::chrono::milliseconds(std::uniform_int_distribution<int>(0, 4)(random)));
    }
  }

  // A pod without GPU memory: kube-scheduler asks a prioritize-only extender entry for scores,
  // then binds it itself (the default binder), here by setting spec.nodeName in the fake.
  void place_cpu_only(const Json& pod, std::mt19937& random) {
    const std::vector<std::string> nodes = node_names();
    if (nodes.empty()) return;
    std::string best =
        nodes[std::uniform_int_distribution<std::size_t>(0, nodes.size() - 1)(random)];
    for (LiveExtender* replica : serving()) {
      const auto [status, scores] =
          replica->post("prioritize", Json{{"Pod", pod}, {"NodeNames", nodes}});
      ++counts_.prioritizes;
      if (status != 200 || !scores.is_array()) continue;
      long long top = -1;
      for (const auto& entry : scores) {
        if (entry["Score"].get<long long>() > top) {
          top = entry["Score"];
          best = entry["Host"];
        }
      }
      break;
    }
    try {
      fake_->mutate(Resource::Pods, "default", pod["metadata"]["name"].get<std::string>(),
                    [&](Json& p) {
                      p["spec"]["nodeName"] = best;
                      p["status"]["phase"] = "Running";
                    });
      ++counts_.cpu_only_bound;
    } catch (const std::exception&) {
      // deleted meanwhile
    }
  }

  // Keeps the cluster about two-thirds full: deletes (immediately or gracefully) or finishes pods.
  void delete_pods(std::stop_token stop) {
    httplib::Client api(fake_->host(), fake_->port());
    std::vector<std::string> terminating;
    while (!stop.stop_requested()) {
      std::this_thread::sleep_for(std::chrono::milliseconds(uniform(2, 15)));
      // Graceful deletions end (the kubelet's final word) a little later.
      if (!terminating.empty() && uniform(0, 3) == 0) {
        const std::string name = terminating.back();
        terminating.pop_back();
        try {
          fake_->finalize_pod_deletion("default", name);
        } catch (const std::exception&) {
        }
      }
      const std::vector<Json> pods = fake_->list(Resource::Pods, "default");
      if (pods.empty()) continue;
      long long used = 0, capacity = 0;
      for (const Json& node : fake_->list(Resource::Nodes)) {
        capacity += std::stoll(node["status"]["capacity"]["aliyun.com/gpu-mem"].get<std::string>());
      }
      for (const Json& pod : pods) {
        if (pod["spec"].contains("nodeName") && pod["status"].value("phase", "") != "Succeeded") {
          used += gpu_request_of(pod);
        }
      }
      const Json& victim =
          pods[static_cast<std::size_t>(uniform(0, static_cast<int>(pods.size()) - 1))];
      const std::string name = victim["metadata"]["name"];
      const bool bound = victim["spec"].contains("nodeName");
      if (bound && used * 3 < capacity * 2) continue;  // under two-thirds: let it fill
      if (victim["metadata"].contains("deletionTimestamp")) continue;
      const int how = uniform(0, 9);
      try {
        if (bound && how < 2 && victim["status"].value("phase", "") != "Succeeded") {
          fake_->mutate(Resource::Pods, "default", name,
                        [](Json& p) { p["status"]["phase"] = "Succeeded"; });
          ++counts_.pods_finished;
        } else if (bound && how < 5) {
          auto result = api.Delete("/api/v1/namespaces/default/pods/" + name);
          if (result && result->status == 200) {
            terminating.push_back(name);
            ++counts_.pods_deleted;
            ++counts_.pods_deleted_gracefully;
          }
        } else {
          fake_->remove(Resource::Pods, "default", name);
          ++counts_.pods_deleted;
        }
      } catch (const std::exception&) {
        // raced with another change (gone already): fine
      }
    }
    for (const std::string& name : terminating) {
      try {
        fake_->finalize_pod_deletion("default", name);
      } catch (const std::exception&) {
      }
    }
  }

  // Nodes join and leave (a leaving node's pods are deleted, as the pod GC would); unhealthy
  // GPUs are reported and cleared.
  void churn_nodes(std::stop_token stop) {
    while (!stop.stop_requested()) {
      std::this_thread::sleep_for(std::chrono::milliseconds(uniform(300, 900)));
      const std::vector<std::string> names = node_names();
      const int action = uniform(0, 9);
      try {
        if (action < 4 || names.size() < 4) {
          add_node();
        } else if (action < 7 && names.size() > 3) {
          const std::string victim =
              names[static_cast<std::size_t>(uniform(0, static_cast<int>(names.size()) - 1))];
          fake_->remove(Resource::Nodes, "", victim);
          ++counts_.nodes_removed;
          for (const Json& pod : fake_->list(Resource::Pods, "default")) {
            if (pod["spec"].value("nodeName", "") == victim) {
              try {
                fake_->remove(Resource::Pods, "default",
                              pod["metadata"]["name"].get<std::string>());
                ++counts_.pods_deleted;
              } catch (const std::exception&) {
              }
            }
          }
        } else {
          const std::string node =
              names[static_cast<std::size_t>(uniform(0, static_cast<int>(names.size()) - 1))];
          const std::string cm = "unhealthy-gpu-" + node;
          if (fake_->get(Resource::ConfigMaps, "kube-system", cm)) {
            fake_->remove(Resource::ConfigMaps, "kube-system", cm);
          } else {
            fake_->create(Resource::ConfigMaps, make_configmap("kube-system", cm, {{"gpus", "0"}}));
          }
          ++counts_.configmap_changes;
        }
      } catch (const std::exception&) {
      }
    }
  }

  // Watches end every way they can: reset, clean close, and 410 after compaction.
  void churn_watches(std::stop_token stop) {
    while (!stop.stop_requested()) {
      std::this_thread::sleep_for(std::chrono::milliseconds(uniform(500, 2000)));
      if (stop.stop_requested()) break;
      const int action = uniform(0, 9);
      if (action < 5) {
        fake_->drop_all_watches();
        ++counts_.watch_drops;
      } else if (action < 8) {
        fake_->close_all_watches();
        ++counts_.watch_closes;
      } else {
        // Watches in flight that fall behind get 410 and relist.
        fake_->hold_watch_events();
        std::this_thread::sleep_for(100ms);
        fake_->compact_to_current();
        fake_->drop_all_watches();
        fake_->release_watch_events();
        ++counts_.compactions;
      }
    }
  }

  template <typename Make>
  void change_leader(std::vector<std::unique_ptr<LiveExtender>>& replicas, Make& make_replica) {
    // Find the leader; stop it (alternately cleanly and as a crash); start a fresh follower.
    for (std::size_t i = 0; i < replicas.size(); ++i) {
      if (replicas[i]->readyz() != 200) continue;
      std::unique_ptr<LiveExtender> leader = std::move(replicas[i]);
      replicas.erase(replicas.begin() + static_cast<std::ptrdiff_t>(i));
      {
        std::lock_guard lock(replicas_mutex_);
        serving_.clear();
        for (auto& replica : replicas) serving_.push_back(replica.get());
      }
      if (counts_.leader_changes % 2 == 0) {
        leader->shutdown();
      } else {
        leader->crash();
      }
      retired_.push_back(std::move(leader));  // scheduler threads may still hold the pointer
      ++counts_.leader_changes;
      replicas.push_back(make_replica());
      replicas.back()->wait_for_sync();
      std::lock_guard lock(replicas_mutex_);
      serving_.push_back(replicas.back().get());
      return;
    }
  }

  Args args_;
  std::mt19937 random_;
  std::mutex random_mutex_;
  FakeApiServer* fake_ = nullptr;
  Counts counts_;
  int node_serial_ = 0;
  int replica_serial_ = 0;
  long last_report_ = 0;
  std::mutex replicas_mutex_;
  std::vector<LiveExtender*> serving_;
  std::vector<std::unique_ptr<LiveExtender>> retired_;
};

}  // namespace
}  // namespace gpushare::testing

int main(int argc, char** argv) {
  const auto args = gpushare::testing::parse_args(argc, argv);
  // Churn makes many expected bind failures (warnings); --quiet keeps only errors.
  spdlog::set_level(args.quiet ? spdlog::level::err : spdlog::level::warn);
  return gpushare::testing::Soak(args).run();
}
