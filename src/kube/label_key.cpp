#include <cctype>

#include "gpushare/kube/resource_names.h"

namespace gpushare::kube {
namespace {

bool alphanumeric(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) != 0;
}

bool is_label_name(std::string_view name) {
  if (name.empty() || name.size() > 63) return false;
  if (!alphanumeric(name.front()) || !alphanumeric(name.back())) return false;
  for (char c : name) {
    if (!alphanumeric(c) && c != '-' && c != '_' && c != '.') return false;
  }
  return true;
}

// A DNS subdomain (RFC 1123): lower-case labels of alphanumerics and '-', joined by '.'.
bool is_dns_subdomain(std::string_view name) {
  if (name.empty() || name.size() > 253) return false;
  std::size_t start = 0;
  while (start <= name.size()) {
    std::size_t end = name.find('.', start);
    if (end == std::string_view::npos) end = name.size();
    const std::string_view label = name.substr(start, end - start);
    if (label.empty() || label.size() > 63 || label.front() == '-' || label.back() == '-') {
      return false;
    }
    for (char c : label) {
      if (!(std::islower(static_cast<unsigned char>(c)) ||
            std::isdigit(static_cast<unsigned char>(c)) || c == '-')) {
        return false;
      }
    }
    start = end + 1;
  }
  return true;
}

}  // namespace

bool is_label_key(std::string_view key) {
  const std::size_t slash = key.find('/');
  if (slash == std::string_view::npos) return is_label_name(key);
  return is_dns_subdomain(key.substr(0, slash)) && is_label_name(key.substr(slash + 1));
}

}  // namespace gpushare::kube
