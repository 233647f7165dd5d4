#pragma once
// Query strings and paths for API-server URLs.

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace gpushare::apiclient {

// Ordered, repeated keys allowed; values are raw (encoded by to_query_string).
using Query = std::vector<std::pair<std::string, std::string>>;

// RFC 3986 percent-encoding of everything except unreserved characters.
std::string percent_encode(std::string_view text);

// "a=1&b=x%3Dy" (no leading '?'); empty for an empty query.
std::string to_query_string(const Query& query);

// The value of the first `key`, or nullptr.
const std::string* find_query_value(const Query& query, std::string_view key);

// "/api/v1/namespaces/{ns}/pods/{name}" with each segment percent-encoded.
std::string namespaced_path(std::string_view resource_prefix, std::string_view namespace_name,
                            std::string_view resource, std::string_view name = {},
                            std::string_view subresource = {});

}  // namespace gpushare::apiclient
