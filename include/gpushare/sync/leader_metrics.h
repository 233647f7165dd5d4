#pragma once
// --leader-elect's metrics, built at scrape time from the elector's own counts (the series are
// absent without --leader-elect).

#include <cstdint>
#include <functional>

#include "gpushare/metrics/metric_registry.h"

namespace gpushare::apiclient {
class LeaderElector;
}

namespace gpushare::sync {

struct LeaderElectionState {
  bool leader = false;                // holds the Lease now
  std::uint64_t acquisitions = 0;     // times this replica became leader
  std::uint64_t lost = 0;             // step-downs: no renewal succeeded within the renew deadline
  std::uint64_t failed_attempts = 0;  // acquire or renew attempts that did not succeed
};

LeaderElectionState leader_election_state(const apiclient::LeaderElector& elector);

// gpushare_leader and the gpushare_leader_*_total counters, from `state` on every scrape.
metrics::ScrapeCollector leader_election_collector(std::function<LeaderElectionState()> state);

}  // namespace gpushare::sync
