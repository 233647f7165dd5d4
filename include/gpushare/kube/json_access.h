#pragma once
// Reading kube-scheduler's JSON: Go's decoder matches keys case-insensitively, so we do too.

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace gpushare::kube {

using Json = nlohmann::json;

// Thrown for input that is well-formed JSON but not the expected shape.
class BadInput : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The member whose key equals `key` ignoring ASCII case (an exact match wins), or nullptr.
const Json* find_key(const Json& object, std::string_view key);

// Typed reads that throw BadInput naming `what` when the value has the wrong type.
// Missing or null values yield the fallback.
std::string get_string(const Json& object, std::string_view key, std::string_view what,
                       std::string_view fallback = {});
const Json* get_object(const Json& object, std::string_view key, std::string_view what);
const Json* get_array(const Json& object, std::string_view key, std::string_view what);

}  // namespace gpushare::kube
