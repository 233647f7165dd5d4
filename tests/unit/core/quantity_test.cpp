#include "gpushare/core/quantity.h"

#include <gtest/gtest.h>

namespace gpushare::core {
namespace {

TEST(Quantity, PlainIntegers) {
  EXPECT_EQ(Quantity::parse("0").milli(), 0);
  EXPECT_EQ(Quantity::parse("8").units_ceil(), 8);
  EXPECT_EQ(Quantity::parse("+8").units_ceil(), 8);
  EXPECT_EQ(Quantity::parse("1000").units_ceil(), 1000);
}

TEST(Quantity, DecimalSuffixes) {
  EXPECT_EQ(Quantity::parse("1k").units_ceil(), 1000);  // a real API server returns 1000 as "1k"
  EXPECT_EQ(Quantity::parse("2M").units_ceil(), 2'000'000);
  EXPECT_EQ(Quantity::parse("3G").units_ceil(), 3'000'000'000);
  EXPECT_EQ(Quantity::parse("1T").units_ceil(), 1'000'000'000'000);
  EXPECT_EQ(Quantity::parse("1P").units_ceil(), 1'000'000'000'000'000);
  EXPECT_EQ(Quantity::parse("500m").milli(), 500);
  EXPECT_EQ(Quantity::parse("1500m").units_ceil(), 2);  // rounds up like Quantity.Value()
}

TEST(Quantity, BinarySuffixes) {
  EXPECT_EQ(Quantity::parse("1Ki").units_ceil(), 1024);
  EXPECT_EQ(Quantity::parse("1Mi").units_ceil(), 1024 * 1024);
  EXPECT_EQ(Quantity::parse("1Gi").units_ceil(), 1024LL * 1024 * 1024);
  EXPECT_EQ(Quantity::parse("2Ti").units_ceil(), 2LL << 40);
  EXPECT_EQ(Quantity::parse("1Pi").units_ceil(), 1LL << 50);
  EXPECT_EQ(Quantity::parse("1.5Gi").units_ceil(), 1610612736);
}

TEST(Quantity, Exponents) {
  EXPECT_EQ(Quantity::parse("1e3").units_ceil(), 1000);
  EXPECT_EQ(Quantity::parse("1E3").units_ceil(), 1000);
  EXPECT_EQ(Quantity::parse("5e-1").milli(), 500);
  EXPECT_EQ(Quantity::parse("0.001E").units_ceil(), 1'000'000'000'000'000);  // exa suffix
  EXPECT_THROW(Quantity::parse("1E"), QuantityError);  // 1e18 units exceeds int64 milli-units
  EXPECT_EQ(Quantity::parse("12e+2").units_ceil(), 1200);
}

// Kubernetes accepts any exponent; tiny values round up to the smallest unit (ours is the
// milli-unit) and zero stays zero, however large the exponent.
TEST(Quantity, ExtremeExponents) {
  EXPECT_EQ(Quantity::parse("1e-40").milli(), 1);
  EXPECT_EQ(Quantity::parse("5e-4").milli(), 1);
  EXPECT_EQ(Quantity::parse("1e-3").milli(), 1);
  EXPECT_EQ(Quantity::parse("2e-3").milli(), 2);
  EXPECT_EQ(Quantity::parse("123456789e-99999999999").milli(), 1);
  EXPECT_EQ(Quantity::parse("0e999").milli(), 0);
  EXPECT_EQ(Quantity::parse("0.0e-999").milli(), 0);
  EXPECT_FALSE(Quantity::parse("1e-40").is_whole());
  EXPECT_EQ(Quantity::parse("0.000000000000000000000000000001e40").units_ceil(), 10'000'000'000);
  EXPECT_EQ(Quantity::parse("1.5e1").milli(), 15'000);
  EXPECT_THROW(Quantity::parse("1e41"), QuantityError);
  EXPECT_THROW(Quantity::parse("1e99999999999"), QuantityError);
}

TEST(Quantity, Fractions) {
  EXPECT_EQ(Quantity::parse("0.5").milli(), 500);
  EXPECT_EQ(Quantity::parse(".5").milli(), 500);
  EXPECT_EQ(Quantity::parse("1.").milli(), 1000);
  EXPECT_EQ(Quantity::parse("0.0001").milli(), 1);  // rounds up to the smallest unit
  EXPECT_TRUE(Quantity::parse("2.0").is_whole());
  EXPECT_FALSE(Quantity::parse("2.5").is_whole());
}

TEST(Quantity, RejectsGarbage) {
  for (const char* bad : {"", "abc", "1x", "1KiB", "1.2.3", "--1", "1e", "1e-", "e3", "1 ", " 1",
                          "1ki", "0x10", "1e999", ".", "-"}) {
    EXPECT_THROW(Quantity::parse(bad), QuantityError) << bad;
  }
}

TEST(Quantity, RejectsNegativeAndOverflow) {
  EXPECT_THROW(Quantity::parse("-1"), QuantityError);
  EXPECT_THROW(Quantity::parse("-1Gi"), QuantityError);
  EXPECT_NO_THROW(Quantity::parse("-0"));
  EXPECT_THROW(Quantity::parse("99999999999999999999"), QuantityError);
  EXPECT_THROW(Quantity::parse("10E"), QuantityError);  // 1e19 units overflows int64 milli
  EXPECT_THROW(Quantity::parse("9Ei"), QuantityError);
  // "Ei" is a suffix, not an exponent: its error is the range, and small fractions of it fit.
  try {
    Quantity::parse("1Ei");
    ADD_FAILURE() << "1Ei parsed";
  } catch (const QuantityError& e) {
    EXPECT_NE(std::string(e.what()).find("out of range"), std::string::npos) << e.what();
  }
  EXPECT_EQ(Quantity::parse("0.001Ei").units_ceil(), 1152921504606847);  // 2^60 / 1000, rounded up
  EXPECT_EQ(Quantity::parse("0.001Ei").milli(), 1152921504606846976);
  EXPECT_NO_THROW(Quantity::parse("9P"));  // 9e18 milli-units: the largest that fits
  EXPECT_THROW(Quantity::parse("10P"), QuantityError);
}

TEST(Quantity, WholeUnits) {
  EXPECT_EQ(parse_whole_units("16"), 16);
  EXPECT_EQ(parse_whole_units("1k"), 1000);
  EXPECT_THROW(parse_whole_units("1.5"), QuantityError);
  EXPECT_THROW(parse_whole_units("500m"), QuantityError);
}

}  // namespace
}  // namespace gpushare::core
