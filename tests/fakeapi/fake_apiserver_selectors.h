#pragma once
// Field and label selectors as the apiserver parses and applies them.

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "fakeapi/fake_apiserver_types.h"

namespace gpushare::testing::fakeapi {

// `a=b,c!=d` over the field labels the real server supports for `resource`
// (pods: metadata.name, metadata.namespace, spec.nodeName, status.phase, ...).
// parse() throws ApiError 400 for syntax errors and unsupported field labels.
class FieldSelector {
 public:
  static FieldSelector parse(Resource resource, std::string_view text);
  bool matches(const nlohmann::json& object) const;
  bool empty() const noexcept { return requirements_.empty(); }

 private:
  struct Requirement {
    std::string field;
    bool equal = true;
    std::string value;
  };
  Resource resource_ = Resource::Pods;
  std::vector<Requirement> requirements_;
};

// Label selectors: `k=v`, `k==v`, `k!=v`, `k`, `!k`, `k in (a,b)`, `k notin (a,b)`.
class LabelSelector {
 public:
  static LabelSelector parse(std::string_view text);
  bool matches(const nlohmann::json& object) const;
  bool empty() const noexcept { return requirements_.empty(); }

 private:
  enum class Op { Equal, NotEqual, Exists, NotExists, In, NotIn };
  struct Requirement {
    std::string key;
    Op op = Op::Exists;
    std::vector<std::string> values;
  };
  std::vector<Requirement> requirements_;
};

// The value of a supported field label, or nullopt when `field` is not supported for `resource`.
std::optional<std::string> field_label_value(Resource resource, std::string_view field,
                                             const nlohmann::json& object);

}  // namespace gpushare::testing::fakeapi
