#pragma once
// The extender's verbs on typed arguments: filter, prioritize, bind, preempt. No HTTP here;
// http_server.cpp decodes requests, calls these and encodes replies.

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "gpushare/core/score_mapping.h"
#include "gpushare/core/scorer.h"
#include "gpushare/kube/resource_names.h"
#include "gpushare/logging/log_throttle.h"
#include "gpushare/metrics/scheduling_metrics.h"
#include "gpushare/service/model_store.h"
#include "gpushare/service/pin_warnings.h"
#include "gpushare/service/pod_binder.h"
#include "gpushare/service/rejection_log.h"
#include "gpushare/wire/wire_types.h"

namespace gpushare::service {

struct ServiceConfig {
  kube::ResourceNames names;
  // How prioritize maps the policy's raw scores onto 0..10 (--score-mapping).
  core::ScoreMapping score_mapping = core::ScoreMapping::kMinMax;
  // Wall clock in Unix nanoseconds (ASSUME_TIME annotation); injectable for tests.
  std::function<std::int64_t()> now_ns = [] {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
  };
};

struct BindReply {
  std::string error;    // empty on success
  int gpu = -1;         // chosen GPU, -1 if none
  std::string outcome;  // metrics label
};

class SchedulingService {
 public:
  // The service counts into `metrics` (scheduling_metrics.h).
  SchedulingService(ModelStore& store, PodBinder& binder, metrics::MetricRegistry& metrics,
                    RejectionLog& rejections, ServiceConfig config);

  wire::FilterResult filter(const wire::ExtenderArgs& args);
  // The same, moving the offered node names into the result rather than copying them (the
  // HTTP path, where the decoded arguments are not needed afterwards).
  wire::FilterResult filter(wire::ExtenderArgs&& args);
  // The offered nodes scored 0..10 (core/score_mapping.h), in offered order; unknown names
  // past the budget below are left out.
  wire::HostPriorityList prioritize(const wire::ExtenderArgs& args) const;
  // The same, moving the offered node names into the reply rather than copying them (the HTTP
  // path, where the decoded arguments are not needed afterwards).
  wire::HostPriorityList prioritize(wire::ExtenderArgs&& args) const;
  // Offered names that are no node of the model cost a reply entry each (with the reason, in
  // both of filter's maps), and a body of 1 MB holds 150 000 of them: a reply lists at most
  // this many (filter as FailedAndUnresolvableNodes and FailedNodes, prioritize with score 0),
  // in offered order, and leaves the rest out, counting them in
  // gpushare_filter_rejections_total{reason="unknown_node"} and a throttled warning.
  // kube-scheduler treats a node the extender neither passes nor lists as infeasible, and gives
  // a host missing from prioritize's list no score from the extender, as one listed with 0.
  static constexpr std::size_t kMaxUnknownNodesListed = 1024;
  BindReply bind(const wire::BindingArgs& args);
  std::map<std::string, wire::MetaVictims> preempt(const wire::PreemptionArgs& args) const;

  const ServiceConfig& config() const { return config_; }

 private:
  // `movable` is &args when the caller gave the arguments up (its names may then be moved).
  wire::FilterResult filter_impl(const wire::ExtenderArgs& args, wire::ExtenderArgs* movable);
  wire::HostPriorityList prioritize_impl(const wire::ExtenderArgs& args,
                                         wire::ExtenderArgs* movable) const;

  // bind's steps, in order. A refusal is answered by fail_bind (logged, throttled, counted).
  struct BindRefusal {
    std::string outcome;  // metrics label
    std::string error;
  };
  struct GpuReservation {
    int gpu = -1;
    core::Units device_memory = 0;
    std::optional<BindRefusal> refusal;
  };
  struct BindCall {
    BindOutcome outcome;
    std::int64_t unanswered_call_ns;  // when the last call that had no answer was sent
  };
  BindReply fail_bind(const std::string& key, const wire::BindingArgs& args, BindRefusal refusal);
  std::optional<BindRefusal> check_unbound(const wire::BindingArgs& args, const kube::PodInfo& pod,
                                           const std::string& key) const;
  void settle_unresolved(const kube::PodInfo& pod);
  GpuReservation reserve_gpu(const wire::BindingArgs& args, const kube::PodInfo& pod,
                             const std::string& key, core::PodDemand& demand,
                             std::int64_t assume_time);
  BindCall call_binder(const kube::PodInfo& pod, const wire::BindingArgs& args,
                       const std::string& key,
                       const std::map<std::string, std::string>& annotations, bool wants_gpu,
                       std::int64_t assume_time);
  std::optional<BindReply> settle_unanswered(const wire::BindingArgs& args,
                                             const kube::PodInfo& pod, const std::string& key,
                                             const BindCall& call, std::int64_t assume_time);

  // Reads the pod back and settles its reservation made with `token` on what the API server says.
  core::ReservationOutcome settle_by_read_back(std::string_view namespace_name,
                                               std::string_view name, std::string_view uid,
                                               std::int64_t token);

  ModelStore& store_;
  PodBinder& binder_;
  metrics::SchedulingMetrics metrics_;
  RejectionLog& rejections_;
  ServiceConfig config_;
  // Prioritize's raw scores and the caches behind them (core/scorer.h: thread-safe, used under
  // the store's shared lock; it keeps state between requests, hence mutable).
  mutable core::Scorer scorer_;
  // Logs, throttled, that `unknown` names offered to `verb` were more than the reply lists.
  void note_unlisted(std::string_view verb, const kube::PodInfo& pod, std::size_t unknown) const;
  // Anyone who can send filter or prioritize can name nodes that do not exist, as many as the
  // body holds.
  mutable logging::LogThrottle unknown_nodes_log_{5, std::chrono::seconds(10)};
  // Prioritize's lines for a DRA claim (or template) of the pod that is not in the model: any
  // pod can name one.
  mutable logging::LogThrottle unresolved_claims_log_{5, std::chrono::seconds(10)};
  // Anyone who can reach /bind can make binds fail at will: their lines are throttled (every
  // failure is still counted in gpushare_binds_total).
  logging::LogThrottle bind_failure_log_{10, std::chrono::seconds(10)};
  // Pods filtered with a pin no GPU node satisfies (standalone mode, where the cluster file is
  // not kube-scheduler's cluster); live mode's sync warns about those it watches.
  UnmatchedPinWarnings unmatched_pins_;
};

}  // namespace gpushare::service
