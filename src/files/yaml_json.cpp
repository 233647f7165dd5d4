#include "gpushare/files/yaml_json.h"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <charconv>
#include <stdexcept>
#include <string>

namespace gpushare::files {
namespace {

nlohmann::json scalar(const YAML::Node& node) {
  const std::string& text = node.Scalar();
  if (node.Tag() != "?") return text;  // quoted or explicitly tagged: a string
  if (text == "null" || text == "~" || text.empty()) return nullptr;
  if (text == "true" || text == "True" || text == "TRUE") return true;
  if (text == "false" || text == "False" || text == "FALSE") return false;
  std::int64_t integer = 0;
  if (auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), integer);
      ec == std::errc() && p == text.data() + text.size()) {
    return integer;
  }
  return text;
}

nlohmann::json convert(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Null:
    case YAML::NodeType::Undefined:
      return nullptr;
    case YAML::NodeType::Scalar:
      return scalar(node);
    case YAML::NodeType::Sequence: {
      nlohmann::json array = nlohmann::json::array();
      for (const auto& item : node) array.push_back(convert(item));
      return array;
    }
    case YAML::NodeType::Map: {
      nlohmann::json object = nlohmann::json::object();
      for (const auto& entry : node) object[entry.first.as<std::string>()] = convert(entry.second);
      return object;
    }
  }
  return nullptr;
}

}  // namespace

nlohmann::json yaml_to_json(std::string_view text) {
  try {
    return convert(YAML::Load(std::string(text)));
  } catch (const YAML::Exception& e) {
    throw std::runtime_error(fmt::format("YAML error at line {}, column {}: {}", e.mark.line + 1,
                                         e.mark.column + 1, e.msg));
  }
}

}  // namespace gpushare::files
