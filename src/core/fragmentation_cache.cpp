#include "gpushare/core/fragmentation_cache.h"

namespace gpushare::core {

void FragmentationCache::begin(std::uint64_t reading_version, std::size_t positions) {
  if (reading_version != reading_version_) {
    entries_.assign(entries_.size(), Entry{});  // the target may have moved: every F with it
    reading_version_ = reading_version;
  }
  // Positions beyond the last request's are new; those that vanished are never looked up.
  entries_.resize(positions);
}

std::uint64_t FragmentationSums::hash(const Key& key) {
  // Independent products (no chain through the words), then the splitmix64 finaliser.
  constexpr std::array<std::uint64_t, 4> kOdd = {0x9e3779b97f4a7c15ULL, 0xbf58476d1ce4e5b9ULL,
                                                 0x94d049bb133111ebULL, 0xd6e8feb86659fd93ULL};
  std::uint64_t h = 0;
  std::size_t k = 0;
  for (const std::uint64_t word : key.excluded) {
    h ^= (word + k) * kOdd[k % kOdd.size()];
    ++k;
  }
  for (std::size_t i = 0; i < kMaxValues; i += 2, ++k) {
    const std::uint64_t pair =
        static_cast<std::uint32_t>(key.value[i]) |
        static_cast<std::uint64_t>(static_cast<std::uint32_t>(key.value[i + 1])) << 32;
    h ^= (pair + k) * kOdd[k % kOdd.size()];
    h = (h << 7) | (h >> 57);
  }
  h ^= h >> 30;
  h *= 0xbf58476d1ce4e5b9ULL;
  h ^= h >> 27;
  h *= 0x94d049bb133111ebULL;
  return h ^ (h >> 31);
}

void FragmentationSums::clear() {
  if (++epoch_ == 0) {  // wrapped: no slot may look current
    slots_.assign(slots_.size(), Slot{});
    epoch_ = 1;
  }
  used_ = 0;
}

void FragmentationSums::begin(std::uint64_t reading_version) {
  if (slots_.empty()) slots_.resize(kSlots);
  if (!started_ || reading_version != reading_version_) {
    clear();  // the target may have moved: every F with it
    reading_version_ = reading_version;
    started_ = true;
  }
}

const double* FragmentationSums::find(const Key& key, std::uint64_t hash) const {
  const std::size_t mask = slots_.size() - 1;
  for (std::size_t i = hash & mask;; i = (i + 1) & mask) {
    const Slot& slot = slots_[i];
    if (slot.epoch != epoch_) return nullptr;
    if (slot.hash == hash && slot.key == key) return &slot.sum;
  }
}

void FragmentationSums::remember(const Key& key, std::uint64_t hash, double sum) {
  // At most half full, so probes stay short and always end at a free slot.
  if (2 * (used_ + 1) > slots_.size()) clear();
  const std::size_t mask = slots_.size() - 1;
  std::size_t i = hash & mask;
  while (slots_[i].epoch == epoch_) {
    if (slots_[i].hash == hash && slots_[i].key == key) return;
    i = (i + 1) & mask;
  }
  slots_[i] = {hash, epoch_, sum, key};
  ++used_;
}

}  // namespace gpushare::core
