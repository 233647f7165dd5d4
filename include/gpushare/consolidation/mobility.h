#pragma once
// Which pods consolidation may move, from the Pod and PodDisruptionBudget objects the API
// server returns (what the model does not hold: labels, owners, budgets). No I/O.
//
// A pod may move when all of these hold: it opted in (the label kOptInLabel is "true", or its
// namespace is listed and the label is not "false"), it has an ownerReference (a controller
// re-creates it; a bare pod would be lost), it is not being deleted, and at most one
// PodDisruptionBudget selects it (the eviction API refuses a pod with two). A budget is selected
// by its spec.selector as the eviction API reads it: an empty or absent selector selects nothing.

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "gpushare/core/consolidation_planner.h"

namespace gpushare::consolidation {

using Json = nlohmann::json;

// The pod label that opts a pod in ("true") or out ("false").
inline constexpr std::string_view kOptInLabel = "gpushare.aliyun.com/consolidate";

struct OptInRule {
  std::set<std::string> namespaces;  // --consolidate-namespaces: every pod there opts in
};

// What consolidation reads of one Pod object.
struct PodFacts {
  std::string uid;
  std::string namespace_name;
  std::string name;
  std::map<std::string, std::string> labels;
  std::string owner_uid;   // the controller's ownerReference (else the first); "" = bare pod
  std::string owner_kind;  // e.g. ReplicaSet
  std::string owner_name;
  // The owner is the pod's controller (`controller: true`), as kube::PodInfo::controller names
  // it: the extender's verbs recognise its replacement pods (a consolidation hold is theirs).
  bool owner_controller = false;
  bool opted_in = false;
  bool terminating = false;  // metadata.deletionTimestamp set
  bool bound = false;        // spec.nodeName set
  std::string phase;
  std::string created;  // metadata.creationTimestamp, RFC 3339
  std::string key() const { return namespace_name + "/" + name; }
};

// Reads a Pod object; nullopt when it has no uid, namespace or name.
std::optional<PodFacts> pod_facts(const Json& pod, const OptInRule& rule);

// One PodDisruptionBudget: its selector and the disruptions it allows now (0 while the
// disruption controller has not observed its latest generation, as the eviction API counts).
struct DisruptionBudget {
  std::string namespace_name;
  std::string name;
  Json selector;
  int disruptions_allowed = 0;
  std::string key() const { return namespace_name + "/" + name; }
};
std::optional<DisruptionBudget> disruption_budget(const Json& pdb);

// metav1.LabelSelector against a pod's labels (matchLabels and matchExpressions: In, NotIn,
// Exists, DoesNotExist). Empty or absent selects nothing; nullopt for a selector that is not
// valid (selects nothing either).
std::optional<bool> selects(const Json& selector, const std::map<std::string, std::string>& labels);

// Why a pod was not movable, for the plan's report.
enum class Immobile {
  kNone,
  kNotOptedIn,
  kNoOwner,
  kTerminating,
  kTwoBudgets,
  kNoDisruptionAllowed,  // its PodDisruptionBudget allows no disruption now
};
std::string_view to_string(Immobile reason);

// The planner's view of each pod, keyed by UID, and why the others cannot move.
struct MobilityTable {
  std::map<std::string, core::PodMobility> movable;
  std::map<std::string, Immobile> immobile;
  std::map<std::string, PodFacts> pods;  // every pod read, by UID
};
MobilityTable mobility_table(const std::vector<PodFacts>& pods,
                             const std::vector<DisruptionBudget>& budgets);

}  // namespace gpushare::consolidation
