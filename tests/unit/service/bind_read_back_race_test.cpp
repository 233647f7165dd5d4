// A bind call without an answer is settled by reading the pod back. The sync's reservation check
// may read it back too, at the same moment (the reservation is due at once) and settle it first:
// the bind must then judge by the model, not report "may still land" (otherwise
// Bind.ABindWithoutAnAnswerThatLandedIsReadBackAndReportedBound fails when the two race).

#include <gtest/gtest.h>

#include <functional>
#include <optional>

#include "gpushare/core/placement_policy.h"
#include "gpushare/core/policy_registry.h"
#include "gpushare/metrics/metric_registry.h"
#include "gpushare/service/model_store.h"
#include "gpushare/service/read_back.h"
#include "gpushare/service/rejection_log.h"
#include "gpushare/service/scheduling_service.h"

namespace gpushare::testing {
namespace {

kube::PodInfo pending_pod() {
  kube::PodInfo pod;
  pod.uid = "uid-p";
  pod.namespace_name = "default";
  pod.name = "p";
  pod.phase = "Pending";
  pod.request = 6;
  return pod;
}

// Times out every bind; its read-back lets the "sync" settle the reservation first, with what
// `truth` says, and then answers the same.
class RacedBinder final : public service::PodBinder {
 public:
  RacedBinder(service::ModelStore& store, std::function<kube::PodInfo()> truth)
      : store_(store), truth_(std::move(truth)) {}

  std::optional<kube::PodInfo> find_pod(std::string_view, std::string_view) override {
    return pending_pod();
  }
  service::BindOutcome bind(const kube::PodInfo&, std::string_view,
                            const std::map<std::string, std::string>& annotations) override {
    annotations_ = annotations;
    ++bind_calls_;
    return {false, "transport error (timeout)", true};
  }
  bool confirms_asynchronously() const override { return true; }
  ReadBack read_back(std::string_view, std::string_view) override {
    const ReadBack read{ReadBack::Result::kFound, truth_(), {}};
    store_.write(
        [&](core::ClusterModel& model, core::PlacementPolicy&, core::ReservationLedger& ledger) {
          const core::Reservation* held = ledger.find("uid-p");
          ASSERT_NE(held, nullptr);
          // As if sent the moment the last call was: within its landing window, unless that is 0.
          settled_by_sync_ =
              service::apply_read_back(model, ledger, read, "uid-p", held->reserved_ns,
                                       held->unanswered_call_ns, held->unanswered_call_ns)
                  .outcome;
        });
    return read;
  }

  std::map<std::string, std::string> annotations_;
  int bind_calls_ = 0;
  core::ReservationOutcome settled_by_sync_ = core::ReservationOutcome::kNone;

 private:
  service::ModelStore& store_;
  std::function<kube::PodInfo()> truth_;
};

class BindReadBackRace : public ::testing::Test {
 protected:
  BindReadBackRace() : store_(core::make_policy("binpack")) {
    store_.write([](core::ClusterModel& model, core::PlacementPolicy&) {
      core::NodeSpec spec;
      spec.name = "n1";
      spec.gpu_count = 2;
      spec.memory_per_gpu = 16;
      model.upsert_node(std::move(spec));
    });
  }
  core::Units used() {
    return store_.read([](const core::ClusterModel& model, const core::PlacementPolicy&) {
      return model.total_used();
    });
  }
  service::BindReply bind(service::PodBinder& binder) {
    service::SchedulingService service(store_, binder, metrics_, rejections_,
                                       service::ServiceConfig{});
    return service.bind({"p", "default", "uid-p", "n1"});
  }

  service::ModelStore store_;
  metrics::MetricRegistry metrics_;
  service::RejectionLog rejections_;
};

TEST_F(BindReadBackRace, ConfirmedByTheSyncFirstIsReportedBound) {
  RacedBinder* self = nullptr;
  RacedBinder binder(store_, [&self] {
    kube::PodInfo pod = pending_pod();
    pod.node_name = "n1";
    pod.phase = "Running";
    pod.gpu_index = std::stoi(self->annotations_.at("ALIYUN_COM_GPU_MEM_IDX"));
    pod.annotated_request = 6;
    return pod;
  });
  self = &binder;
  const service::BindReply reply = bind(binder);
  EXPECT_EQ(binder.settled_by_sync_, core::ReservationOutcome::kConfirmed);
  EXPECT_EQ(reply.error, "");
  EXPECT_EQ(reply.outcome, "success");
  EXPECT_EQ(reply.gpu, std::stoi(binder.annotations_.at("ALIYUN_COM_GPU_MEM_IDX")));
  EXPECT_EQ(used(), 6);  // held once
}

TEST_F(BindReadBackRace, ReleasedByTheSyncFirstIsReportedNotBound) {
  core::LedgerTiming no_landing_window;
  no_landing_window.landing_window_ns = 0;  // as if the unanswered calls could no longer land
  store_.set_ledger_timing(no_landing_window);
  RacedBinder binder(store_, [] { return pending_pod(); });
  const service::BindReply reply = bind(binder);
  EXPECT_EQ(binder.settled_by_sync_, core::ReservationOutcome::kReleased);
  EXPECT_NE(reply.error.find("not bound"), std::string::npos) << reply.error;
  EXPECT_EQ(used(), 0);
}

// Both calls (the bind and the binding sent again) had no answer, and the pod reads back
// unbound: either call may still be applied, so the memory stays held and the reply says so.
TEST_F(BindReadBackRace, PendingWithinTheLandingWindowIsHeldAndReportedUnknown) {
  RacedBinder binder(store_, [] { return pending_pod(); });
  const service::BindReply reply = bind(binder);
  EXPECT_EQ(binder.bind_calls_, 2);
  EXPECT_EQ(binder.settled_by_sync_, core::ReservationOutcome::kKept);
  EXPECT_EQ(reply.outcome, "api_unknown");
  EXPECT_NE(reply.error.find("sent again"), std::string::npos) << reply.error;
  EXPECT_EQ(used(), 6);
  const bool unresolved = store_.read([](const core::ClusterModel&, const core::PlacementPolicy&,
                                         const core::ReservationLedger& ledger) {
    const core::Reservation* held = ledger.find("uid-p");
    return held != nullptr && held->state == core::ReservationState::kUnresolved;
  });
  EXPECT_TRUE(unresolved);
}

}  // namespace
}  // namespace gpushare::testing
