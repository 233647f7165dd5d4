#include "gpushare/kube/json_access.h"

#include <fmt/format.h>

#include "gpushare/json/keys.h"

namespace gpushare::kube {
namespace {

const char* type_name(const Json& value) {
  return value.type_name();
}

}  // namespace

const Json* find_key(const Json& object, std::string_view key) {
  if (!object.is_object()) return nullptr;
  if (auto it = object.find(key); it != object.end()) return &*it;
  for (auto it = object.begin(); it != object.end(); ++it) {
    if (json::equal_ignoring_case(it.key(), key)) return &it.value();
  }
  return nullptr;
}

std::string get_string(const Json& object, std::string_view key, std::string_view what,
                       std::string_view fallback) {
  const Json* value = find_key(object, key);
  if (value == nullptr || value->is_null()) return std::string(fallback);
  if (!value->is_string()) {
    throw BadInput(fmt::format("{} must be a string, got {}", what, type_name(*value)));
  }
  return value->get<std::string>();
}

const Json* get_object(const Json& object, std::string_view key, std::string_view what) {
  const Json* value = find_key(object, key);
  if (value == nullptr || value->is_null()) return nullptr;
  if (!value->is_object()) {
    throw BadInput(fmt::format("{} must be an object, got {}", what, type_name(*value)));
  }
  return value;
}

const Json* get_array(const Json& object, std::string_view key, std::string_view what) {
  const Json* value = find_key(object, key);
  if (value == nullptr || value->is_null()) return nullptr;
  if (!value->is_array()) {
    throw BadInput(fmt::format("{} must be an array, got {}", what, type_name(*value)));
  }
  return value;
}

}  // namespace gpushare::kube
