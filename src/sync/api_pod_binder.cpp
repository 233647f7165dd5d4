#include "gpushare/sync/api_pod_binder.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "gpushare/apiclient/pod_writes.h"

namespace gpushare::sync {

using service::BindOutcome;

namespace {

// Decisions key on the Status code and reason, never on message text.
BindOutcome outcome_of(const apiclient::ApiError& error) {
  BindOutcome outcome;
  outcome.ok = false;
  if (error.is_transport() && error.transport != apiclient::TransportFailure::kConnect &&
      error.transport != apiclient::TransportFailure::kDns &&
      error.transport != apiclient::TransportFailure::kTls) {
    // The request may have reached the server: whether the pod is bound is unknown until the
    // watch tells. Keep the reservation meanwhile.
    outcome.outcome_unknown = true;
    outcome.error = fmt::format("no answer from the API server ({}); the bind may still land",
                                error.describe());
  } else if (error.is_conflict()) {
    outcome.error =
        fmt::format("conflict ({}): {}", error.details.kind.empty() ? "pods" : error.details.kind,
                    error.message);
  } else if (error.is_not_found()) {
    outcome.error = fmt::format("pod not found: {}", error.message);
  } else if (error.is_status() && error.reason == apiclient::reasons::kTimeout) {
    outcome.outcome_unknown = true;  // the server itself timed out: it may have applied it
    outcome.error = fmt::format("API server timed out: {}", error.message);
  } else {
    outcome.error = error.describe();
  }
  return outcome;
}

}  // namespace

ApiPodBinder::ApiPodBinder(apiclient::ApiClient& client, const ClusterSync& sync, BindMode mode,
                           std::chrono::milliseconds timeout)
    : client_(client), sync_(sync), mode_(mode), timeout_(timeout) {}

std::optional<kube::PodInfo> ApiPodBinder::find_pod(std::string_view namespace_name,
                                                    std::string_view name) {
  if (auto cached = sync_.cached_pod(namespace_name, name)) return cached;
  ReadBack read = sync_.read_back(namespace_name, name);
  if (read.result == ReadBack::Result::kFailed)
    spdlog::warn("reading pod {}/{}: {}", namespace_name, name, read.error);
  return std::move(read.pod);
}

service::PodBinder::ReadBack ApiPodBinder::read_back(std::string_view namespace_name,
                                                     std::string_view name) {
  return sync_.read_back(namespace_name, name);
}

BindOutcome ApiPodBinder::bind(const kube::PodInfo& pod, std::string_view node,
                               const std::map<std::string, std::string>& annotations) {
  return bind_within(pod, node, annotations, timeout_);
}

BindOutcome ApiPodBinder::bind_within(const kube::PodInfo& pod, std::string_view node,
                                      const std::map<std::string, std::string>& annotations,
                                      std::chrono::milliseconds budget) {
  const auto deadline = std::chrono::steady_clock::now() + budget;
  apiclient::RequestOptions options;
  options.retry = false;  // a lost reply may hide a bind that happened; the watch will tell
  // Each call gets what is left of the budget (at least 1 ms: 0 would mean "no time-out").
  auto with_time_left = [&]() -> apiclient::RequestOptions& {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    options.timeout = std::max(left, std::chrono::milliseconds(1));
    return options;
  };

  if (mode_ == BindMode::kBinding || annotations.empty()) {
    auto result = apiclient::bind_pod(client_, pod.namespace_name, pod.name, pod.uid, node,
                                      annotations, with_time_left());
    if (!result) return outcome_of(result.error());
    return {true, "", false};
  }

  // patch-bind: the Go original's two writes. The patch is conditional on the pod's version,
  // and is undone if the binding fails, so no stale annotations are left behind.
  auto patched = apiclient::patch_pod_annotations(
      client_, pod.namespace_name, pod.name, annotations,
      pod.resource_version.empty() ? std::nullopt
                                   : std::optional<std::string_view>(pod.resource_version),
      with_time_left());
  if (!patched) return outcome_of(patched.error());
  auto bound = apiclient::bind_pod(client_, pod.namespace_name, pod.name, pod.uid, node, {},
                                   with_time_left());
  if (bound) return {true, "", false};
  BindOutcome outcome = outcome_of(bound.error());
  if (!outcome.outcome_unknown) {
    std::map<std::string, std::optional<std::string>> removal;
    for (const auto& [key, value] : annotations) removal.emplace(key, std::nullopt);
    options.timeout = timeout_;  // a clean-up, not a decision: the full time-out
    auto undone = apiclient::patch_pod_annotations(client_, pod.namespace_name, pod.name, removal,
                                                   {}, options);
    if (!undone) {
      spdlog::warn("could not remove gpushare annotations from pod {} after a failed bind: {}",
                   pod.key(), undone.error().describe());
    }
  }
  return outcome;
}

}  // namespace gpushare::sync
