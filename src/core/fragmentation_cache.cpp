#include "gpushare/core/fragmentation_cache.h"

namespace gpushare::core {

void FragmentationCache::begin(std::uint64_t reading_version, std::size_t positions) {
  if (reading_version != reading_version_) {
    entries_.assign(entries_.size(), Entry{});  // the target may have moved: every F with it
    reading_version_ = reading_version;
  }
  // Positions beyond the last request's are new; those that vanished are never looked up.
  entries_.resize(positions);
  exclusions_.begin();
}

}  // namespace gpushare::core
