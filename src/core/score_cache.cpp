#include "gpushare/core/score_cache.h"

namespace gpushare::core {
namespace {

bool same_demand(const PodDemand& a, const PodDemand& b) {
  return a.per_gpu == b.per_gpu && a.gpu_count == b.gpu_count && a.cpu_milli == b.cpu_milli &&
         a.memory == b.memory && a.allowed_models == b.allowed_models;
}

}  // namespace

void ScoreCache::begin(const PodDemand& demand, std::uint64_t policy_version,
                       std::size_t positions) {
  if (!demand_ || !same_demand(*demand_, demand) || policy_version_ != policy_version) {
    entries_.assign(positions, Entry{});
    demand_ = demand;
    policy_version_ = policy_version;
    return;
  }
  // Positions beyond the last request's are new; those that vanished are never looked up.
  entries_.resize(positions);
}

}  // namespace gpushare::core
