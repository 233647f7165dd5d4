#include "gpushare/apiclient/query.h"

namespace gpushare::apiclient {

std::string percent_encode(std::string_view text) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(text.size());
  for (unsigned char c : text) {
    const bool unreserved = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
                            (c >= '0' && c <= '9') || c == '-' || c == '.' || c == '_' || c == '~';
    if (unreserved) {
      out.push_back(static_cast<char>(c));
    } else {
      out.push_back('%');
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 0x0f]);
    }
  }
  return out;
}

std::string to_query_string(const Query& query) {
  std::string out;
  for (const auto& [key, value] : query) {
    if (!out.empty()) out.push_back('&');
    out += percent_encode(key);
    out.push_back('=');
    out += percent_encode(value);
  }
  return out;
}

const std::string* find_query_value(const Query& query, std::string_view key) {
  for (const auto& [k, v] : query) {
    if (k == key) return &v;
  }
  return nullptr;
}

std::string namespaced_path(std::string_view resource_prefix, std::string_view namespace_name,
                            std::string_view resource, std::string_view name,
                            std::string_view subresource) {
  std::string path(resource_prefix);
  path += "/namespaces/";
  path += percent_encode(namespace_name);
  path += '/';
  path += percent_encode(resource);
  if (!name.empty()) {
    path += '/';
    path += percent_encode(name);
    if (!subresource.empty()) {
      path += '/';
      path += percent_encode(subresource);
    }
  }
  return path;
}

}  // namespace gpushare::apiclient
