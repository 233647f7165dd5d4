#include "base64.h"

#include <array>
#include <cstdint>

namespace gpushare::apiclient::detail {
namespace {

constexpr std::array<std::int8_t, 256> make_decode_table() {
  std::array<std::int8_t, 256> table{};
  for (auto& entry : table) entry = -1;
  constexpr std::string_view kAlphabet =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  for (std::size_t i = 0; i < kAlphabet.size(); ++i) {
    table[static_cast<unsigned char>(kAlphabet[i])] = static_cast<std::int8_t>(i);
  }
  return table;
}

constexpr auto kDecodeTable = make_decode_table();

bool is_space(char c) {
  return c == ' ' || c == '\n' || c == '\r' || c == '\t';
}

}  // namespace

std::optional<std::string> decode_base64(std::string_view text) {
  std::string compact;
  compact.reserve(text.size());
  for (char c : text) {
    if (!is_space(c)) compact.push_back(c);
  }
  if (compact.size() % 4 != 0) return std::nullopt;
  std::size_t padding = 0;
  if (!compact.empty() && compact.back() == '=') ++padding;
  if (compact.size() >= 2 && compact[compact.size() - 2] == '=') ++padding;

  std::string out;
  out.reserve(compact.size() / 4 * 3);
  for (std::size_t i = 0; i < compact.size(); i += 4) {
    const bool last_group = i + 4 == compact.size();
    std::uint32_t group = 0;
    for (std::size_t j = 0; j < 4; ++j) {
      const char c = compact[i + j];
      std::int8_t value = 0;
      if (c == '=') {
        // '=' only as trailing padding of the last group.
        if (!last_group || j < 4 - padding) return std::nullopt;
      } else {
        value = kDecodeTable[static_cast<unsigned char>(c)];
        if (value < 0) return std::nullopt;
      }
      group = (group << 6) | static_cast<std::uint32_t>(value);
    }
    out.push_back(static_cast<char>((group >> 16) & 0xff));
    if (!(last_group && padding >= 2)) out.push_back(static_cast<char>((group >> 8) & 0xff));
    if (!(last_group && padding >= 1)) out.push_back(static_cast<char>(group & 0xff));
  }
  return out;
}

}  // namespace gpushare::apiclient::detail
