#pragma once
// An ExtenderArgs decoder without simdjson, on an nlohmann tree: a reference that the
// one decoder (wire::decode_extender_args_body) is checked against by the contract tests
// and extender_args_fuzzer. Test code only; it also states the two limits simdjson sets that
// nlohmann did not (integers beyond 64 bits, nesting deeper than json::kMaxDepth), so that the
// comparison holds everywhere else.

#include <cstddef>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "gpushare/kube/json_access.h"
#include "gpushare/kube/pod_info.h"
#include "gpushare/wire/wire_decode.h"

namespace gpushare::reference {

using kube::BadInput;
using kube::Json;

// What the reference accepts as a body and what it decodes from it.
struct ReferenceArgs {
  kube::PodInfo pod;
  std::optional<std::vector<std::string>> node_names;
  std::optional<std::vector<Json>> nodes;

  std::vector<std::string> offered_names() const;
};

namespace detail {

// Walks the text once to find what simdjson refuses and nlohmann accepted.
class Limits : public nlohmann::json_sax<Json> {
 public:
  bool exceeded = false;

  bool null() override { return true; }
  bool boolean(bool) override { return true; }
  bool number_integer(number_integer_t) override { return true; }
  bool number_unsigned(number_unsigned_t) override { return true; }
  bool number_float(number_float_t, const string_t& lexeme) override {
    // An integer that fits neither int64 nor uint64 reaches nlohmann as a double.
    if (lexeme.find_first_of(".eE") == std::string::npos) exceeded = true;
    return true;
  }
  bool string(string_t&) override { return true; }
  bool binary(binary_t&) override { return true; }
  bool start_object(std::size_t) override { return open(); }
  bool key(string_t&) override { return true; }
  bool end_object() override { return close(); }
  bool start_array(std::size_t) override { return open(); }
  bool end_array() override { return close(); }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) override {
    return false;
  }

 private:
  bool open() {
    if (++depth_ > 10000) exceeded = true;  // json::kMaxDepth
    return true;
  }
  bool close() {
    --depth_;
    return true;
  }
  std::size_t depth_ = 0;
};

inline std::string node_name_of(const Json& node) {
  const Json* metadata =
      node.is_object() ? kube::get_object(node, "metadata", "node metadata") : nullptr;
  if (metadata == nullptr) throw BadInput("Nodes.items[] must be Node objects with metadata");
  std::string name = kube::get_string(*metadata, "name", "node metadata.name");
  if (name.empty()) throw BadInput("Nodes.items[] has a node without a name");
  return name;
}

}  // namespace detail

inline std::vector<std::string> ReferenceArgs::offered_names() const {
  if (node_names) return *node_names;
  std::vector<std::string> names;
  if (nodes) {
    for (const Json& node : *nodes) names.push_back(detail::node_name_of(node));
  }
  return names;
}

inline Json parse_json_body(std::string_view body) {
  if (body.empty()) throw BadInput("empty request body");
  // nlohmann's lexer takes a NUL byte for the end of the input; JSON text never holds one raw.
  if (body.find('\0') != std::string_view::npos) throw BadInput("request body is not valid JSON");
  Json parsed = Json::parse(body.begin(), body.end(), nullptr, /*allow_exceptions=*/false);
  if (parsed.is_discarded()) throw BadInput("request body is not valid JSON");
  detail::Limits limits;
  Json::sax_parse(body.begin(), body.end(), &limits);
  if (limits.exceeded) throw BadInput("request body is not valid JSON");
  if (!parsed.is_object()) throw BadInput("request body must be a JSON object");
  return parsed;
}

inline ReferenceArgs decode_extender_args(std::string_view text, const kube::ResourceNames& names) {
  const Json body = parse_json_body(text);
  ReferenceArgs args;
  const Json* pod = kube::get_object(body, "Pod", "Pod");
  if (pod == nullptr) throw BadInput("missing Pod");
  args.pod = kube::parse_pod(*pod, names);
  if (const Json* node_names = kube::get_array(body, "NodeNames", "NodeNames")) {
    args.node_names.emplace();
    for (const Json& item : *node_names) {
      if (!item.is_string()) throw BadInput("NodeNames must hold strings");
      args.node_names->push_back(item.get<std::string>());
    }
  }
  if (const Json* nodes = kube::get_object(body, "Nodes", "Nodes")) {
    const Json* items = kube::get_array(*nodes, "items", "Nodes.items");
    args.nodes.emplace();
    if (items != nullptr) {
      for (const Json& item : *items) {
        detail::node_name_of(item);  // validates
        args.nodes->push_back(item);
      }
    }
  }
  if (!args.node_names && !args.nodes) throw BadInput("neither NodeNames nor Nodes is set");
  if (args.node_names && args.nodes)
    args.nodes.reset();  // nodeCacheCapable: names are authoritative
  return args;
}

}  // namespace gpushare::reference
