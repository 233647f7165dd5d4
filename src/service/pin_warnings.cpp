#include "gpushare/service/pin_warnings.h"

#include <fmt/format.h>

namespace gpushare::service {

UnmatchedPinWarnings::UnmatchedPinWarnings(std::size_t remembered,
                                           logging::LogThrottle::Clock::duration interval)
    : remembered_(remembered == 0 ? 1 : remembered), throttle_(5, interval) {}

bool UnmatchedPinWarnings::concerns(const kube::PodInfo& pod) {
  return pod.model_pin.pinned && pod.node_name.empty() && !pod.finished() && !pod.terminating &&
         pod.wants_gpu();
}

std::optional<std::string> UnmatchedPinWarnings::check(const kube::PodInfo& pod,
                                                       std::span<const std::string> models,
                                                       std::string_view label) {
  if (!concerns(pod) || models.empty()) return std::nullopt;
  const std::vector<std::string> allowed = core::resolve_models(pod.model_pin, models);
  if (allowed.size() != 1 || allowed.front() != core::kNoModelMatches) return std::nullopt;
  std::string id = pod.uid.empty() ? pod.key() : pod.uid;
  {
    std::lock_guard lock(mutex_);
    if (!warned_.insert(id).second) return std::nullopt;
    order_.push_back(std::move(id));
    if (order_.size() > remembered_) {
      warned_.erase(order_.front());
      order_.pop_front();
    }
  }
  const logging::LogThrottle::Admission admitted = throttle_.admit();
  if (!admitted.log) return std::nullopt;
  std::vector<std::string> shown;
  for (const std::string& model : models) shown.push_back(model.empty() ? "(no label)" : model);
  return fmt::format(
      "pod {} is pinned to GPU models on {} ({}) that no GPU node carries (the nodes carry: "
      "{}); kube-scheduler will not place it{}",
      pod.key(), label, pod.model_pin.describe(), fmt::join(shown, ", "), held_back_note(admitted));
}

}  // namespace gpushare::service
