// The allocation reserve (process_resources.h): when an allocation fails, the reserve is given
// back before std::bad_alloc is thrown, so that what unwinds (nlohmann's destructors allocate,
// noexcept) can still allocate; the failed allocation itself still fails.

#include <gtest/gtest.h>

#include <new>

#include "gpushare/http/process_resources.h"

namespace gpushare::http {
namespace {

TEST(AllocationReserve, AFailedAllocationGivesTheReserveBackAndStillFails) {
  const std::new_handler previous = std::get_new_handler();
  install_allocation_reserve(1 << 20);
  EXPECT_TRUE(allocation_reserve_held());
  // What operator new calls when malloc fails.
  const std::new_handler on_failure = std::get_new_handler();
  ASSERT_NE(on_failure, nullptr);
  EXPECT_THROW(on_failure(), std::bad_alloc);
  EXPECT_FALSE(allocation_reserve_held());
  EXPECT_THROW(on_failure(), std::bad_alloc);  // nothing left to give: fails as before
  rearm_allocation_reserve();
  EXPECT_TRUE(allocation_reserve_held());
  std::set_new_handler(previous);
}

}  // namespace
}  // namespace gpushare::http
