// gpushare-sim: trace-driven placement simulator running the service's placement policies.
#include <fmt/format.h>
#include <fmt/ostream.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <mutex>
#include <thread>

#include "gpushare/core/placement_policy.h"
#include "gpushare/core/policy_registry.h"
#include "gpushare/core/score_mapping.h"
#include "gpushare/kubesim/deployed_run.h"
#include "gpushare/kubesim/scheduler_config.h"
#include "gpushare/sim/arrivals.h"
#include "gpushare/sim/report.h"
#include "gpushare/sim/simulator.h"
#include "gpushare/sim/trace.h"
#include "gpushare/version.h"

namespace {

using gpushare::sim::RunResult;

struct Job {
  std::string policy;
  std::uint64_t seed;
  bool deployed = false;  // through the modelled kube-scheduler (else the policy alone)
};

// The simulator's counterpart of a service policy: the service's fgd and fgd-plus learn their
// target online.
std::string ideal_of(const std::string& service_policy) {
  if (service_policy == "fgd" || service_policy == "fgd-plus") return service_policy + "-online";
  return service_policy;
}

// The deployed path: pods through a modelled kube-scheduler and the service in process.
struct Deployment {
  gpushare::kubesim::SchedulerConfig config;
  gpushare::kubesim::DeployedOptions options;
  std::string label;  // the configuration file's name, in run names
};

std::string deployed_run_name(const std::string& policy, const Deployment& deployment) {
  return policy + "@" + deployment.label;
}

// Runs every (policy, seed) on `jobs` threads; results in job order.
std::vector<RunResult> run_all(const gpushare::sim::Simulator& simulator,
                               const std::vector<Job>& jobs, unsigned threads, bool verbose,
                               const Deployment* deployment) {
  std::vector<RunResult> results(jobs.size());
  std::atomic<std::size_t> next{0};
  std::mutex print;
  const auto worker = [&] {
    for (std::size_t i = next++; i < jobs.size(); i = next++) {
      std::string detail;
      if (jobs[i].deployed) {
        gpushare::kubesim::DeployedOptions options = deployment->options;
        options.extender_policy = jobs[i].policy;
        auto [run, stats, placements, dra_devices] = gpushare::kubesim::run_deployed(
            simulator.nodes(), simulator.pods(), simulator.arrivals(jobs[i].seed),
            simulator.typical_workload(), deployment->config, options, jobs[i].seed,
            deployed_run_name(jobs[i].policy, *deployment));
        results[i] = std::move(run);
        detail = fmt::format(
            "; GPU pods {} ({} failed), CPU-only pods {} ({} failed, {} on GPU nodes); "
            "{} taken without scoring, {} retried; extender: {} filter, {} prioritize, {} bind",
            stats.gpu_pods, stats.failed_gpu_pods, stats.cpu_only_pods, stats.failed_cpu_only_pods,
            stats.cpu_only_on_gpu_nodes, stats.single_feasible, stats.retries,
            stats.extender_filter_calls, stats.extender_prioritize_calls, stats.extender_binds);
      } else {
        results[i] = simulator.run(jobs[i].policy, jobs[i].seed);
      }
      if (verbose) {
        const std::lock_guard lock(print);
        fmt::print(stderr, "{} seed {}: {:.2f} % allocated at the end, {:.2f} s ({:.2f} s CPU){}\n",
                   results[i].policy, jobs[i].seed, results[i].final_alloc_pct, results[i].seconds,
                   results[i].cpu_seconds, detail);
      }
    }
  };
  std::vector<std::jthread> pool;
  for (unsigned t = 1; t < threads; ++t) pool.emplace_back(worker);
  worker();
  return results;
}

}  // namespace

