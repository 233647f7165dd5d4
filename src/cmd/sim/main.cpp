// gpushare-sim: trace-driven placement simulator running the service's placement policies.
#include <fmt/format.h>
#include <fmt/ostream.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <cstdio>
#include <exception>
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
#include "gpushare/sim/churn.h"
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

// The command line's values.
struct SimFlags {
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
  // The time mode.
  bool churn = false;
  std::vector<double> loads{1.0};
  double warmup = 86400;
  double duration = 86400;
  double max_lifetime = 86400;
  std::string arrival_process = "poisson";
  std::string retry = "departure";
  double give_up_after = 3600;
  double sample_every = 600;
  std::vector<double> consolidate_budgets;
  double consolidate_every = 300;
  int consolidate_max_moves = 64;
  int consolidate_per_gpu = 2;
  double consolidate_opt_in = 1.0;
  bool consolidate_pending = true;
};

void add_churn_flags(CLI::App& app, SimFlags& f) {
  app.add_flag("--churn", f.churn,
               "the time mode: pods arrive (seeded shuffle of the trace, Poisson gaps at the rate "
               "that holds --load) and depart after their trace lifetime (creation_time to "
               "deletion_time; pods without one draw from the trace's); a pod that fits nowhere "
               "waits and is retried, giving up after --give-up-after; figures are time averages "
               "after --warmup; --out writes the time series: " +
                   std::string(gpushare::sim::kChurnCsvHeader));
  app.add_option("--load", f.loads,
                 "time mode: offered loads, comma-separated, as GPU-seconds wanted per second "
                 "over GPUs (1 = 100 %)")
      ->delimiter(',')
      ->capture_default_str()
      ->check(CLI::Range(0.01, 10.0));
  app.add_option("--warmup", f.warmup, "time mode: seconds left out of the figures")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 1e9));
  app.add_option("--duration", f.duration, "time mode: seconds measured after the warm-up")
      ->capture_default_str()
      ->check(CLI::Range(1.0, 1e9));
  app.add_option("--max-lifetime", f.max_lifetime,
                 "time mode: lifetimes longer than this many seconds are cut to it (0: none; the "
                 "trace's longest run for months, and steady state would take as long)")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 1e10));
  app.add_option("--arrival-process", f.arrival_process,
                 "time mode: gaps between arrivals: poisson (exponential) or even")
      ->capture_default_str()
      ->check(CLI::IsMember({"poisson", "even"}));
  app.add_option("--retry", f.retry,
                 "time mode: when a waiting pod is retried: departure (whenever capacity frees) "
                 "or backoff (kube-scheduler's: 1 s doubling to 10 s)")
      ->capture_default_str()
      ->check(CLI::IsMember({"departure", "backoff"}));
  app.add_option("--give-up-after", f.give_up_after,
                 "time mode: seconds a pod waits before it gives up")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 1e9));
  app.add_option("--sample-every", f.sample_every,
                 "time mode: seconds between rows of the --out time series (0: none)")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 1e9));
  app.add_option("--consolidate", f.consolidate_budgets,
                 "time mode: also run each policy with the consolidation planner at these move "
                 "budgets, comma-separated: pods moved per hour as a share of the running GPU "
                 "pods (e.g. 0.01 = 1 %/h; 0 = without consolidation)")
      ->delimiter(',')
      ->check(CLI::Range(0.0, 1.0));
  app.add_option("--consolidate-every", f.consolidate_every,
                 "time mode: seconds between planner runs")
      ->capture_default_str()
      ->check(CLI::Range(1.0, 1e9));
  app.add_option("--consolidate-max-moves", f.consolidate_max_moves,
                 "time mode: pods moved by one plan at most")
      ->capture_default_str()
      ->check(CLI::Range(1, 100000));
  app.add_option("--consolidate-per-gpu", f.consolidate_per_gpu,
                 "time mode: a GPU is emptied only if it takes at most this many moves")
      ->capture_default_str()
      ->check(CLI::Range(1, 64));
  app.add_option("--consolidate-opt-in", f.consolidate_opt_in,
                 "time mode: share of pods that may be moved (seeded per pod)")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 1.0));
  app.add_option("--consolidate-pending", f.consolidate_pending,
                 "time mode: also plan moves that make room for the oldest waiting GPU pod")
      ->capture_default_str();
}

