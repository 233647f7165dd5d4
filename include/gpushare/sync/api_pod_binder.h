#pragma once
// Bind through the API server: one pods/binding POST carrying the annotations (binding mode),
// or the Go original's annotation patch followed by a plain binding (patch-bind mode).

#include <chrono>

#include "gpushare/apiclient/api_client.h"
#include "gpushare/service/pod_binder.h"
#include "gpushare/sync/cluster_sync.h"

namespace gpushare::sync {

enum class BindMode { kBinding, kPatchBind };

class ApiPodBinder final : public service::PodBinder {
 public:
  ApiPodBinder(apiclient::ApiClient& client, const ClusterSync& sync, BindMode mode,
               std::chrono::milliseconds timeout = std::chrono::seconds(10));

  // The watch's copy first; a GET when the watch has not shown the pod yet.
  std::optional<kube::PodInfo> find_pod(std::string_view namespace_name,
                                        std::string_view name) override;
  service::BindOutcome bind(const kube::PodInfo& pod, std::string_view node,
                            const std::map<std::string, std::string>& annotations) override;
  // bind() finishing within `budget` in all (patch-bind makes up to three calls); leader
  // election cuts it to what is left of the lease.
  service::BindOutcome bind_within(const kube::PodInfo& pod, std::string_view node,
                                   const std::map<std::string, std::string>& annotations,
                                   std::chrono::milliseconds budget);
  // A GET of the pod (ClusterSync::read_back).
  ReadBack read_back(std::string_view namespace_name, std::string_view name) override;
  // The watch confirms binds (and shows late successes after time-outs).
  bool confirms_asynchronously() const override { return true; }

 private:
  apiclient::ApiClient& client_;
  const ClusterSync& sync_;
  BindMode mode_;
  std::chrono::milliseconds timeout_;
};

}  // namespace gpushare::sync
