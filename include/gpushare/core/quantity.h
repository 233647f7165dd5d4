#pragma once
// Kubernetes resource quantities ("1k", "500m", "1.5Gi", "1e3") parsed exactly.

#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>

namespace gpushare::core {

class QuantityError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

// A parsed quantity, held in thousandths of a unit so "100m" CPU and "1Ki" memory are both exact.
class Quantity {
 public:
  constexpr Quantity() = default;

  // Throws QuantityError on syntax errors, negative values and values beyond int64 milli-units.
  static Quantity parse(std::string_view text);
  static constexpr Quantity from_units(std::int64_t units) { return Quantity(units * 1000); }

  constexpr std::int64_t milli() const { return milli_; }
  // Whole units, rounded up as Kubernetes' Quantity.Value() does.
  constexpr std::int64_t units_ceil() const { return (milli_ + 999) / 1000; }
  constexpr bool is_whole() const { return milli_ % 1000 == 0; }

  friend constexpr bool operator==(Quantity, Quantity) = default;
  friend constexpr auto operator<=>(Quantity, Quantity) = default;

 private:
  constexpr explicit Quantity(std::int64_t milli) : milli_(milli) {}
  std::int64_t milli_ = 0;
};

// Parses a quantity that must be a whole, non-negative number of units (GPU memory, GPU count).
std::int64_t parse_whole_units(std::string_view text);

}  // namespace gpushare::core
