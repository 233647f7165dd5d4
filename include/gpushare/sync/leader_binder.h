#pragma once
// A thin decorator over ApiPodBinder for HA mode (see leader_gate.h).

#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "gpushare/service/pod_binder.h"
#include "gpushare/sync/api_pod_binder.h"
#include "gpushare/sync/leader_gate.h"

namespace gpushare::sync {

// The binder in HA mode: refuses unless the gate says this instance is the caught-up leader,
// and bounds each bind's API call by what is left of the lease.
class LeaderBinder final : public service::PodBinder {
 public:
  LeaderBinder(ApiPodBinder& inner, const LeaderGate& gate, std::chrono::milliseconds bind_timeout);

  std::optional<kube::PodInfo> find_pod(std::string_view namespace_name,
                                        std::string_view name) override {
    return inner_.find_pod(namespace_name, name);
  }
  service::BindOutcome bind(const kube::PodInfo& pod, std::string_view node,
                            const std::map<std::string, std::string>& annotations) override;
  bool confirms_asynchronously() const override { return inner_.confirms_asynchronously(); }
  // Reading is not binding: followers may read too (a retry is judged on the truth anywhere).
  ReadBack read_back(std::string_view namespace_name, std::string_view name) override {
    return inner_.read_back(namespace_name, name);
  }
  std::uint64_t refused() const { return refused_.load(); }

 private:
  ApiPodBinder& inner_;
  const LeaderGate& gate_;
  std::chrono::milliseconds bind_timeout_;
  std::atomic<std::uint64_t> refused_{0};
};

}  // namespace gpushare::sync
