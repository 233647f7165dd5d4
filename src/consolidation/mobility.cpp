#include "gpushare/consolidation/mobility.h"

#include <algorithm>

namespace gpushare::consolidation {
namespace {

std::string text_at(const Json& object, std::string_view a, std::string_view b) {
  const auto outer = object.find(a);
  if (outer == object.end() || !outer->is_object()) return {};
  const auto inner = outer->find(b);
  return inner != outer->end() && inner->is_string() ? inner->get<std::string>() : std::string();
}

}  // namespace

std::optional<PodFacts> pod_facts(const Json& pod, const OptInRule& rule) {
  if (!pod.is_object()) return std::nullopt;
  PodFacts facts;
  facts.uid = text_at(pod, "metadata", "uid");
  facts.namespace_name = text_at(pod, "metadata", "namespace");
  facts.name = text_at(pod, "metadata", "name");
  if (facts.uid.empty() || facts.namespace_name.empty() || facts.name.empty()) return std::nullopt;
  const Json& metadata = pod["metadata"];
  if (const auto labels = metadata.find("labels");
      labels != metadata.end() && labels->is_object()) {
    for (const auto& [key, value] : labels->items()) {
      if (value.is_string()) facts.labels[key] = value.get<std::string>();
    }
  }
  if (const auto owners = metadata.find("ownerReferences");
      owners != metadata.end() && owners->is_array()) {
    for (const Json& owner : *owners) {
      if (!owner.is_object() || !owner.contains("uid") || !owner["uid"].is_string()) continue;
      const auto flag = owner.find("controller");
      const bool controller = flag != owner.end() && flag->is_boolean() && flag->get<bool>();
      if (facts.owner_uid.empty() || controller) {
        auto text = [&](const char* key) {
          const auto value = owner.find(key);
          return value != owner.end() && value->is_string() ? value->get<std::string>()
                                                            : std::string();
        };
        facts.owner_uid = owner["uid"].get<std::string>();
        facts.owner_kind = text("kind");
        facts.owner_name = text("name");
        facts.owner_controller = controller;
      }
      if (controller) break;
    }
  }
  facts.terminating =
      metadata.contains("deletionTimestamp") && !metadata["deletionTimestamp"].is_null();
  facts.bound = !text_at(pod, "spec", "nodeName").empty();
  facts.phase = text_at(pod, "status", "phase");
  facts.created = text_at(pod, "metadata", "creationTimestamp");
  const auto label = facts.labels.find(std::string(kOptInLabel));
  if (label != facts.labels.end()) {
    facts.opted_in = label->second == "true";
  } else {
    facts.opted_in = rule.namespaces.contains(facts.namespace_name);
  }
  return facts;
}

std::optional<DisruptionBudget> disruption_budget(const Json& pdb) {
  if (!pdb.is_object()) return std::nullopt;
  DisruptionBudget budget;
  budget.namespace_name = text_at(pdb, "metadata", "namespace");
  budget.name = text_at(pdb, "metadata", "name");
  if (budget.namespace_name.empty() || budget.name.empty()) return std::nullopt;
  if (const auto spec = pdb.find("spec"); spec != pdb.end() && spec->is_object())
    budget.selector = spec->value("selector", Json());
  const Json status = pdb.value("status", Json::object());
  const std::int64_t generation = pdb["metadata"].value("generation", std::int64_t{0});
  const std::int64_t observed =
      status.is_object() ? status.value("observedGeneration", std::int64_t{0}) : 0;
  const std::int64_t allowed =
      status.is_object() ? status.value("disruptionsAllowed", std::int64_t{0}) : 0;
  budget.disruptions_allowed =
      observed < generation ? 0 : static_cast<int>(std::clamp<std::int64_t>(allowed, 0, 1 << 20));
  return budget;
}

std::optional<bool> selects(const Json& selector,
                            const std::map<std::string, std::string>& labels) {
  if (!selector.is_object()) return false;
  bool any = false;
  if (const auto match = selector.find("matchLabels"); match != selector.end()) {
    if (!match->is_object()) return std::nullopt;
    for (const auto& [key, value] : match->items()) {
      if (!value.is_string()) return std::nullopt;
      any = true;
      const auto it = labels.find(key);
      if (it == labels.end() || it->second != value.get<std::string>()) return false;
    }
  }
  if (const auto expressions = selector.find("matchExpressions"); expressions != selector.end()) {
    if (!expressions->is_array()) return std::nullopt;
    for (const Json& expression : *expressions) {
      if (!expression.is_object()) return std::nullopt;
      const std::string key = expression.value("key", "");
      const std::string op = expression.value("operator", "");
      std::set<std::string> values;
      if (const auto listed = expression.find("values"); listed != expression.end()) {
        if (!listed->is_array()) return std::nullopt;
        for (const Json& value : *listed) {
          if (!value.is_string()) return std::nullopt;
          values.insert(value.get<std::string>());
        }
      }
      any = true;
      const auto it = labels.find(key);
      const bool present = it != labels.end();
      if (op == "In" || op == "NotIn") {
        if (values.empty()) return std::nullopt;
        const bool in = present && values.contains(it->second);
        if (op == "In" ? !in : in) return false;
      } else if (op == "Exists" || op == "DoesNotExist") {
        if (!values.empty()) return std::nullopt;
        if (op == "Exists" ? !present : present) return false;
      } else {
        return std::nullopt;
      }
    }
  }
  return any;
}

std::string_view to_string(Immobile reason) {
  switch (reason) {
    case Immobile::kNone:
      return "movable";
    case Immobile::kNotOptedIn:
      return "not_opted_in";
    case Immobile::kNoOwner:
      return "no_owner";
    case Immobile::kTerminating:
      return "terminating";
    case Immobile::kTwoBudgets:
      return "several_disruption_budgets";
    case Immobile::kNoDisruptionAllowed:
      return "disruption_budget";
  }
  return "unknown";
}

MobilityTable mobility_table(const std::vector<PodFacts>& pods,
                             const std::vector<DisruptionBudget>& budgets) {
  MobilityTable table;
  for (const PodFacts& pod : pods) {
    table.pods[pod.uid] = pod;
    Immobile reason = Immobile::kNone;
    if (!pod.opted_in) {
      reason = Immobile::kNotOptedIn;
    } else if (pod.owner_uid.empty()) {
      reason = Immobile::kNoOwner;
    } else if (pod.terminating) {
      reason = Immobile::kTerminating;
    }
    core::PodMobility mobility;
    mobility.opted_in = pod.opted_in;
    mobility.has_owner = !pod.owner_uid.empty();
    int selecting = 0;
    for (const DisruptionBudget& budget : budgets) {
      if (budget.namespace_name != pod.namespace_name) continue;
      if (!selects(budget.selector, pod.labels).value_or(false)) continue;
      ++selecting;
      mobility.disruption_budget = budget.key();
      mobility.disruptions_allowed = budget.disruptions_allowed;
    }
    if (reason == Immobile::kNone && selecting > 1) reason = Immobile::kTwoBudgets;
    if (reason == Immobile::kNone && selecting == 1 && mobility.disruptions_allowed <= 0)
      reason = Immobile::kNoDisruptionAllowed;
    if (reason == Immobile::kNone) {
      table.movable[pod.uid] = std::move(mobility);
    } else {
      table.immobile[pod.uid] = reason;
    }
  }
  return table;
}

}  // namespace gpushare::consolidation
