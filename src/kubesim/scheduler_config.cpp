#include "gpushare/kubesim/scheduler_config.h"

#include <fmt/format.h>

#include <algorithm>
#include <initializer_list>
#include <map>
#include <nlohmann/json.hpp>

#include "gpushare/files/yaml_json.h"

namespace gpushare::kubesim {
namespace {

using Json = nlohmann::json;

constexpr std::string_view kGroup = "kubescheduler.config.k8s.io/";

// Score plugins whose score is the same on every node for the pods simulated here (no
// affinity, topology spread constraints, images, taints or tolerations, owners).
constexpr std::string_view kConstantPlugins[] = {
    "ImageLocality",
    "InterPodAffinity",
    "NodeAffinity",
    "NodePreferAvoidPods",
    "PodTopologySpread",
    "SelectorSpread",
    "DefaultPodTopologySpread",
    "TaintToleration",
    "VolumeBinding",
    "ServiceAffinity",
    "NodeLabel",
    "NodeResourceLimits",
};

void check_keys(const Json& object, std::string_view where,
                std::initializer_list<std::string_view> known) {
  if (!object.is_object()) throw ConfigError(fmt::format("{} must be a mapping", where));
  for (const auto& [key, value] : object.items()) {
    if (std::find(known.begin(), known.end(), key) == known.end()) {
      throw ConfigError(fmt::format("{}: unknown field \"{}\"", where, key));
    }
  }
}

std::string text_of(const Json& object, std::string_view key, std::string_view where) {
  auto it = object.find(key);
  if (it == object.end() || it->is_null()) return {};
  if (!it->is_string()) throw ConfigError(fmt::format("{}.{} must be a string", where, key));
  return it->get<std::string>();
}

std::int64_t integer_of(const Json& object, std::string_view key, std::string_view where,
                        std::int64_t fallback) {
  auto it = object.find(key);
  if (it == object.end() || it->is_null()) return fallback;
  if (!it->is_number_integer())
    throw ConfigError(fmt::format("{}.{} must be an integer", where, key));
  return it->get<std::int64_t>();
}

bool flag_of(const Json& object, std::string_view key, std::string_view where) {
  auto it = object.find(key);
  if (it == object.end() || it->is_null()) return false;
  if (!it->is_boolean()) throw ConfigError(fmt::format("{}.{} must be true or false", where, key));
  return it->get<bool>();
}

const Json* list_of(const Json& object, std::string_view key, std::string_view where) {
  auto it = object.find(key);
  if (it == object.end() || it->is_null()) return nullptr;
  if (!it->is_array()) throw ConfigError(fmt::format("{}.{} must be a list", where, key));
  return &*it;
}

std::vector<ResourceWeight> resources_of(const Json& list, std::string_view where) {
  std::vector<ResourceWeight> resources;
  for (const Json& entry : list) {
    check_keys(entry, where, {"name", "weight"});
    ResourceWeight resource;
    resource.name = text_of(entry, "name", where);
    resource.weight = integer_of(entry, "weight", where, 1);
    if (resource.name.empty())
      throw ConfigError(fmt::format("{}: a resource without a name", where));
    if (resource.weight <= 0) {
      throw ConfigError(fmt::format("{}: resource {} has weight {}, must be positive", where,
                                    resource.name, resource.weight));
    }
    resources.push_back(std::move(resource));
  }
  return resources;
}

std::vector<ShapePoint> shape_of(const Json& list, std::string_view where) {
  std::vector<ShapePoint> shape;
  for (const Json& entry : list) {
    check_keys(entry, where, {"utilization", "score"});
    ShapePoint point{integer_of(entry, "utilization", where, 0),
                     integer_of(entry, "score", where, 0)};
    if (point.utilization < 0 || point.utilization > 100 || point.score < 0 ||
        point.score > kMaxCustomPriorityScore) {
      throw ConfigError(fmt::format("{}: point ({}, {}) outside utilization 0..100, score 0..10",
                                    where, point.utilization, point.score));
    }
    if (!shape.empty() && point.utilization <= shape.back().utilization) {
      throw ConfigError(fmt::format("{}: utilization must increase", where));
    }
    shape.push_back(point);
  }
  if (shape.empty()) throw ConfigError(fmt::format("{}: empty shape", where));
  return shape;
}

std::optional<ScoringStrategy> strategy_named(std::string_view type) {
  if (type.empty() || type == "LeastAllocated") return ScoringStrategy::kLeastAllocated;
  if (type == "MostAllocated") return ScoringStrategy::kMostAllocated;
  if (type == "RequestedToCapacityRatio") return ScoringStrategy::kRequestedToCapacityRatio;
  return std::nullopt;
}

// pluginConfig args by plugin name.
std::map<std::string, Json, std::less<>> plugin_args(const Json& profile, std::string_view where) {
  std::map<std::string, Json, std::less<>> args;
  if (const Json* list = list_of(profile, "pluginConfig", where)) {
    for (const Json& entry : *list) {
      check_keys(entry, fmt::format("{}.pluginConfig[]", where), {"name", "args"});
      const std::string name = text_of(entry, "name", where);
      auto it = entry.find("args");
      args[name] = it == entry.end() ? Json::object() : *it;
    }
  }
  return args;
}

ResourceScorer scorer_for(std::string_view plugin, std::int64_t weight, const Json* args,
                          KubeVersion version) {
  ResourceScorer scorer;
  scorer.plugin = std::string(plugin);
  scorer.weight = weight;
  const std::string where = fmt::format("pluginConfig {} args", plugin);
  if (plugin == "NodeResourcesBalancedAllocation") {
    scorer.kind = ResourceScorer::Kind::kBalancedAllocation;
    if (args != nullptr && !args->is_null()) {
      check_keys(*args, where, {"resources", "apiVersion", "kind"});
      if (const Json* list = list_of(*args, "resources", where))
        scorer.resources = resources_of(*list, where);
    }
    return scorer;
  }
  scorer.kind = ResourceScorer::Kind::kFit;
  if (plugin == "NodeResourcesFit") {
    if (args == nullptr || args->is_null()) return scorer;
    check_keys(
        *args, where,
        {"ignoredResources", "ignoredResourceGroups", "scoringStrategy", "apiVersion", "kind"});
    auto it = args->find("scoringStrategy");
    if (it == args->end() || it->is_null()) return scorer;
    const std::string strategy_where = where + ".scoringStrategy";
    check_keys(*it, strategy_where, {"type", "resources", "requestedToCapacityRatio"});
    const std::string type = text_of(*it, "type", strategy_where);
    const auto strategy = strategy_named(type);
    if (!strategy)
      throw ConfigError(fmt::format("{}.type: unknown strategy \"{}\"", strategy_where, type));
    scorer.strategy = *strategy;
    if (const Json* list = list_of(*it, "resources", strategy_where))
      scorer.resources = resources_of(*list, strategy_where);
    if (scorer.strategy == ScoringStrategy::kRequestedToCapacityRatio) {
      auto ratio = it->find("requestedToCapacityRatio");
      if (ratio == it->end())
        throw ConfigError(strategy_where +
                          ": RequestedToCapacityRatio needs requestedToCapacityRatio.shape");
      check_keys(*ratio, strategy_where + ".requestedToCapacityRatio", {"shape"});
      const Json* shape = list_of(*ratio, "shape", strategy_where);
      if (shape == nullptr)
        throw ConfigError(strategy_where + ": requestedToCapacityRatio without a shape");
      scorer.shape = shape_of(*shape, strategy_where + ".requestedToCapacityRatio.shape");
    }
    return scorer;
  }
  // 1.20's separate plugins (v1beta1).
  if (plugin == "NodeResourcesLeastAllocated" || plugin == "NodeResourcesMostAllocated") {
    scorer.strategy = plugin == "NodeResourcesLeastAllocated" ? ScoringStrategy::kLeastAllocated
                                                              : ScoringStrategy::kMostAllocated;
  } else if (plugin == "RequestedToCapacityRatio") {
    scorer.strategy = ScoringStrategy::kRequestedToCapacityRatio;
    scorer.shape = {{0, 10}, {100, 0}};  // 1.20's default shape: spread (least allocated)
  } else {
    throw ConfigError(fmt::format("score plugin {} is not a resource scorer", plugin));
  }
  if (args != nullptr && !args->is_null()) {
    check_keys(*args, where, {"resources", "shape", "apiVersion", "kind"});
    if (const Json* list = list_of(*args, "resources", where))
      scorer.resources = resources_of(*list, where);
    if (const Json* shape = list_of(*args, "shape", where)) {
      if (scorer.strategy != ScoringStrategy::kRequestedToCapacityRatio) {
        throw ConfigError(where + ": shape is only for RequestedToCapacityRatio");
      }
      scorer.shape = shape_of(*shape, where + ".shape");
    }
  }
  (void)version;
  return scorer;
}

bool is_resource_plugin(std::string_view name) {
  return name == "NodeResourcesFit" || name == "NodeResourcesBalancedAllocation" ||
         name == "NodeResourcesLeastAllocated" || name == "NodeResourcesMostAllocated" ||
         name == "RequestedToCapacityRatio";
}

bool is_constant_plugin(std::string_view name) {
  return std::find(std::begin(kConstantPlugins), std::end(kConstantPlugins), name) !=
         std::end(kConstantPlugins);
}

// Enabled score plugins and weights, in kube's default order, after the profile's
// enable/disable lists (multiPoint first, then score, as kube-scheduler merges them).
std::vector<std::pair<std::string, std::int64_t>> score_plugins(const Json& profile,
                                                                std::string_view where,
                                                                KubeVersion version) {
  std::vector<std::pair<std::string, std::int64_t>> enabled;
  if (version == KubeVersion::k1_20) {
    enabled = {{"NodeResourcesBalancedAllocation", 1},
               {"ImageLocality", 1},
               {"InterPodAffinity", 1},
               {"NodeResourcesLeastAllocated", 1},
               {"NodeAffinity", 1},
               {"NodePreferAvoidPods", 10000},
               {"PodTopologySpread", 2},
               {"TaintToleration", 1}};
  } else {
    enabled = {{"TaintToleration", 3},  {"NodeAffinity", 2},
               {"NodeResourcesFit", 1}, {"PodTopologySpread", 2},
               {"InterPodAffinity", 2}, {"NodeResourcesBalancedAllocation", 1},
               {"ImageLocality", 1}};
  }
  auto plugins = profile.find("plugins");
  if (plugins == profile.end() || plugins->is_null()) return enabled;
  const std::string plugins_where = fmt::format("{}.plugins", where);
  if (!plugins->is_object()) throw ConfigError(plugins_where + " must be a mapping");
  for (const char* point : {"multiPoint", "score"}) {
    auto set = plugins->find(point);
    if (set == plugins->end() || set->is_null()) continue;
    const std::string set_where = fmt::format("{}.{}", plugins_where, point);
    check_keys(*set, set_where, {"enabled", "disabled"});
    if (const Json* disabled = list_of(*set, "disabled", set_where)) {
      for (const Json& entry : *disabled) {
        check_keys(entry, set_where + ".disabled[]", {"name", "weight"});
        const std::string name = text_of(entry, "name", set_where);
        if (name == "*") {
          enabled.clear();
        } else {
          std::erase_if(enabled, [&](const auto& plugin) { return plugin.first == name; });
        }
      }
    }
    if (const Json* list = list_of(*set, "enabled", set_where)) {
      for (const Json& entry : *list) {
        check_keys(entry, set_where + ".enabled[]", {"name", "weight"});
        const std::string name = text_of(entry, "name", set_where);
        std::int64_t weight = integer_of(entry, "weight", set_where, 0);
        if (weight < 0)
          throw ConfigError(fmt::format("{}: plugin {} has a negative weight", set_where, name));
        auto existing = std::find_if(enabled.begin(), enabled.end(),
                                     [&](const auto& p) { return p.first == name; });
        if (existing != enabled.end()) {
          if (weight > 0) existing->second = weight;
        } else {
          enabled.emplace_back(name, weight == 0 ? 1 : weight);  // kube: weight 0 means 1
        }
      }
    }
  }
  return enabled;
}

SchedulerProfile parse_profile(const Json& profile, std::string_view where, KubeVersion version) {
  check_keys(profile, where,
             {"schedulerName", "plugins", "pluginConfig", "percentageOfNodesToScore"});
  SchedulerProfile result;
  const std::string name = text_of(profile, "schedulerName", where);
  if (!name.empty()) result.scheduler_name = name;
  if (profile.contains("percentageOfNodesToScore") &&
      !profile["percentageOfNodesToScore"].is_null()) {
    result.percentage_of_nodes_to_score =
        static_cast<int>(integer_of(profile, "percentageOfNodesToScore", where, 0));
  }
  const auto args = plugin_args(profile, where);
  for (const auto& [plugin, weight] : score_plugins(profile, where, version)) {
    if (is_resource_plugin(plugin)) {
      auto it = args.find(plugin);
      result.scorers.push_back(
          scorer_for(plugin, weight, it == args.end() ? nullptr : &it->second, version));
    } else if (is_constant_plugin(plugin)) {
      result.constant_plugins.push_back(plugin);
    } else {
      throw ConfigError(
          fmt::format("{}: score plugin {} is not modelled by the simulator", where, plugin));
    }
  }
  return result;
}

ExtenderConfig parse_extender(const Json& entry, const std::string& where) {
  check_keys(entry, where,
             {"urlPrefix", "filterVerb", "preemptVerb", "prioritizeVerb", "weight", "bindVerb",
              "enableHTTPS", "tlsConfig", "httpTimeout", "nodeCacheCapable", "managedResources",
              "ignorable"});
  ExtenderConfig extender;
  extender.url_prefix = text_of(entry, "urlPrefix", where);
  extender.filter_verb = text_of(entry, "filterVerb", where);
  extender.prioritize_verb = text_of(entry, "prioritizeVerb", where);
  extender.bind_verb = text_of(entry, "bindVerb", where);
  extender.preempt_verb = text_of(entry, "preemptVerb", where);
  extender.weight = integer_of(entry, "weight", where, 0);
  extender.node_cache_capable = flag_of(entry, "nodeCacheCapable", where);
  extender.ignorable = flag_of(entry, "ignorable", where);
  if (extender.url_prefix.empty()) throw ConfigError(where + ": urlPrefix is required");
  if (!extender.prioritize_verb.empty() && extender.weight <= 0) {
    throw ConfigError(fmt::format("{}: weight must be positive when prioritizeVerb is set (got {})",
                                  where, extender.weight));
  }
  if (const Json* list = list_of(entry, "managedResources", where)) {
    for (const Json& resource : *list) {
      check_keys(resource, where + ".managedResources[]", {"name", "ignoredByScheduler"});
      ManagedResource managed;
      managed.name = text_of(resource, "name", where);
      managed.ignored_by_scheduler = flag_of(resource, "ignoredByScheduler", where);
      if (managed.name.empty()) throw ConfigError(where + ": a managed resource without a name");
      extender.managed_resources.push_back(std::move(managed));
    }
  }
  return extender;
}

}  // namespace

bool ExtenderConfig::interested_in(std::span<const std::string> pod_resources) const {
  if (managed_resources.empty()) return true;
  for (const ManagedResource& managed : managed_resources) {
    if (std::find(pod_resources.begin(), pod_resources.end(), managed.name) != pod_resources.end())
      return true;
  }
  return false;
}

const SchedulerProfile* SchedulerConfig::profile(std::string_view scheduler_name) const {
  for (const SchedulerProfile& candidate : profiles) {
    if (candidate.scheduler_name == scheduler_name) return &candidate;
  }
  return nullptr;
}

int SchedulerConfig::percentage_for(const SchedulerProfile& profile) const {
  return profile.percentage_of_nodes_to_score.value_or(percentage_of_nodes_to_score);
}

SchedulerProfile default_profile(KubeVersion version) {
  return parse_profile(Json::object(), "default profile", version);
}

SchedulerConfig parse_scheduler_config(std::string_view yaml, KubeVersion version) {
  Json document;
  try {
    document = files::yaml_to_json(yaml);
  } catch (const std::exception& error) {
    throw ConfigError(fmt::format("not valid YAML: {}", error.what()));
  }
  if (!document.is_object()) throw ConfigError("a KubeSchedulerConfiguration must be a mapping");
  SchedulerConfig config;
  config.api_version = text_of(document, "apiVersion", "KubeSchedulerConfiguration");
  if (!config.api_version.starts_with(kGroup)) {
    throw ConfigError(fmt::format("apiVersion \"{}\" is not {}v1, v1beta3, v1beta2 or v1beta1",
                                  config.api_version, kGroup));
  }
  const std::string_view api = std::string_view(config.api_version).substr(kGroup.size());
  if (api != "v1" && api != "v1beta3" && api != "v1beta2" && api != "v1beta1") {
    throw ConfigError(fmt::format("apiVersion {} is not supported", config.api_version));
  }
  if (text_of(document, "kind", "KubeSchedulerConfiguration") != "KubeSchedulerConfiguration") {
    throw ConfigError("kind must be KubeSchedulerConfiguration");
  }
  check_keys(document, "KubeSchedulerConfiguration",
             {"apiVersion", "kind", "parallelism", "leaderElection", "clientConnection",
              "healthzBindAddress", "metricsBindAddress", "enableProfiling",
              "enableContentionProfiling", "percentageOfNodesToScore", "podInitialBackoffSeconds",
              "podMaxBackoffSeconds", "profiles", "extenders", "delayCacheUntilActive"});
  config.percentage_of_nodes_to_score = static_cast<int>(
      integer_of(document, "percentageOfNodesToScore", "KubeSchedulerConfiguration", 0));
  if (config.percentage_of_nodes_to_score < 0 || config.percentage_of_nodes_to_score > 100) {
    throw ConfigError("percentageOfNodesToScore must be within 0..100");
  }
  if (const Json* profiles = list_of(document, "profiles", "KubeSchedulerConfiguration")) {
    for (std::size_t i = 0; i < profiles->size(); ++i) {
      config.profiles.push_back(
          parse_profile((*profiles)[i], fmt::format("profiles[{}]", i), version));
    }
  }
  if (config.profiles.empty()) config.profiles.push_back(default_profile(version));
  if (const Json* extenders = list_of(document, "extenders", "KubeSchedulerConfiguration")) {
    int binders = 0;
    for (std::size_t i = 0; i < extenders->size(); ++i) {
      config.extenders.push_back(parse_extender((*extenders)[i], fmt::format("extenders[{}]", i)));
      if (!config.extenders.back().bind_verb.empty()) ++binders;
    }
    if (binders > 1) throw ConfigError("only one extender can implement bind");
  }
  return config;
}

}  // namespace gpushare::kubesim
