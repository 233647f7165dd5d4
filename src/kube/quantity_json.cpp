#include "gpushare/kube/quantity_json.h"

#include <cstdint>
#include <limits>

#include <fmt/format.h>

namespace gpushare::kube {

core::Quantity quantity_of(const Json& value, std::string_view what) {
  constexpr std::int64_t kMaxUnits = std::numeric_limits<std::int64_t>::max() / 1000;
  try {
    if (value.is_string()) return core::Quantity::parse(value.get_ref<const std::string&>());
    if (value.is_number_unsigned()) {
      if (value.get<std::uint64_t>() > static_cast<std::uint64_t>(kMaxUnits)) {
        throw core::QuantityError("out of range");
      }
      return core::Quantity::from_units(value.get<std::int64_t>());
    }
    if (value.is_number_integer()) {
      const auto units = value.get<std::int64_t>();
      if (units < 0) throw core::QuantityError("negative quantities are not allowed here");
      if (units > kMaxUnits) throw core::QuantityError("out of range");
      return core::Quantity::from_units(units);
    }
  } catch (const core::QuantityError& e) {
    throw BadInput(fmt::format("{}: {}", what, e.what()));
  }
  throw BadInput(fmt::format("{} must be a quantity string, got {}", what, value.type_name()));
}

}  // namespace gpushare::kube
