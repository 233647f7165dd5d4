#include "gpushare/kube/pod_pin.h"

#include <optional>

#include "gpushare/json/document.h"

namespace gpushare::kube {
namespace {

using core::ModelRequirement;
using core::PinOperator;

std::optional<json::Object> object_member(json::Object object, std::string_view key) {
  const auto value = json::find_member(object, key);
  json::Object result;
  if (!value || value->get_object().get(result) != simdjson::SUCCESS) return std::nullopt;
  return result;
}

std::optional<std::string_view> string_member(json::Object object, std::string_view key) {
  const auto value = json::find_member(object, key);
  std::string_view text;
  if (!value || value->get_string().get(text) != simdjson::SUCCESS) return std::nullopt;
  return text;
}

PinOperator operator_of(std::string_view text) {
  if (text == "In") return PinOperator::kIn;
  if (text == "NotIn") return PinOperator::kNotIn;
  if (text == "Exists") return PinOperator::kExists;
  if (text == "DoesNotExist") return PinOperator::kDoesNotExist;
  if (text == "Gt") return PinOperator::kGt;
  if (text == "Lt") return PinOperator::kLt;
  return PinOperator::kInvalid;
}

// Counts what the pin holds against the bounds of core/model_pin.h.
struct Budget {
  std::size_t values = 0;
  bool exceeded = false;

  bool take(std::size_t count) {
    values += count;
    if (values > core::kMaxPinValues) exceeded = true;
    return !exceeded;
  }
  bool fits(std::string_view value) {
    if (value.size() > core::kMaxPinValueLength) exceeded = true;
    return !exceeded;
  }
};

// One matchExpressions entry whose key is the label.
ModelRequirement requirement_of(json::Object expression, Budget& budget) {
  ModelRequirement requirement;
  const auto op = string_member(expression, "operator");
  requirement.op = op ? operator_of(*op) : PinOperator::kInvalid;
  const auto values = json::find_member(expression, "values");
  if (!values || values->is_null()) return requirement;
  json::Array list;
  if (values->get_array().get(list) != simdjson::SUCCESS) return {PinOperator::kInvalid, {}};
  if (!budget.take(list.size())) return {PinOperator::kInvalid, {}};
  for (const json::Value item : list) {
    std::string_view text;
    if (item.get_string().get(text) != simdjson::SUCCESS) return {PinOperator::kInvalid, {}};
    if (!budget.fits(text)) return {PinOperator::kInvalid, {}};
    requirement.values.emplace_back(text);
  }
  return requirement;
}

struct AffinityPin {
  bool constrains = false;  // false: no required node affinity, or a term allows any model
  std::vector<std::vector<ModelRequirement>> terms;
};

AffinityPin affinity_pin_of(json::Object spec, std::string_view label, Budget& budget) {
  AffinityPin pin;
  std::optional<json::Object> required;
  if (const auto affinity = object_member(spec, "affinity")) {
    if (const auto node_affinity = object_member(*affinity, "nodeAffinity")) {
      required = object_member(*node_affinity, "requiredDuringSchedulingIgnoredDuringExecution");
    }
  }
  if (!required) return pin;
  json::Array terms;
  const auto terms_value = json::find_member(*required, "nodeSelectorTerms");
  if (!terms_value || terms_value->get_array().get(terms) != simdjson::SUCCESS) return pin;
  if (terms.size() > core::kMaxPinTerms) {
    budget.exceeded = true;
    return pin;
  }
  bool any_model = false;
  for (const json::Value item : terms) {
    json::Object term;
    if (item.get_object().get(term) != simdjson::SUCCESS) continue;  // matches no node
    bool selects = false;  // an empty term matches no node
    std::vector<ModelRequirement> on_label;
    json::Array expressions;
    if (const auto value = json::find_member(term, "matchExpressions");
        value && value->get_array().get(expressions) == simdjson::SUCCESS) {
      for (const json::Value entry : expressions) {
        selects = true;
        json::Object expression;
        if (entry.get_object().get(expression) != simdjson::SUCCESS) {
          on_label.push_back({PinOperator::kInvalid, {}});  // unparsable: the term fails
          continue;
        }
        const auto key = string_member(expression, "key");
        if (!key) {
          on_label.push_back({PinOperator::kInvalid, {}});
          continue;
        }
        if (*key != label) continue;  // another label: kube-scheduler's business
        if (!budget.take(1)) return pin;
        on_label.push_back(requirement_of(expression, budget));
        if (budget.exceeded) return pin;
      }
    }
    json::Array fields;
    if (const auto value = json::find_member(term, "matchFields");
        value && value->get_array().get(fields) == simdjson::SUCCESS && fields.size() > 0) {
      selects = true;  // on metadata.name: not about the model
    }
    if (!selects) continue;
    if (on_label.empty()) any_model = true;
    pin.terms.push_back(std::move(on_label));
  }
  if (any_model) {
    pin.terms.clear();
    return pin;
  }
  pin.constrains = true;
  return pin;
}

}  // namespace

core::ModelPin model_pin_of(const simdjson::dom::element& spec_value, std::string_view label) {
  core::ModelPin pin;
  json::Object spec;
  if (spec_value.get_object().get(spec) != simdjson::SUCCESS) return pin;
  Budget budget;
  std::optional<ModelRequirement> selected;
  if (const auto selector = object_member(spec, "nodeSelector")) {
    // A map: its keys are label names, matched exactly.
    if (const auto value = json::find_exact(*selector, label); value && !value->is_null()) {
      std::string_view text;
      if (value->get_string().get(text) != simdjson::SUCCESS) {
        selected = ModelRequirement{PinOperator::kInvalid, {}};
      } else if (budget.fits(text)) {
        selected = ModelRequirement{PinOperator::kIn, {std::string(text)}};
      }
    }
  }
  AffinityPin affinity = affinity_pin_of(spec, label, budget);
  if (budget.exceeded) {
    pin.unreadable = true;
    return pin;
  }
  if (!selected && !affinity.constrains) return pin;
  pin.pinned = true;
  if (!affinity.constrains) {
    pin.terms.push_back({std::move(*selected)});
    return pin;
  }
  pin.terms = std::move(affinity.terms);
  if (selected) {
    for (auto& term : pin.terms) term.push_back(*selected);
  }
  return pin;
}

}  // namespace gpushare::kube