void add_flags(CLI::App& app, SimFlags& f, const std::vector<std::string>& names) {
  app.add_option("--nodes", f.nodes_path, "node list CSV (sn,cpu_milli,memory_mib,gpu,model)")
      ->required();
  app.add_option("--pods", f.pods_path,
                 "pod list CSV (name,cpu_milli,memory_mib,num_gpu,gpu_milli,...), or the PAI "
                 "2020 task list (job_name,...,start_time,end_time,plan_cpu,plan_mem,plan_gpu,...; "
                 "told apart by its plan_gpu column)")
      ->required();
  app.add_option(
         "--policy", f.policies,
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
  app.add_option("--seeds", f.seeds, "number of seeds per policy, the first being --first-seed")
      ->capture_default_str()
      ->check(CLI::Range(1u, 10000u));
  app.add_option("--first-seed", f.first_seed, "first seed (the paper uses 42..51)")
      ->capture_default_str();
  app.add_option("--max-arrival", f.max_arrival,
                 "stop when arrived GPU demand reaches this multiple of capacity")
      ->capture_default_str()
      ->check(CLI::Range(0.01, 100.0));
  app.add_option("--out", f.out_path,
                 "CSV of every point: " + std::string(gpushare::sim::kCsvHeader));
  app.add_option("--plot", f.plot_path, "SVG line plot of allocation vs. arrived demand");
  app.add_option("--title", f.title, "plot title (default: the pod file's name)");
  app.add_option("--plot-policy", f.plot_policies, "policies to draw in the plot (default: all)")
      ->delimiter(',');
  app.add_option("--dump-arrivals", f.arrivals_path,
                 "write each seed's arrival sequence as CSV (seed,position,pod,num_gpu,gpu_milli,"
                 "arrived_pct), e.g. for bench/sim/packing_bound.py");
  app.add_option("--failures", f.failures_path,
                 "CSV of every pod that fit nowhere: policy,seed,arrived_pct,pod,num_gpu,gpu_milli,"
                 "cpu_milli,memory_mib,gpu_spec (simulated runs only)");
  app.add_flag("--arrivals-only", f.arrivals_only, "only write --dump-arrivals, run no policy");
  app.add_option("-j,--jobs", f.jobs, "runs in parallel")
      ->capture_default_str()
      ->check(CLI::Range(1u, 64u));
  app.add_flag("--single-gpu-only", f.single_gpu_only,
               "drop multi-GPU pods from each seed's arrivals (always so with --scheduler-config)");
  app.add_flag("--gpu-pods-only", f.gpu_pods_only,
               "drop pods that want no GPU from each seed's arrivals");
  app.add_option(
      "--scheduler-config", f.scheduler_config_path,
      "the deployed path: place pods through a model of kube-scheduler configured by this "
      "KubeSchedulerConfiguration file (e.g. deploy/scheduler/kube-scheduler-config.yaml), "
      "with the extender's service in process; --policy then names the extender's policy; "
      "with --churn too (not with --dra or --consolidate)");
  app.add_flag(
      "--with-ideal", f.with_ideal,
      "with --scheduler-config, also run each policy alone on the same pods (the simulator's "
      "ideal: fgd and fgd-plus as their -online variants, as the service learns), for the "
      "table and the plot");
  app.add_option("--kube-version", f.kube_version,
                 "kube-scheduler's scoring formulas: 1.20 (1.20-1.22) or current (1.23 and later)")
      ->capture_default_str()
      ->check(CLI::IsMember({"1.20", "1.21", "1.22", "current"}));
  app.add_option("--scheduler-name", f.scheduler_name,
                 "the profile GPU pods name (default: the configuration's first profile)");
  app.add_option(
         "--cpu-only-pods", f.cpu_only_pods,
         "which scheduler CPU-only pods go through: same (the configured profile), default (a "
         "plain default-scheduler, as in a second-scheduler set-up) or auto (same if the "
         "profile is default-scheduler)")
      ->capture_default_str()
      ->check(CLI::IsMember({"auto", "same", "default"}));
  app.add_option("--max-pods", f.max_pods, "pods per node (kubelet's maxPods) in the deployed path")
      ->capture_default_str()
      ->check(CLI::Range(std::int64_t{1}, std::int64_t{100000}));
  app.add_option("--score-mapping", f.score_mapping,
                 fmt::format("the extender's --score-mapping in the deployed path: {}",
                             gpushare::core::kScoreMappingNames))
      ->capture_default_str()
      ->check(CLI::IsMember({"minmax", "rank"}));
  app.add_flag(
      "--dra", f.dra,
      "with --scheduler-config: GPUs as DRA devices (one ResourceSlice per node, shared by "
      "memory) and GPU pods as ResourceClaims; kube's DRA allocator takes the first device "
      "that fits, kube filters and binds, extenders without managedResources score");
  app.add_flag("-v,--verbose", f.verbose, "print each run as it finishes");
  add_churn_flags(app, f);
}

// The deployed path's set-up, when --scheduler-config names one (which implies
// --single-gpu-only).
std::optional<Deployment> deployment_of(SimFlags& f) {
  std::optional<Deployment> deployment;
  if (!f.scheduler_config_path.empty()) {
    const auto version = f.kube_version == "current" ? gpushare::kubesim::KubeVersion::kCurrent
                                                     : gpushare::kubesim::KubeVersion::k1_20;
    deployment.emplace();
    try {
      deployment->config = gpushare::kubesim::parse_scheduler_config(
          gpushare::sim::read_text_file(f.scheduler_config_path), version);
    } catch (const gpushare::kubesim::ConfigError& error) {
      throw gpushare::sim::TraceError(fmt::format("{}: {}", f.scheduler_config_path, error.what()));
    }
    deployment->options.version = version;
    deployment->options.scheduler_name = f.scheduler_name;
    deployment->options.cpu_only_pods =
        f.cpu_only_pods == "same"      ? gpushare::kubesim::CpuOnlyPods::kSameProfile
        : f.cpu_only_pods == "default" ? gpushare::kubesim::CpuOnlyPods::kDefaultScheduler
                                       : gpushare::kubesim::CpuOnlyPods::kAuto;
    deployment->options.max_pods_per_node = f.max_pods;
    deployment->options.score_mapping = f.score_mapping;
    deployment->options.dra = f.dra;
    deployment->label =
        std::filesystem::path(f.scheduler_config_path).stem().string() + (f.dra ? "+dra" : "");
    for (const auto& policy : f.policies) {
      if (!gpushare::core::make_policy(policy)) {
        throw gpushare::sim::TraceError(
            fmt::format("--policy {}: the deployed path runs the service's policies: {}", policy,
                        fmt::join(gpushare::core::policy_names(), ", ")));
      }
    }
    f.single_gpu_only = true;
  }
  return deployment;
}

void write_arrivals(const gpushare::sim::Simulator& simulator, const SimFlags& f) {
  if (!f.arrivals_path.empty()) {
    std::ofstream out(f.arrivals_path);
    out << "seed,position,pod,num_gpu,gpu_milli,arrived_pct\n";
    const auto& trace = simulator.pods();
    for (unsigned s = 0; s < f.seeds; ++s) {
      const auto order = simulator.arrivals(f.first_seed + s);
      gpushare::core::Units arrived = 0;
      for (std::size_t position = 0; position < order.size(); ++position) {
        const auto& pod = trace[order[position]];
        arrived += pod.demand.total_gpu();
        fmt::print(
            out, "{},{},{},{},{},{:.4f}\n", f.first_seed + s, position, pod.name,
            pod.demand.gpu_count, pod.demand.per_gpu,
            100.0 * static_cast<double>(arrived) / static_cast<double>(simulator.capacity()));
      }
    }
    if (!out) throw gpushare::sim::TraceError("cannot write " + f.arrivals_path);
  }
}

// Each policy's seeds, after its ideal's with --with-ideal.
std::vector<Job> jobs_of(const SimFlags& f, const std::optional<Deployment>& deployment) {
  std::vector<Job> job_list;
  for (const auto& policy : f.policies) {
    if (deployment && f.with_ideal) {
      for (unsigned s = 0; s < f.seeds; ++s)
        job_list.push_back({ideal_of(policy), f.first_seed + s, false});
    }
    for (unsigned s = 0; s < f.seeds; ++s)
      job_list.push_back({policy, f.first_seed + s, deployment.has_value()});
  }
  return job_list;
}

void write_failures(const gpushare::sim::Simulator& simulator,
                    const std::vector<RunResult>& results, const SimFlags& f) {
  if (!f.failures_path.empty()) {
    std::ofstream out(f.failures_path);
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
    if (!out) throw gpushare::sim::TraceError("cannot write " + f.failures_path);
  }
}

void write_plot(const std::vector<gpushare::sim::PolicySummary>& summaries, SimFlags& f) {
  if (!f.plot_path.empty()) {
    std::ofstream out(f.plot_path);
    if (f.title.empty()) f.title = std::filesystem::path(f.pods_path).filename().string();
    std::vector<gpushare::sim::PolicySummary> plotted;
    for (const auto& summary : summaries) {
      if (f.plot_policies.empty() || std::find(f.plot_policies.begin(), f.plot_policies.end(),
                                               summary.policy) != f.plot_policies.end()) {
        plotted.push_back(summary);
      }
    }
    gpushare::sim::write_svg(out, plotted, f.title);
    if (!out) throw gpushare::sim::TraceError("cannot write " + f.plot_path);
  }
}

struct ChurnJob {
  std::string policy;
  std::uint64_t seed;
  double load;
  double budget;          // consolidation moves per hour per running GPU pod; 0 = off
  bool deployed = false;  // through the modelled kube-scheduler (else the policy alone)
};

std::string churn_run_name(const ChurnJob& job, const Deployment* deployment) {
  const std::string policy = job.deployed ? deployed_run_name(job.policy, *deployment) : job.policy;
  std::string name = fmt::format("{} load {:g} %", policy, job.load * 100);
  if (job.budget > 0) name += fmt::format(" consolidate {:g} %/h", job.budget * 100);
  return name;
}

// The time mode: every (load, policy, budget, seed) on the same seeded events; with a
// deployment, each policy through the modelled kube-scheduler (after its ideal's runs with
// --with-ideal).
int simulate_churn(const gpushare::sim::Simulator& simulator, const SimFlags& f,
                   const Deployment* deployment) {
  std::vector<double> budgets = f.consolidate_budgets;
  if (budgets.empty()) budgets.push_back(0);
  if (deployment != nullptr &&
      std::any_of(budgets.begin(), budgets.end(), [](double b) { return b > 0; })) {
    throw gpushare::sim::TraceError(
        "--consolidate runs with the policies alone: not with --scheduler-config");
  }
  std::vector<ChurnJob> jobs;
  for (double load : f.loads) {
    for (const auto& policy : f.policies) {
      for (double budget : budgets) {
        if (deployment != nullptr && f.with_ideal) {
          for (unsigned s = 0; s < f.seeds; ++s)
            jobs.push_back({ideal_of(policy), f.first_seed + s, load, budget, false});
        }
        for (unsigned s = 0; s < f.seeds; ++s)
          jobs.push_back({policy, f.first_seed + s, load, budget, deployment != nullptr});
      }
    }
  }
  std::vector<gpushare::core::PodDemand> demands;
  for (const auto& pod : simulator.pods()) demands.push_back(pod.demand);
  std::vector<gpushare::sim::ChurnResult> results(jobs.size());
  std::atomic<std::size_t> next{0};
  std::mutex print;
  std::exception_ptr failure;
  const auto worker = [&] {
    for (std::size_t i = next++; i < jobs.size(); i = next++) {
      try {
        const ChurnJob& job = jobs[i];
        gpushare::sim::ChurnOptions options;
        options.offered_load = job.load;
        options.warmup = f.warmup;
        options.duration = f.duration;
        options.max_lifetime = f.max_lifetime;
        options.arrivals = f.arrival_process == "even" ? gpushare::sim::ArrivalProcess::kEven
                                                       : gpushare::sim::ArrivalProcess::kPoisson;
        options.retry = f.retry == "backoff" ? gpushare::sim::RetryMode::kBackoff
                                             : gpushare::sim::RetryMode::kOnDeparture;
        options.give_up_after = f.give_up_after;
        options.sample_every = f.sample_every;
        auto& c = options.consolidation;
        c.enabled = job.budget > 0;
        c.moves_per_hour = job.budget;
        c.every = f.consolidate_every;
        c.max_moves_per_plan = f.consolidate_max_moves;
        c.max_moves_per_gpu_freed = f.consolidate_per_gpu;
        c.opt_in = f.consolidate_opt_in;
        c.for_pending = f.consolidate_pending;
        std::string detail;
        if (job.deployed) {
          gpushare::kubesim::DeployedOptions deployed = deployment->options;
          deployed.extender_policy = job.policy;
          gpushare::kubesim::DeployedChurnScheduler scheduler(
              simulator.nodes(), simulator.typical_workload(), deployment->config, deployed,
              job.seed);
          results[i] = gpushare::sim::run_churn(simulator, scheduler,
                                                churn_run_name(job, deployment), job.seed, options);
          const auto& stats = scheduler.stats();
          detail = fmt::format(
              "; attempts: GPU pods {} ({} failed), CPU-only pods {} ({} failed); extender: {} "
              "filter, {} prioritize, {} bind",
              stats.gpu_pods, stats.failed_gpu_pods, stats.cpu_only_pods,
              stats.failed_cpu_only_pods, stats.extender_filter_calls,
              stats.extender_prioritize_calls, stats.extender_binds);
        } else {
          auto contender = gpushare::sim::make_contender(
              job.policy,
              gpushare::sim::TraceContext{simulator.typical_workload(), demands, job.seed});
          contender->name = churn_run_name(job, deployment);
          results[i] = gpushare::sim::run_churn(simulator, *contender, job.seed, options);
        }
        if (f.verbose) {
          const std::lock_guard lock(print);
          const auto& r = results[i];
          fmt::print(stderr,
                     "{} seed {}: {:.1f} unallocated, {:.1f} fragmented GPUs; {} arrived, {} "
                     "gave up; {} moved, {} GPUs freed; {:.1f} s CPU{}\n",
                     r.policy, r.seed, r.unallocated_gpus, r.fragmented_gpus, r.arrived, r.gave_up,
                     r.pods_moved, r.gpus_freed, r.cpu_seconds, detail);
        }
      } catch (...) {
        const std::lock_guard lock(print);
        if (!failure) failure = std::current_exception();
      }
    }
  };
  {
    std::vector<std::jthread> pool;
    const unsigned threads = std::min<unsigned>(f.jobs, static_cast<unsigned>(jobs.size()));
    for (unsigned t = 1; t < threads; ++t) pool.emplace_back(worker);
    worker();
  }
  if (failure) std::rethrow_exception(failure);
  fmt::print(
      "Time mode: warm-up {:g} s, measured {:g} s, lifetimes cut at {:g} s, retry on {}, "
      "give up after {:g} s; time averages, mean of {} seed(s):\n\n",
      f.warmup, f.duration, f.max_lifetime, f.retry, f.give_up_after, f.seeds);
  gpushare::sim::write_churn_table(std::cout, results);
  if (!f.out_path.empty()) {
    std::ofstream out(f.out_path);
    gpushare::sim::write_churn_csv(out, results);
    if (!out) throw gpushare::sim::TraceError("cannot write " + f.out_path);
  }
  return 0;
}

// Reads the traces, runs every job and writes the table and the files asked for.
int simulate(SimFlags& f) {
  auto nodes = gpushare::sim::parse_nodes_csv(gpushare::sim::read_text_file(f.nodes_path));
  const std::string pod_text = gpushare::sim::read_text_file(f.pods_path);
  std::vector<gpushare::sim::TracePod> pods;
  if (gpushare::sim::is_pai_tasks_csv(pod_text)) {
    auto tasks = gpushare::sim::parse_pai_tasks_csv(pod_text);
    fmt::print(
        "PAI task list: {} tasks read; dropped {} without both times, {} ending before "
        "they start\n",
        tasks.pods.size(), tasks.dropped_missing_time, tasks.dropped_end_before_start);
    pods = std::move(tasks.pods);
  } else {
    pods = gpushare::sim::parse_pods_csv(pod_text);
  }
  const std::size_t node_count = nodes.size();
  const std::size_t pod_count = pods.size();
  const std::optional<Deployment> deployment = deployment_of(f);
  if (f.churn && deployment && f.dra) {
    throw gpushare::sim::TraceError("--churn with --scheduler-config: not with --dra");
  }
  gpushare::sim::SimulationOptions options;
  options.max_arrival = f.max_arrival;
  options.single_gpu_only = f.single_gpu_only;
  options.gpu_pods_only = f.gpu_pods_only;
  const gpushare::sim::Simulator simulator(std::move(nodes), std::move(pods), options);
  const double capacity_gpus =
      static_cast<double>(simulator.capacity()) / static_cast<double>(gpushare::sim::kUnitsPerGpu);
  if (f.churn) {
    fmt::print(
        "{} nodes, {:.0f} GPUs; {} pods in the trace, {} typical shapes (95 %); seeds {}..{}\n\n",
        node_count, capacity_gpus, pod_count, simulator.typical_workload().size(), f.first_seed,
        f.first_seed + f.seeds - 1);
  } else {
    fmt::print(
        "{} nodes, {:.0f} GPUs; {} pods in the trace, {} typical shapes (95 %); "
        "seeds {}..{}; arrival up to {:.0f} %\n\n",
        node_count, capacity_gpus, pod_count, simulator.typical_workload().size(), f.first_seed,
        f.first_seed + f.seeds - 1, f.max_arrival * 100);
  }

  write_arrivals(simulator, f);
  if (f.arrivals_only) return 0;
  if (f.churn) return simulate_churn(simulator, f, deployment ? &*deployment : nullptr);

  const std::vector<Job> job_list = jobs_of(f, deployment);
  const std::vector<RunResult> results = run_all(
      simulator, job_list, std::min<unsigned>(f.jobs, static_cast<unsigned>(job_list.size())),
      f.verbose, deployment ? &*deployment : nullptr);
  const auto summaries = gpushare::sim::summarize(results);
  fmt::print(
      "GPU allocation (%) at arrived GPU demand of 80..120 % of capacity, mean of {} "
      "seed(s):\n\n",
      f.seeds);
  gpushare::sim::write_table(std::cout, summaries, capacity_gpus);

  if (!f.out_path.empty()) {
    std::ofstream out(f.out_path);
    gpushare::sim::write_curve_csv(out, results);
    if (!out) throw gpushare::sim::TraceError("cannot write " + f.out_path);
  }
  write_failures(simulator, results, f);
  write_plot(summaries, f);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::vector<std::string> names = gpushare::sim::sim_policy_names();
  CLI::App app{fmt::format(
      "Trace-driven GPU placement simulator (method of Weng et al., USENIX ATC'23) running the "
      "gpushare service's placement policies.\nPolicies: {} (each also as NAME{}: scored "
      "without CPU and memory, as the extender sees nodes)",
      fmt::join(names, ", "), gpushare::sim::kGpuOnlySuffix)};
  SimFlags flags;
  add_flags(app, flags, names);
  app.set_version_flag("--version", gpushare::version_string());
  CLI11_PARSE(app, argc, argv);
  // The in-process extender logs every bind at info; a simulation binds thousands.
  spdlog::set_level(spdlog::level::warn);

  try {
    return simulate(flags);
  } catch (const std::exception& error) {
    fmt::print(stderr, "gpushare-sim: {}\n", error.what());
    return 1;
  }
}
