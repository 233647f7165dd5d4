#include "gpushare/sync/leader_metrics.h"

#include "gpushare/apiclient/lease_elector.h"

namespace gpushare::sync {

LeaderElectionState leader_election_state(const apiclient::LeaderElector& elector) {
  const apiclient::LeaderElector::Counters counters = elector.counters();
  return {elector.is_leader(), counters.acquisitions, counters.lost, counters.failed_attempts};
}

metrics::ScrapeCollector leader_election_collector(std::function<LeaderElectionState()> state) {
  return [state = std::move(state)](std::vector<prometheus::MetricFamily>& out) {
    const LeaderElectionState election = state();
    using prometheus::MetricType;
    metrics::ScrapeFamilies f(out);
    // Counters the elector keeps; prometheus::Counter cannot be set, so they are copied per
    // scrape.
    f.family("gpushare_leader", MetricType::Gauge,
             "1 while this replica holds the leader-election Lease.")
        .sample(election.leader ? 1 : 0);
    f.family("gpushare_leader_acquisitions_total", MetricType::Counter,
             "Times this replica became the leader.")
        .sample(static_cast<double>(election.acquisitions));
    f.family("gpushare_leader_lost_total", MetricType::Counter,
             "Times this replica stopped leading because no renewal succeeded within the renew "
             "deadline.")
        .sample(static_cast<double>(election.lost));
    f.family("gpushare_leader_failed_attempts_total", MetricType::Counter,
             "Lease acquire or renew attempts that did not succeed (held by another replica, "
             "conflicts, API errors).")
        .sample(static_cast<double>(election.failed_attempts));
  };
}

}  // namespace gpushare::sync
