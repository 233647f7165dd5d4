#include "gpushare/core/score_cache.h"

#include <algorithm>

namespace gpushare::core {
namespace {

bool same_demand(const PodDemand& a, const PodDemand& b) {
  return a.per_gpu == b.per_gpu && a.gpu_count == b.gpu_count && a.cpu_milli == b.cpu_milli &&
         a.memory == b.memory && a.allowed_models == b.allowed_models;
}

}  // namespace

ScoreCache::ScoreCache(std::size_t max_demands)
    : max_demands_(std::max<std::size_t>(1, max_demands)) {}

bool ScoreCache::begin(const PodDemand& demand, std::uint64_t policy_version,
                       std::size_t positions) {
  ++clock_;
  if (policy_version != policy_version_) {
    tables_.clear();  // every score may have moved
    policy_version_ = policy_version;
  }
  for (Table& table : tables_) {
    if (!same_demand(table.demand, demand)) continue;
    table.last_used = clock_;
    // Positions beyond the last request's are new; those that vanished are never looked up.
    table.entries.resize(positions);
    active_ = &table.entries;
    active_holds_bounds_ = &table.holds_bounds;
    return true;
  }
  Table* table = nullptr;
  if (tables_.size() < max_demands_) {
    table = &tables_.emplace_back();
  } else {
    table = &*std::min_element(tables_.begin(), tables_.end(), [](const Table& a, const Table& b) {
      return a.last_used < b.last_used;
    });
  }
  table->demand = demand;
  table->last_used = clock_;
  table->entries.assign(positions, Entry{});
  table->holds_bounds = false;
  active_ = &table->entries;
  active_holds_bounds_ = &table->holds_bounds;
  return false;
}

}  // namespace gpushare::core