int main(int argc, char** argv) {
  const std::vector<std::string> names = gpushare::sim::sim_policy_names();
  CLI::App app{fmt::format(
      "Trace-driven GPU placement simulator (method of Weng et al., USENIX ATC'23) running the "
      "gpushare service's placement policies.\nPolicies: {} (each also as NAME{}: scored "
      "without CPU and memory, as the extender sees nodes)",
      fmt::join(names, ", "), gpushare::sim::kGpuOnlySuffix)};
  std::string nodes_path;
  std::string pods_path;
  std::vector<std::string> policies{std::string(gpushare::core::kDefaultPolicy)};
  unsigned seeds = 10;
  std::uint64_t first_seed = 42;
  double max_arrival = 1.3;
  std::string out_path;
  std::string plot_path;
  std::string title;
  std::vector<std::string> plot_policies;
  std::string arrivals_path;
  std::string failures_path;
  unsigned jobs = 1;
  bool verbose = false;
  bool arrivals_only = false;
  bool single_gpu_only = false;
  bool gpu_pods_only = false;
  bool with_ideal = false;
  std::string scheduler_config_path;
  std::string kube_version = "current";
  std::string scheduler_name;
  std::string cpu_only_pods = "auto";
  std::int64_t max_pods = 110;
  std::string score_mapping = "rank";
  bool dra = false;
  app.add_option("--nodes", nodes_path, "node list CSV (sn,cpu_milli,memory_mib,gpu,model)")
      ->required();
  app.add_option("--pods", pods_path,
                 "pod list CSV (name,cpu_milli,memory_mib,num_gpu,gpu_milli,...)")
      ->required();
  app.add_option(
         "--policy", policies,
         fmt::format("policies, comma-separated (default {})", gpushare::core::kDefaultPolicy))
      ->delimiter(',')
      ->check([&names](const std::string& value) -> std::string {
        std::string_view name = value;
        if (name.ends_with(gpushare::sim::kGpuOnlySuffix)) {
          name.remove_suffix(gpushare::sim::kGpuOnlySuffix.size());
        }
        if (std::find(names.begin(), names.end(), name) != names.end()) return {};
        return fmt::format("unknown policy '{}' (valid: {}; each also as NAME{})", value,
                           fmt::join(names, ", "), gpushare::sim::kGpuOnlySuffix);
      });
  app.add_option("--seeds", seeds, "number of seeds per policy, the first being --first-seed")
      ->capture_default_str()
      ->check(CLI::Range(1u, 10000u));
  app.add_option("--first-seed", first_seed, "first seed (the paper uses 42..51)")
      ->capture_default_str();
  app.add_option("--max-arrival", max_arrival,
                 "stop when arrived GPU demand reaches this multiple of capacity")
      ->capture_default_str()
      ->check(CLI::Range(0.01, 100.0));
  app.add_option("--out", out_path,
                 "CSV of every point: " + std::string(gpushare::sim::kCsvHeader));
  app.add_option("--plot", plot_path, "SVG line plot of allocation vs. arrived demand");
  app.add_option("--title", title, "plot title (default: the pod file's name)");
  app.add_option("--plot-policy", plot_policies, "policies to draw in the plot (default: all)")
      ->delimiter(',');
  app.add_option("--dump-arrivals", arrivals_path,
                 "write each seed's arrival sequence as CSV (seed,position,pod,num_gpu,gpu_milli,"
                 "arrived_pct), e.g. for bench/sim/packing_bound.py");
  app.add_option("--failures", failures_path,
                 "CSV of every pod that fit nowhere: policy,seed,arrived_pct,pod,num_gpu,gpu_milli,"
                 "cpu_milli,memory_mib,gpu_spec (simulated runs only)");
  app.add_flag("--arrivals-only", arrivals_only, "only write --dump-arrivals, run no policy");
  app.add_option("-j,--jobs", jobs, "runs in parallel")
      ->capture_default_str()
      ->check(CLI::Range(1u, 64u));
  app.add_flag("--single-gpu-only", single_gpu_only,
               "drop multi-GPU pods from each seed's arrivals (always so with --scheduler-config)");
  app.add_flag("--gpu-pods-only", gpu_pods_only,
               "drop pods that want no GPU from each seed's arrivals");
  app.add_option(
      "--scheduler-config", scheduler_config_path,
      "the deployed path: place pods through a model of kube-scheduler configured by this "
      "KubeSchedulerConfiguration file (e.g. deploy/scheduler/kube-scheduler-config.yaml), "
      "with the extender's service in process; --policy then names the extender's policy");
  app.add_flag(
      "--with-ideal", with_ideal,
      "with --scheduler-config, also run each policy alone on the same pods (the simulator's "
      "ideal: fgd and fgd-plus as their -online variants, as the service learns), for the "
      "table and the plot");
  app.add_option("--kube-version", kube_version,
                 "kube-scheduler's scoring formulas: 1.20 (1.20-1.22) or current (1.23 and later)")
      ->capture_default_str()
      ->check(CLI::IsMember({"1.20", "1.21", "1.22", "current"}));
  app.add_option("--scheduler-name", scheduler_name,
                 "the profile GPU pods name (default: the configuration's first profile)");
  app.add_option(
         "--cpu-only-pods", cpu_only_pods,
         "which scheduler CPU-only pods go through: same (the configured profile), default (a "
         "plain default-scheduler, as in a second-scheduler set-up) or auto (same if the "
         "profile is default-scheduler)")
      ->capture_default_str()
      ->check(CLI::IsMember({"auto", "same", "default"}));
  app.add_option("--max-pods", max_pods, "pods per node (kubelet's maxPods) in the deployed path")
      ->capture_default_str()
      ->check(CLI::Range(std::int64_t{1}, std::int64_t{100000}));
  app.add_option("--score-mapping", score_mapping,
                 fmt::format("the extender's --score-mapping in the deployed path: {}",
                             gpushare::core::kScoreMappingNames))
      ->capture_default_str()
      ->check(CLI::IsMember({"minmax", "rank"}));
  app.add_flag(
      "--dra", dra,
      "with --scheduler-config: GPUs as DRA devices (one ResourceSlice per node, shared by "
      "memory) and GPU pods as ResourceClaims; kube's DRA allocator takes the first device "
      "that fits, kube filters and binds, extenders without managedResources score");
  app.add_flag("-v,--verbose", verbose, "print each run as it finishes");
  app.set_version_flag("--version", gpushare::version_string());
  CLI11_PARSE(app, argc, argv);
  // The in-process extender logs every bind at info; a simulation binds thousands.
  spdlog::set_level(spdlog::level::warn);

  try {
    auto nodes = gpushare::sim::parse_nodes_csv(gpushare::sim::read_text_file(nodes_path));
    auto pods = gpushare::sim::parse_pods_csv(gpushare::sim::read_text_file(pods_path));
    const std::size_t node_count = nodes.size();
    const std::size_t pod_count = pods.size();
    std::optional<Deployment> deployment;
    if (!scheduler_config_path.empty()) {
      const auto version = kube_version == "current" ? gpushare::kubesim::KubeVersion::kCurrent
                                                     : gpushare::kubesim::KubeVersion::k1_20;
      deployment.emplace();
      try {
        deployment->config = gpushare::kubesim::parse_scheduler_config(
            gpushare::sim::read_text_file(scheduler_config_path), version);
      } catch (const gpushare::kubesim::ConfigError& error) {
        throw gpushare::sim::TraceError(fmt::format("{}: {}", scheduler_config_path, error.what()));
      }
      deployment->options.version = version;
      deployment->options.scheduler_name = scheduler_name;
      deployment->options.cpu_only_pods =
          cpu_only_pods == "same"      ? gpushare::kubesim::CpuOnlyPods::kSameProfile
          : cpu_only_pods == "default" ? gpushare::kubesim::CpuOnlyPods::kDefaultScheduler
                                       : gpushare::kubesim::CpuOnlyPods::kAuto;
      deployment->options.max_pods_per_node = max_pods;
      deployment->options.score_mapping = score_mapping;
      deployment->options.dra = dra;
      deployment->label =
          std::filesystem::path(scheduler_config_path).stem().string() + (dra ? "+dra" : "");
      for (const auto& policy : policies) {
        if (!gpushare::core::make_policy(policy)) {
          throw gpushare::sim::TraceError(
              fmt::format("--policy {}: the deployed path runs the service's policies: {}", policy,
                          fmt::join(gpushare::core::policy_names(), ", ")));
        }
      }
      single_gpu_only = true;
    }
    gpushare::sim::SimulationOptions options;
    options.max_arrival = max_arrival;
    options.single_gpu_only = single_gpu_only;
    options.gpu_pods_only = gpu_pods_only;
    const gpushare::sim::Simulator simulator(std::move(nodes), std::move(pods), options);
    const double capacity_gpus = static_cast<double>(simulator.capacity()) /
                                 static_cast<double>(gpushare::sim::kUnitsPerGpu);
    fmt::print(
        "{} nodes, {:.0f} GPUs; {} pods in the trace, {} typical shapes (95 %); "
        "seeds {}..{}; arrival up to {:.0f} %\n\n",
        node_count, capacity_gpus, pod_count, simulator.typical_workload().size(), first_seed,
        first_seed + seeds - 1, max_arrival * 100);

    if (!arrivals_path.empty()) {
      std::ofstream out(arrivals_path);
      out << "seed,position,pod,num_gpu,gpu_milli,arrived_pct\n";
      const auto& trace = simulator.pods();
      for (unsigned s = 0; s < seeds; ++s) {
        const auto order = simulator.arrivals(first_seed + s);
        gpushare::core::Units arrived = 0;
        for (std::size_t position = 0; position < order.size(); ++position) {
          const auto& pod = trace[order[position]];
          arrived += pod.demand.total_gpu();
          fmt::print(
              out, "{},{},{},{},{},{:.4f}\n", first_seed + s, position, pod.name,
              pod.demand.gpu_count, pod.demand.per_gpu,
              100.0 * static_cast<double>(arrived) / static_cast<double>(simulator.capacity()));
        }
      }
      if (!out) throw gpushare::sim::TraceError("cannot write " + arrivals_path);
    }
    if (arrivals_only) return 0;

    std::vector<Job> job_list;
    for (const auto& policy : policies) {
      if (deployment && with_ideal) {
        for (unsigned s = 0; s < seeds; ++s)
          job_list.push_back({ideal_of(policy), first_seed + s, false});
      }
      for (unsigned s = 0; s < seeds; ++s)
        job_list.push_back({policy, first_seed + s, deployment.has_value()});
    }
    const std::vector<RunResult> results = run_all(
        simulator, job_list, std::min<unsigned>(jobs, static_cast<unsigned>(job_list.size())),
        verbose, deployment ? &*deployment : nullptr);
    const auto summaries = gpushare::sim::summarize(results);
    fmt::print(
        "GPU allocation (%) at arrived GPU demand of 80..120 % of capacity, mean of {} "
        "seed(s):\n\n",
        seeds);
    gpushare::sim::write_table(std::cout, summaries, capacity_gpus);

    if (!out_path.empty()) {
      std::ofstream out(out_path);
      gpushare::sim::write_curve_csv(out, results);
      if (!out) throw gpushare::sim::TraceError("cannot write " + out_path);
    }
    if (!failures_path.empty()) {
      std::ofstream out(failures_path);
      out << "policy,seed,arrived_pct,pod,num_gpu,gpu_milli,cpu_milli,memory_mib,gpu_spec\n";
      for (const auto& result : results) {
        for (const auto& failure : result.failures) {
          const auto& pod = simulator.pods()[failure.pod];
          fmt::print(out, "{},{},{:.4f},{},{},{},{},{},{}\n", result.policy, result.seed,
                     failure.arrived_pct, pod.name, pod.demand.gpu_count, pod.demand.per_gpu,
                     pod.demand.cpu_milli, pod.demand.memory,
                     fmt::join(pod.demand.allowed_models, "|"));
        }
      }
      if (!out) throw gpushare::sim::TraceError("cannot write " + failures_path);
    }
    if (!plot_path.empty()) {
      std::ofstream out(plot_path);
      if (title.empty()) title = std::filesystem::path(pods_path).filename().string();
      std::vector<gpushare::sim::PolicySummary> plotted;
      for (const auto& summary : summaries) {
        if (plot_policies.empty() || std::find(plot_policies.begin(), plot_policies.end(),
                                               summary.policy) != plot_policies.end()) {
          plotted.push_back(summary);
        }
      }
      gpushare::sim::write_svg(out, plotted, title);
      if (!out) throw gpushare::sim::TraceError("cannot write " + plot_path);
    }
  } catch (const std::exception& error) {
    fmt::print(stderr, "gpushare-sim: {}\n", error.what());
    return 1;
  }
  return 0;
}
