#include "gpushare/kube/quantity_json.h"

#include <fmt/format.h>

#include <cstdint>
#include <limits>

#include "gpushare/kube/json_fields.h"

namespace gpushare::kube {
namespace {

constexpr std::int64_t kMaxUnits = std::numeric_limits<std::int64_t>::max() / 1000;

// A quantity written as a JSON integer, in whole units: never negative, and within int64
// milli-units (a uint64 beyond int64 is out of range too).
template <typename FromText, typename FromUnits>
auto read_quantity(const json::Value& value, std::string_view what, FromText from_text,
                   FromUnits from_units) {
  try {
    switch (value.type()) {
      case simdjson::dom::element_type::STRING:
        return from_text(value.get_string().value_unsafe());
      case simdjson::dom::element_type::UINT64:
        throw core::QuantityError("out of range");
      case simdjson::dom::element_type::INT64: {
        const std::int64_t units = value.get_int64().value_unsafe();
        if (units < 0) throw core::QuantityError("negative quantities are not allowed here");
        if (units > kMaxUnits) throw core::QuantityError("out of range");
        return from_units(units);
      }
      default:
        break;
    }
  } catch (const core::QuantityError& e) {
    throw BadInput(fmt::format("{}: {}", what, e.what()));
  }
  throw BadInput(fmt::format("{} must be a quantity string, got {}", what, json::type_name(value)));
}

}  // namespace

core::Quantity quantity_of(const simdjson::dom::element& value, std::string_view what) {
  return read_quantity(
      value, what, [](std::string_view text) { return core::Quantity::parse(text); },
      [](std::int64_t units) { return core::Quantity::from_units(units); });
}

core::Units whole_units_of(const simdjson::dom::element& value, std::string_view what) {
  return read_quantity(
      value, what, [](std::string_view text) { return core::parse_whole_units(text); },
      [](std::int64_t units) { return static_cast<core::Units>(units); });
}

}  // namespace gpushare::kube
