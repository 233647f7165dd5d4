#include "fakeapi/fake_apiserver_selectors.h"

#include <fmt/format.h>

#include <algorithm>

#include "fakeapi/fake_apiserver_status.h"
#include "fakeapi/fake_apiserver_store.h"

namespace gpushare::testing::fakeapi {
namespace {

using nlohmann::json;

std::string bool_text(const json& object, std::string_view a, std::string_view b) {
  auto outer = object.find(a);
  if (outer == object.end() || !outer->is_object()) return "false";
  auto inner = outer->find(b);
  return inner != outer->end() && inner->is_boolean() && inner->get<bool>() ? "true" : "false";
}

// Splits on commas that are not escaped with a backslash.
std::vector<std::string> split_unescaped(std::string_view text) {
  std::vector<std::string> parts(1);
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '\\' && i + 1 < text.size()) {
      parts.back() += text[i];
      parts.back() += text[++i];
    } else if (text[i] == ',') {
      parts.emplace_back();
    } else {
      parts.back() += text[i];
    }
  }
  return parts;
}

std::string unescape(std::string_view text) {
  std::string out;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '\\' && i + 1 < text.size()) ++i;
    out += text[i];
  }
  return out;
}

std::string trim(std::string_view text) {
  const auto first = text.find_first_not_of(" \t");
  if (first == std::string_view::npos) return {};
  const auto last = text.find_last_not_of(" \t");
  return std::string(text.substr(first, last - first + 1));
}

}  // namespace

std::optional<std::string> field_label_value(Resource resource, std::string_view field,
                                             const json& object) {
  if (field == "metadata.name") return name_of(object);
  if (field == "metadata.namespace" && info(resource).namespaced) return namespace_of(object);
  switch (resource) {
    case Resource::Pods:
      if (field == "spec.nodeName" || field == "spec.host")
        return string_at(object, "spec", "nodeName");
      if (field == "spec.restartPolicy") return string_at(object, "spec", "restartPolicy");
      if (field == "spec.schedulerName") return string_at(object, "spec", "schedulerName");
      if (field == "spec.serviceAccountName")
        return string_at(object, "spec", "serviceAccountName");
      if (field == "spec.hostNetwork") return bool_text(object, "spec", "hostNetwork");
      if (field == "status.phase") return string_at(object, "status", "phase");
      if (field == "status.podIP") return string_at(object, "status", "podIP");
      if (field == "status.nominatedNodeName")
        return string_at(object, "status", "nominatedNodeName");
      if (field == "status.podIPs") {
        // Matches on the first (primary) IP, like the real field-label function.
        const json* ips = nullptr;
        if (auto status = object.find("status"); status != object.end() && status->is_object()) {
          if (auto it = status->find("podIPs"); it != status->end() && it->is_array()) ips = &*it;
        }
        if (ips != nullptr && !ips->empty()) return string_at((*ips)[0], "ip");
        return std::string();
      }
      return std::nullopt;
    case Resource::Nodes:
      if (field == "spec.unschedulable") return bool_text(object, "spec", "unschedulable");
      return std::nullopt;
    case Resource::ResourceSlices:
      // kube's selectable fields of ResourceSlices (node-local slices, one driver's slices).
      if (field == "spec.nodeName") return string_at(object, "spec", "nodeName");
      if (field == "spec.driver") return string_at(object, "spec", "driver");
      return std::nullopt;
    case Resource::ConfigMaps:
    case Resource::Leases:
    case Resource::ResourceClaims:
    case Resource::ResourceClaimTemplates:
    case Resource::DeviceClasses:
    case Resource::PodDisruptionBudgets:
    case Resource::Events:
      return std::nullopt;
  }
  return std::nullopt;
}

FieldSelector FieldSelector::parse(Resource resource, std::string_view text) {
  FieldSelector selector;
  selector.resource_ = resource;
  if (trim(text).empty()) return selector;
  for (const std::string& raw : split_unescaped(text)) {
    const std::string term = trim(raw);
    Requirement requirement;
    std::size_t op_pos = std::string::npos;
    std::size_t op_len = 0;
    // Find the first unescaped operator; "!=" and "==" before "=".
    for (std::size_t i = 0; i < term.size(); ++i) {
      if (term[i] == '\\') {
        ++i;
        continue;
      }
      if (term.compare(i, 2, "!=") == 0) {
        op_pos = i, op_len = 2, requirement.equal = false;
        break;
      }
      if (term.compare(i, 2, "==") == 0) {
        op_pos = i, op_len = 2;
        break;
      }
      if (term[i] == '=') {
        op_pos = i, op_len = 1;
        break;
      }
    }
    if (op_pos == std::string::npos || op_pos == 0) {
      throw bad_request(fmt::format("invalid selector: '{}'; can't understand '{}'", text, term));
    }
    requirement.field = trim(std::string_view(term).substr(0, op_pos));
    requirement.value = unescape(std::string_view(term).substr(op_pos + op_len));
    if (!field_label_value(resource, requirement.field, json::object())) {
      throw bad_request(fmt::format("field label not supported: {}", requirement.field));
    }
    selector.requirements_.push_back(std::move(requirement));
  }
  return selector;
}

