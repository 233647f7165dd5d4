// The pods reflector's kind: pods into the model through the reservation ledger, and into the
// pod directory bind looks pods up in.

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <functional>
#include <map>
#include <memory>
#include <string_view>
#include <unordered_set>
#include <utility>
#include <vector>

#include "gpushare/kube/claim_check.h"
#include "gpushare/kube/pod_dra_demand.h"
#include "gpushare/sync/cluster_sync.h"
#include "update_timer.h"
#include "watch_handler.h"

namespace gpushare::sync {

using apiclient::WatchEventType;

namespace {

// Applies what the API server says about one pod to the model, through the reservation
// ledger: a bound pod confirms our own reservation (or replaces it with what really happened),
// a pod the watch still shows pending keeps a reservation made by a bind in flight, a finished
// one leaves. A claim out of range adds a warning naming the pod to `warnings` (logged by the
// caller once the model's lock is released).
core::ReservationOutcome apply_pod(core::ClusterModel& model, core::ReservationLedger& ledger,
                                   const kube::PodInfo& pod, core::EvidenceSource source,
                                   std::vector<std::string>& warnings) {
  core::PodEvidence evidence = kube::evidence_of(pod);
  if (evidence.bound) {
    if (std::string warning = kube::claim_warning(model, pod, *evidence.bound); !warning.empty()) {
      warnings.push_back(std::move(warning));
    }
  } else if (model.find_pod(pod.uid) == nullptr) {
    return core::ReservationOutcome::kNone;  // nothing held, nothing to change
  }
  return ledger.observe(model, evidence, source);
}

std::string_view evidence_label(core::EvidenceSource source) {
  switch (source) {
    case core::EvidenceSource::kWatch:
      return "watch";
    case core::EvidenceSource::kList:
      return "list";
    case core::EvidenceSource::kReadBack:
      return "read_back";
  }
  return "unknown";
}

}  // namespace

std::unique_ptr<apiclient::ReflectorHandler> ClusterSync::make_pod_handler() {
  // The list in progress, by pod key, and items whose key came again.
  struct Staged {
    std::map<std::string, kube::PodInfo, std::less<>> pods;
    std::vector<kube::PodInfo> shadowed;
  };
  auto staged = std::make_shared<Staged>();
  WatchKind<kube::PodInfo> kind;
  kind.what = "pod object";
  kind.decode = [this](const json::Value& object) {
    kube::PodInfo pod = kube::decode_pod(object, options_.names);
    if (pod.uid.empty()) throw kube::BadInput(fmt::format("pod {} has no uid", pod.key()));
    return pod;
  };
  kind.unusable = [this] { ++parse_errors_; };
  kind.begin = [staged] {
    staged->pods.clear();
    staged->shadowed.clear();
  };
  // Items go straight into the next pods' directory, not through a staging vector: during a
  // relist the model and the directory in use are held as well, so the list is held once.
  kind.stage = [staged](kube::PodInfo pod) {
    std::string key = pod.key();
    // The API server never lists a name twice; if it did, the model would still get both.
    if (auto it = staged->pods.lower_bound(key); it != staged->pods.end() && it->first == key) {
      staged->shadowed.push_back(std::exchange(it->second, std::move(pod)));
    } else {
      staged->pods.emplace_hint(it, std::move(key), std::move(pod));
    }
  };
  // The list replaces the model's pods and the directory; a reservation whose pod the list
  // lacks is read back, not dropped (the list may be older than our bind).
  kind.replace = [this, staged](const std::string& rv) {
    std::map<std::string, kube::PodInfo, std::less<>> directory = std::move(staged->pods);
    std::vector<kube::PodInfo> shadowed = std::move(staged->shadowed);
    staged->pods.clear();
    staged->shadowed.clear();
    // Views into `directory` and `shadowed`, which outlive the set: hashed, since the model's
    // every pod is looked up in it under the model's write lock.
    std::unordered_set<std::string_view> listed;
    listed.reserve(directory.size() + shadowed.size());
    for (const auto& pod : shadowed) listed.insert(pod.uid);
    for (const auto& [key, pod] : directory) listed.insert(pod.uid);
    std::vector<std::string> warnings;
    std::vector<std::string> unmatched_pins;
    std::size_t confirmed = 0;
    const std::int64_t now = options_.now_ns();
    const UpdateTimer timer;
    store_.write(
        [&](core::ClusterModel& model, core::PlacementPolicy&, core::ReservationLedger& ledger) {
          auto apply = [&](const kube::PodInfo& pod) {
            if (apply_pod(model, ledger, pod, core::EvidenceSource::kList, warnings) ==
                core::ReservationOutcome::kConfirmed) {
              ++confirmed;
            }
          };
          for (const auto& pod : shadowed) apply(pod);  // earlier in the list than their namesakes
          for (const auto& [key, pod] : directory) apply(pod);
          // Pods the model holds that the API server does not list. A reservation is not dropped
          // for that: the list may be older than our bind. Its pod is read back instead.
          std::vector<std::string> vanished;
          for (const auto& [uid, allocation] : model.pods()) {
            if (listed.contains(uid)) continue;
            if (ledger.find(uid) != nullptr) {
              ledger.absent_from_list(uid, now);
            } else {
              vanished.push_back(uid);
            }
          }
          for (const auto& uid : vanished) model.remove_pod(uid);
          for (const auto& [key, pod] : directory) check_pin(pod, model, unmatched_pins);
        });
    const std::string updated = timer.done();
    for (std::size_t i = 0; i < confirmed; ++i) {
      reservation_metrics_.count_reservation_end(core::ReservationOutcome::kConfirmed, "list");
    }
    for (const auto& warning : warnings) spdlog::warn("{}", warning);
    for (const auto& warning : unmatched_pins) spdlog::warn("{}", warning);
    const std::size_t count = directory.size();
    {
      std::lock_guard lock(pods_mutex_);
      pods_.swap(directory);
    }
    spdlog::info("pods listed: {} at resourceVersion {} ({})", count, rv, updated);
  };
  kind.apply = [this](WatchEventType type, kube::PodInfo pod) {
    std::vector<std::string> warnings;
    const core::ReservationOutcome outcome = store_.write([&](core::ClusterModel& model,
                                                              core::PlacementPolicy& policy,
                                                              core::ReservationLedger& ledger) {
      if (type != WatchEventType::kDeleted) check_pin(pod, model, warnings);
      if (type == WatchEventType::kDeleted) {
        return ledger.observe(model, {core::PodEvidence::Kind::kGone, pod.uid, std::nullopt},
                              core::EvidenceSource::kWatch);
      }
      // A pod seen bound for the first time that this extender did not bind (kube's binder
      // placed it, CPU-only pods included): the policy learns the workload from it, as from
      // its own binds. Not from lists: a relist would count every pod again.
      const bool new_to_the_model = model.find_pod(pod.uid) == nullptr;
      const auto applied = apply_pod(model, ledger, pod, core::EvidenceSource::kWatch, warnings);
      if (new_to_the_model && model.find_pod(pod.uid) != nullptr) {
        policy.observe(kube::learned_demand(model, pod));
        policy.observe_cluster(model.nodes());
      }
      return applied;
    });
    reservation_metrics_.count_reservation_end(outcome,
                                               evidence_label(core::EvidenceSource::kWatch));
    if (outcome == core::ReservationOutcome::kReleased) {
      spdlog::info(
          "reservation of pod {} (uid {}) released: the pod was deleted or finished while being "
          "bound",
          pod.key(), pod.uid);
    }
    for (const auto& warning : warnings) spdlog::warn("{}", warning);
    std::lock_guard lock(pods_mutex_);
    if (type == WatchEventType::kDeleted) {
      // Only if it is the same pod: a new one may already have taken the name.
      if (auto it = pods_.find(pod.key()); it != pods_.end() && it->second.uid == pod.uid) {
        pods_.erase(it);
      }
    } else {
      pods_.insert_or_assign(pod.key(), std::move(pod));
    }
  };
  return std::make_unique<WatchHandler<kube::PodInfo>>(std::move(kind));
}

}  // namespace gpushare::sync
