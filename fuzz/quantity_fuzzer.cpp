// Kubernetes quantities: Quantity::parse and parse_whole_units. Rejection is QuantityError;
// accepted values are non-negative, and whole-unit parsing agrees with Quantity::parse.

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <optional>
#include <string>
#include <string_view>

#include "gpushare/core/quantity.h"

using gpushare::core::Quantity;
using gpushare::core::QuantityError;

namespace {

[[noreturn]] void finding(const char* what, std::string_view text) {
  std::fprintf(stderr, "FINDING: %s for \"%.*s\"\n", what, static_cast<int>(text.size()),
               text.data());
  std::abort();
}

std::optional<Quantity> reparse(const std::string& text) {
  try {
    return Quantity::parse(text);
  } catch (const QuantityError&) {
    return std::nullopt;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  std::optional<Quantity> quantity;
  try {
    quantity = Quantity::parse(text);
  } catch (const QuantityError&) {
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", e.what());
    finding("Quantity::parse threw something other than QuantityError", text);
  }
  if (quantity) {
    if (quantity->milli() < 0) finding("negative quantity accepted", text);
    // Re-encoding the value (as milli-units, and as whole units when whole) parses back to it:
    // the parser's scaling and rounding are consistent with its own plain forms.
    const std::string as_milli = std::to_string(quantity->milli()) + "m";
    if (reparse(as_milli) != *quantity) finding("re-encoded milli value parses differently", text);
    if (quantity->is_whole() && reparse(std::to_string(quantity->milli() / 1000)) != *quantity) {
      finding("re-encoded whole value parses differently", text);
    }
  }
  std::optional<std::int64_t> units;
  try {
    units = gpushare::core::parse_whole_units(text);
  } catch (const QuantityError&) {
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", e.what());
    finding("parse_whole_units threw something other than QuantityError", text);
  }
  if (units) {
    if (!quantity) finding("parse_whole_units accepted what Quantity::parse rejects", text);
    if (!quantity->is_whole() || quantity->milli() / 1000 != *units)
      finding("whole units disagree with Quantity::parse", text);
  }
  return 0;
}
