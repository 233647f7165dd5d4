#pragma once
// The warning for a pod pinned to GPU models that no GPU node of the cluster carries (a typo in
// a nodeSelector, a model retired from the fleet): kube-scheduler will never place it, and says
// so only in the pod's events. Logged once per pod, naming it, and rate-bounded: a thousand such
// pods created at once write a few lines and a count, not a thousand lines.

#include <cstddef>
#include <deque>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_set>

#include "gpushare/kube/pod_info.h"
#include "gpushare/logging/log_throttle.h"

namespace gpushare::service {

class UnmatchedPinWarnings {
 public:
  // Remembers up to `remembered` pods already warned about (the oldest are forgotten first).
  explicit UnmatchedPinWarnings(
      std::size_t remembered = 4096,
      logging::LogThrottle::Clock::duration interval = std::chrono::seconds(10));

  // The line to log for `pod` in a cluster whose GPU nodes carry `models`
  // (core::ClusterModel::gpu_models()), or nullopt: the pod is not a pending GPU pod pinned to
  // models none of which is present, or it was said already, or the rate bound holds it back.
  // No GPU node at all (the node list not read yet) is no reason to warn. Cheap when the pod is
  // not pinned. Thread-safe.
  std::optional<std::string> check(const kube::PodInfo& pod, std::span<const std::string> models,
                                   std::string_view label);
  // Whether `pod` needs check() at all: pending, wanting a GPU, pinned.
  static bool concerns(const kube::PodInfo& pod);

 private:
  const std::size_t remembered_;
  logging::LogThrottle throttle_;
  std::mutex mutex_;                        // guards warned_ and order_
  std::unordered_set<std::string> warned_;  // pods' UIDs (namespace/name when there is none)
  std::deque<std::string> order_;           // the same, oldest first
};

}  // namespace gpushare::service
