#include "gpushare/sync/leader_binder.h"

#include <fmt/format.h>

#include <algorithm>

namespace gpushare::sync {

LeaderBinder::LeaderBinder(ApiPodBinder& inner, const LeaderGate& gate,
                           std::chrono::milliseconds bind_timeout)
    : inner_(inner), gate_(gate), bind_timeout_(bind_timeout) {}

service::BindOutcome LeaderBinder::bind(const kube::PodInfo& pod, std::string_view node,
                                        const std::map<std::string, std::string>& annotations) {
  std::string reason = gate_.not_ready_reason();
  std::optional<std::chrono::milliseconds> budget;
  if (reason.empty()) {
    budget = gate_.bind_budget();
    if (!budget) reason = "the leader's lease is about to expire";
  }
  if (!reason.empty()) {
    ++refused_;
    return {
        false,
        fmt::format("this gpushare-extender replica does not bind: {}; kube-scheduler will retry",
                    reason),
        false};
  }
  return inner_.bind_within(pod, node, annotations, std::min(bind_timeout_, *budget));
}

}  // namespace gpushare::sync
