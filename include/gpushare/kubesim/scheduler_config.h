#pragma once
// A KubeSchedulerConfiguration file (kubescheduler.config.k8s.io v1, v1beta3, v1beta2 and 1.20's
// v1beta1) reduced to what decides where a pod goes: the score plugins that can tell nodes
// apart for plain pods (resource scoring) with their weights and arguments,
// percentageOfNodesToScore, and the extenders.
//
// Plugins that score every node alike for pods without affinity, topology spread, images or
// tolerations (ImageLocality, InterPodAffinity, NodeAffinity, PodTopologySpread,
// TaintToleration, ...) are recorded by name only: a constant added to every node never
// changes the winner.

#include <cstdint>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "gpushare/kubesim/scoring.h"

namespace gpushare::kubesim {

class ConfigError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct ResourceScorer {
  enum class Kind { kFit, kBalancedAllocation };
  Kind kind = Kind::kFit;
  std::string plugin;  // as configured, e.g. NodeResourcesFit, NodeResourcesLeastAllocated
  ScoringStrategy strategy = ScoringStrategy::kLeastAllocated;  // kFit only
  std::vector<ResourceWeight> resources{{"cpu", 1}, {"memory", 1}};
  std::vector<ShapePoint> shape;  // kRequestedToCapacityRatio only
  std::int64_t weight = 1;
};

struct ManagedResource {
  std::string name;
  bool ignored_by_scheduler = false;
};

struct ExtenderConfig {
  std::string url_prefix;
  std::string filter_verb;
  std::string prioritize_verb;
  std::string bind_verb;
  std::string preempt_verb;
  std::int64_t weight = 1;
  bool node_cache_capable = false;
  bool ignorable = false;
  std::vector<ManagedResource> managed_resources;

  // kube-scheduler's IsInterested: every pod when managedResources is empty, else pods whose
  // containers request or limit one of them.
  bool interested_in(std::span<const std::string> pod_resources) const;
};

struct SchedulerProfile {
  std::string scheduler_name = "default-scheduler";
  std::vector<ResourceScorer> scorers;
  std::vector<std::string> constant_plugins;        // enabled score plugins that do not vary here
  std::optional<int> percentage_of_nodes_to_score;  // the profile's own (v1, 1.27+)
};

struct SchedulerConfig {
  std::string api_version;
  int percentage_of_nodes_to_score = 0;  // 0 = kube-scheduler's adaptive default
  std::vector<SchedulerProfile> profiles;
  std::vector<ExtenderConfig> extenders;

  // nullptr if no profile has that name.
  const SchedulerProfile* profile(std::string_view scheduler_name) const;
  // The percentage a profile scores with: its own, else the global one (0 = adaptive).
  int percentage_for(const SchedulerProfile& profile) const;
};

// The default profile of a kube-scheduler of that generation, without extenders.
SchedulerProfile default_profile(KubeVersion version);

// Throws ConfigError naming the field on anything it cannot read, including unknown keys
// where kube-scheduler decodes strictly (a typo such as `managedResource` must not pass as
// "every pod").
SchedulerConfig parse_scheduler_config(std::string_view yaml, KubeVersion version);

}  // namespace gpushare::kubesim
