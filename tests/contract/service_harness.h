#pragma once
// A SchedulingService over its own store, for tests that filter and prioritize only: its
// binder knows no pod and binds none; the clock stands at 0.

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "gpushare/core/placement_policy.h"
#include "gpushare/core/score_mapping.h"
#include "gpushare/metrics/metric_registry.h"
#include "gpushare/service/model_store.h"
#include "gpushare/service/pod_binder.h"
#include "gpushare/service/rejection_log.h"
#include "gpushare/service/scheduling_service.h"

namespace gpushare::service {

class NoBinder final : public PodBinder {
 public:
  std::optional<kube::PodInfo> find_pod(std::string_view, std::string_view) override {
    return std::nullopt;
  }
  BindOutcome bind(const kube::PodInfo&, std::string_view,
                   const std::map<std::string, std::string>&) override {
    return {false, "not in this test", false};
  }
  bool confirms_asynchronously() const override { return false; }
};

struct ServiceHarness {
  explicit ServiceHarness(std::unique_ptr<core::PlacementPolicy> policy,
                          core::ScoreMapping mapping = core::ScoreMapping::kMinMax)
      : store(std::move(policy)) {
    ServiceConfig config;
    config.score_mapping = mapping;
    config.now_ns = [] { return std::int64_t{0}; };
    service = std::make_unique<SchedulingService>(store, binder, metrics, rejections, config);
  }
  ModelStore store;
  NoBinder binder;
  metrics::MetricRegistry metrics;
  RejectionLog rejections;
  std::unique_ptr<SchedulingService> service;
};

}  // namespace gpushare::service
