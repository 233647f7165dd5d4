#include "gpushare/kube/json_fields.h"

#include <fmt/format.h>

namespace gpushare::kube {

std::optional<json::Value> present_field(json::Object object, std::string_view key) {
  std::optional<json::Value> value = json::find_member(object, key);
  if (value && value->is_null()) return std::nullopt;
  return value;
}

std::string string_field(json::Object object, std::string_view key, std::string_view what,
                         std::string_view fallback) {
  const std::optional<json::Value> value = present_field(object, key);
  if (!value) return std::string(fallback);
  std::string_view text;
  if (value->get_string().get(text) != simdjson::SUCCESS) {
    throw BadInput(fmt::format("{} must be a string, got {}", what, json::type_name(*value)));
  }
  return std::string(text);
}

json::Object as_object(json::Value value, std::string_view what) {
  json::Object object;
  if (value.get_object().get(object) != simdjson::SUCCESS) {
    throw BadInput(fmt::format("{} must be an object, got {}", what, json::type_name(value)));
  }
  return object;
}

std::optional<json::Object> object_field(json::Object object, std::string_view key,
                                         std::string_view what) {
  const std::optional<json::Value> value = present_field(object, key);
  if (!value) return std::nullopt;
  return as_object(*value, what);
}

std::optional<json::Array> array_field(json::Object object, std::string_view key,
                                       std::string_view what) {
  const std::optional<json::Value> value = present_field(object, key);
  if (!value) return std::nullopt;
  json::Array array;
  if (value->get_array().get(array) != simdjson::SUCCESS) {
    throw BadInput(fmt::format("{} must be an array, got {}", what, json::type_name(*value)));
  }
  return array;
}

json::Value parse_text(json::Parser& parser, std::string_view text, std::string_view what) {
  json::Value value;
  if (const auto error = parser.parse(text, value); error != simdjson::SUCCESS) {
    throw BadInput(fmt::format("{} is not valid JSON: {}", what, simdjson::error_message(error)));
  }
  return value;
}

}  // namespace gpushare::kube
