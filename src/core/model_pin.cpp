#include "gpushare/core/model_pin.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cstdint>

namespace gpushare::core {
namespace {

std::optional<std::int64_t> parse_integer(std::string_view text) {
  std::int64_t value = 0;
  const char* begin = text.data();
  if (!text.empty() && text.front() == '+') ++begin;  // Go's strconv.ParseInt takes a sign
  const auto [end, error] = std::from_chars(begin, text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size() || begin == end) return std::nullopt;
  return value;
}

std::string_view operator_text(PinOperator op) {
  switch (op) {
    case PinOperator::kIn:
      return "in";
    case PinOperator::kNotIn:
      return "notin";
    case PinOperator::kExists:
      return "exists";
    case PinOperator::kDoesNotExist:
      return "!exists";
    case PinOperator::kGt:
      return "gt";
    case PinOperator::kLt:
      return "lt";
    case PinOperator::kInvalid:
      break;
  }
  return "invalid";
}

}  // namespace

bool ModelRequirement::matches(std::optional<std::string_view> label) const {
  const auto listed = [&] {
    return label && std::find(values.begin(), values.end(), *label) != values.end();
  };
  switch (op) {
    case PinOperator::kIn:
      return !values.empty() && listed();
    case PinOperator::kNotIn:
      return !values.empty() && !listed();
    case PinOperator::kExists:
      return values.empty() && label.has_value();
    case PinOperator::kDoesNotExist:
      return values.empty() && !label.has_value();
    case PinOperator::kGt:
    case PinOperator::kLt: {
      if (values.size() != 1 || !label) return false;
      const auto bound = parse_integer(values.front());
      const auto value = parse_integer(*label);
      if (!bound || !value) return false;
      return op == PinOperator::kGt ? *value > *bound : *value < *bound;
    }
    case PinOperator::kInvalid:
      return false;
  }
  return false;
}

bool ModelPin::allows(std::optional<std::string_view> label) const {
  if (!pinned) return true;
  return std::any_of(terms.begin(), terms.end(), [&](const std::vector<ModelRequirement>& term) {
    return std::all_of(term.begin(), term.end(),
                       [&](const ModelRequirement& r) { return r.matches(label); });
  });
}

std::string ModelPin::describe() const {
  if (!pinned) return unreadable ? "too large to read (taken as any model)" : "";
  if (terms.empty()) return "matches no node";
  std::vector<std::string> texts;
  texts.reserve(terms.size());
  for (const auto& term : terms) {
    std::vector<std::string> parts;
    for (const ModelRequirement& r : term) {
      parts.push_back(r.values.empty()
                          ? std::string(operator_text(r.op))
                          : fmt::format("{} ({})", operator_text(r.op), fmt::join(r.values, ",")));
    }
    texts.push_back(fmt::format("{}", fmt::join(parts, ", ")));
  }
  return fmt::format("{}", fmt::join(texts, " or "));
}

ModelPin ModelPin::any_of(std::span<const std::string> models) {
  ModelPin pin;
  if (models.empty()) return pin;
  pin.pinned = true;
  pin.terms.push_back({{PinOperator::kIn, {models.begin(), models.end()}}});
  return pin;
}

std::vector<std::string> resolve_models(const ModelPin& pin, std::span<const std::string> present) {
  if (!pin.pinned) return {};
  std::vector<std::string> allowed;
  for (const std::string& model : present) {
    const std::optional<std::string_view> label =
        model.empty() ? std::nullopt : std::optional<std::string_view>(model);
    if (pin.allows(label)) allowed.push_back(model);
  }
  if (allowed.empty()) return {std::string(kNoModelMatches)};
  if (allowed.size() == present.size()) return {};
  return allowed;
}

}  // namespace gpushare::core
