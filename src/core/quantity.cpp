#include "gpushare/core/quantity.h"

#include <algorithm>
#include <array>
#include <limits>

namespace gpushare::core {
namespace {

using Wide = __int128;
constexpr Wide kMaxMilli = std::numeric_limits<std::int64_t>::max();

struct Suffix {
  std::string_view text;
  int base;      // 2 or 10
  int exponent;  // power of base
};

// Longest suffixes first so "Ki" is not read as "K".
constexpr std::array<Suffix, 13> kSuffixes{{
    {"Ki", 2, 10},
    {"Mi", 2, 20},
    {"Gi", 2, 30},
    {"Ti", 2, 40},
    {"Pi", 2, 50},
    {"Ei", 2, 60},
    {"m", 10, -3},
    {"k", 10, 3},
    {"M", 10, 6},
    {"G", 10, 9},
    {"T", 10, 12},
    {"P", 10, 15},
    {"E", 10, 18},
}};

[[noreturn]] void fail(std::string_view text, std::string_view why) {
  throw QuantityError("invalid quantity \"" + std::string(text) + "\": " + std::string(why));
}

bool is_digit(char c) {
  return c >= '0' && c <= '9';
}

}  // namespace

Quantity Quantity::parse(std::string_view text) {
  if (text.empty()) fail(text, "empty");
  if (text.size() > 64) fail(text, "too long");
  std::size_t pos = 0;
  bool negative = false;
  if (text[pos] == '+' || text[pos] == '-') {
    negative = text[pos] == '-';
    ++pos;
  }
  // Mantissa: digits with an optional fraction, kept as integer + decimal scale.
  Wide mantissa = 0;
  int fraction_digits = 0;
  bool seen_digit = false;
  bool seen_point = false;
  for (; pos < text.size(); ++pos) {
    const char c = text[pos];
    if (is_digit(c)) {
      seen_digit = true;
      if (mantissa > kMaxMilli * 10) fail(text, "value out of range");
      mantissa = mantissa * 10 + (c - '0');
      if (seen_point && ++fraction_digits > 30) fail(text, "too many fraction digits");
    } else if (c == '.' && !seen_point) {
      seen_point = true;
    } else {
      break;
    }
  }
  if (!seen_digit) fail(text, "no digits");

  const std::string_view suffix = text.substr(pos);
  int base = 10;
  int exponent = 0;
  if (!suffix.empty()) {
    if ((suffix[0] == 'e' || suffix[0] == 'E') && suffix != "Ei") {
      // Decimal exponent, e.g. "1e3" or "5E-2". A bare "E" is the exa suffix, handled below;
      // "Ei" (exbi) is an ordinary suffix.
      std::size_t p = 1;
      bool exp_negative = false;
      if (p < suffix.size() && (suffix[p] == '+' || suffix[p] == '-')) {
        exp_negative = suffix[p] == '-';
        ++p;
      }
      if (p < suffix.size()) {
        int value = 0;
        for (; p < suffix.size(); ++p) {
          if (!is_digit(suffix[p])) fail(text, "bad exponent");
          // Kubernetes takes any number of exponent digits; past 10^6 the outcome no longer
          // changes (0, the smallest unit, or out of range), so saturate there.
          value = std::min(value * 10 + (suffix[p] - '0'), 1'000'000);
        }
        exponent = exp_negative ? -value : value;
      } else if (suffix != "E") {
        fail(text, "bad exponent");
      } else {
        exponent = 18;
      }
    } else {
      bool found = false;
      for (const auto& s : kSuffixes) {
        if (suffix == s.text) {
          base = s.base;
          exponent = s.exponent;
          found = true;
          break;
        }
      }
      if (!found) fail(text, "unknown suffix \"" + std::string(suffix) + "\"");
    }
  }
  if (negative && mantissa != 0) fail(text, "negative quantities are not allowed here");

  if (mantissa == 0) return Quantity(0);  // "0e999" is zero, as in Kubernetes

  // value_milli = mantissa * 1000 * base^exponent / 10^fraction_digits, rounded up like Kubernetes.
  if (base == 10) {
    // Cancel the fraction against a positive exponent first ("0.000001e9"), so that only the
    // value, not its spelling, can overflow.
    const int cancelled = std::clamp(exponent, 0, fraction_digits);
    exponent -= cancelled;
    fraction_digits -= cancelled;
  }
  Wide numerator = mantissa * 1000;
  Wide denominator = 1;
  for (int i = 0; i < fraction_digits; ++i) denominator *= 10;
  auto multiply = [&](Wide& target, int factor, int times) {
    for (int i = 0; i < times; ++i) {
      target *= factor;
      if (target > kMaxMilli * 1000000) fail(text, "value out of range");
    }
  };
  if (exponent >= 0) {
    multiply(numerator, base, exponent);
  } else {
    // Once the denominator reaches the numerator the value is at most one milli-unit, which
    // rounding up makes exactly one ("1e-40" is the smallest positive quantity, as in Kubernetes).
    for (int i = 0; i < -exponent && denominator < numerator; ++i) denominator *= base;
  }
  const Wide milli = (numerator + denominator - 1) / denominator;
  if (milli > kMaxMilli) fail(text, "value out of range");
  return Quantity(static_cast<std::int64_t>(milli));
}

std::int64_t parse_whole_units(std::string_view text) {
  const Quantity q = Quantity::parse(text);
  if (!q.is_whole()) {
    throw QuantityError("invalid quantity \"" + std::string(text) + "\": must be a whole number");
  }
  return q.milli() / 1000;
}

}  // namespace gpushare::core
