#pragma once
// The HTTP methods the API-server client sends.

#include <string_view>

namespace gpushare::apiclient {

enum class HttpMethod { kGet, kPost, kPut, kPatch, kDelete };
std::string_view to_string(HttpMethod method);

}  // namespace gpushare::apiclient
