#include "gpushare/kubesim/dra_allocator.h"

namespace gpushare::kubesim {

std::optional<std::vector<std::size_t>> dra_first_fit(std::span<const core::Units> free,
                                                      std::int64_t count, core::Units memory) {
  std::vector<std::size_t> taken;
  // The devices of one request are distinct: each device is tried once.
  for (std::size_t i = 0; i < free.size() && static_cast<std::int64_t>(taken.size()) < count; ++i) {
    if (free[i] >= memory) taken.push_back(i);
  }
  if (static_cast<std::int64_t>(taken.size()) < count) return std::nullopt;
  return taken;
}

}  // namespace gpushare::kubesim