bool FieldSelector::matches(const json& object) const {
  return std::all_of(requirements_.begin(), requirements_.end(), [&](const Requirement& r) {
    const std::string actual = field_label_value(resource_, r.field, object).value_or("");
    return (actual == r.value) == r.equal;
  });
}

LabelSelector LabelSelector::parse(std::string_view text) {
  LabelSelector selector;
  // Split on commas outside parentheses.
  std::vector<std::string> terms(1);
  int depth = 0;
  for (char c : text) {
    if (c == '(') ++depth;
    if (c == ')') --depth;
    if (c == ',' && depth == 0) {
      terms.emplace_back();
    } else {
      terms.back() += c;
    }
  }
  auto fail = [&](std::string_view why) {
    return bad_request(fmt::format("unable to parse requirement: {}: {}", why, text));
  };
  for (const std::string& raw : terms) {
    const std::string term = trim(raw);
    if (term.empty()) {
      if (terms.size() == 1) break;
      throw fail("empty requirement");
    }
    Requirement requirement;
    auto set_in = [&](std::size_t keyword_pos, std::size_t keyword_len, Op op) {
      requirement.key = trim(std::string_view(term).substr(0, keyword_pos));
      const std::string rest = trim(std::string_view(term).substr(keyword_pos + keyword_len));
      if (rest.size() < 2 || rest.front() != '(' || rest.back() != ')')
        throw fail("expected (values)");
      requirement.op = op;
      std::string values = rest.substr(1, rest.size() - 2);
      std::size_t start = 0;
      while (start <= values.size()) {
        const std::size_t comma = values.find(',', start);
        requirement.values.push_back(trim(std::string_view(values).substr(
            start, comma == std::string::npos ? std::string::npos : comma - start)));
        if (comma == std::string::npos) break;
        start = comma + 1;
      }
    };
    if (auto pos = term.find(" notin "); pos != std::string::npos) {
      set_in(pos, 7, Op::NotIn);
    } else if (auto in_pos = term.find(" in "); in_pos != std::string::npos) {
      set_in(in_pos, 4, Op::In);
    } else if (auto ne = term.find("!="); ne != std::string::npos) {
      requirement = {trim(term.substr(0, ne)), Op::NotEqual, {trim(term.substr(ne + 2))}};
    } else if (auto eq2 = term.find("=="); eq2 != std::string::npos) {
      requirement = {trim(term.substr(0, eq2)), Op::Equal, {trim(term.substr(eq2 + 2))}};
    } else if (auto eq = term.find('='); eq != std::string::npos) {
      requirement = {trim(term.substr(0, eq)), Op::Equal, {trim(term.substr(eq + 1))}};
    } else if (term.front() == '!') {
      requirement = {trim(term.substr(1)), Op::NotExists, {}};
    } else {
      requirement = {term, Op::Exists, {}};
    }
    if (requirement.key.empty()) throw fail("empty key");
    selector.requirements_.push_back(std::move(requirement));
  }
  return selector;
}

bool LabelSelector::matches(const json& object) const {
  const json* labels = nullptr;
  if (auto metadata = object.find("metadata"); metadata != object.end() && metadata->is_object()) {
    if (auto it = metadata->find("labels"); it != metadata->end() && it->is_object()) labels = &*it;
  }
  auto value_of = [&](const std::string& key) -> std::optional<std::string> {
    if (labels == nullptr) return std::nullopt;
    auto it = labels->find(key);
    if (it == labels->end() || !it->is_string()) return std::nullopt;
    return it->get<std::string>();
  };
  return std::all_of(requirements_.begin(), requirements_.end(), [&](const Requirement& r) {
    const std::optional<std::string> value = value_of(r.key);
    const bool listed =
        value && std::find(r.values.begin(), r.values.end(), *value) != r.values.end();
    switch (r.op) {
      case Op::Equal:
      case Op::In:
        return listed;
      case Op::NotEqual:
      case Op::NotIn:
        return !listed;  // absent keys match, as upstream
      case Op::Exists:
        return value.has_value();
      case Op::NotExists:
        return !value.has_value();
    }
    return false;
  });
}

}  // namespace gpushare::testing::fakeapi
