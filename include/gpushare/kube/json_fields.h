#pragma once
// Typed reads from simdjson objects (gpushare/json/document.h), matching keys as Go's decoder
// does (json::find_member). The decoders' counterpart of json_access.h, which reads nlohmann
// trees for configuration. Include from .cpp files only: it pulls in <simdjson.h>.

#include <optional>
#include <string>
#include <string_view>

#include "gpushare/json/document.h"
#include "gpushare/kube/json_access.h"

namespace gpushare::kube {

// The member's value if present and not null.
std::optional<json::Value> present_field(json::Object object, std::string_view key);

// Throw BadInput naming `what` when the value has the wrong type; missing or null values yield
// the fallback (or nullopt).
std::string string_field(json::Object object, std::string_view key, std::string_view what,
                         std::string_view fallback = {});
std::optional<json::Object> object_field(json::Object object, std::string_view key,
                                         std::string_view what);
std::optional<json::Array> array_field(json::Object object, std::string_view key,
                                       std::string_view what);

// The value as an object, or BadInput "<what> must be an object, got <type>".
json::Object as_object(json::Value value, std::string_view what);

// Parses `text` with `parser`, throwing BadInput("<what> is not valid JSON: <simdjson's reason>").
json::Value parse_text(json::Parser& parser, std::string_view text, std::string_view what);

// A tree built by nlohmann (configuration files, traces, tests) decoded by the one decoder: it is
// written out as text and parsed again. For convenience paths, not the hot ones.
template <typename Decode>
auto decode_tree(const Json& tree, Decode&& decode) {
  thread_local json::Parser parser;
  const std::string text = tree.dump(-1, ' ', false, Json::error_handler_t::replace);
  return decode(parse_text(parser, text, "JSON"));
}

}  // namespace gpushare::kube
