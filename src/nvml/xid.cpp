// Which XIDs mark a GPU unhealthy, and the operator's list of extra ignored ones.

#include <algorithm>
#include <charconv>
#include <stdexcept>
#include <string>

#include "gpushare/nvml/nvml_inventory.h"

namespace gpushare::nvml {

bool is_critical_xid(std::uint64_t xid, std::span<const std::uint64_t> extra_ignored) {
  return std::find(std::begin(kDefaultIgnoredXids), std::end(kDefaultIgnoredXids), xid) ==
             std::end(kDefaultIgnoredXids) &&
         std::find(extra_ignored.begin(), extra_ignored.end(), xid) == extra_ignored.end();
}

std::vector<std::uint64_t> parse_xid_list(std::string_view text) {
  std::vector<std::uint64_t> xids;
  auto separator = [](char c) { return c == ',' || c == ' ' || c == '\t' || c == '\n'; };
  std::size_t at = 0;
  while (at < text.size()) {
    if (separator(text[at])) {
      ++at;
      continue;
    }
    std::size_t end = at;
    while (end < text.size() && !separator(text[end])) ++end;
    const std::string_view entry = text.substr(at, end - at);
    std::uint64_t xid = 0;
    const auto [ptr, ec] = std::from_chars(entry.data(), entry.data() + entry.size(), xid);
    if (ec != std::errc{} || ptr != entry.data() + entry.size()) {
      throw std::invalid_argument("not an XID (a decimal number): \"" + std::string(entry) + "\"");
    }
    xids.push_back(xid);
    at = end;
  }
  return xids;
}

}  // namespace gpushare::nvml
