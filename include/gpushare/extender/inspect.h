#pragma once
// The /inspect JSON: the Go original's names (nodes, totalGPU, usedGPU, devs, pods) plus more.

#include <optional>
#include <string_view>

#include "gpushare/core/cluster_model.h"
#include "gpushare/extender/rejection_log.h"
#include "gpushare/kube/json_access.h"

namespace gpushare::extender {

// Every node, sorted by name. `policy_state` is the policy's describe_state() (JSON or empty).
kube::Json inspect_cluster(const core::ClusterModel& model, std::string_view policy_name,
                           std::string_view policy_state);
// One node in the same shape as an element of "nodes", or nullopt if unknown.
std::optional<kube::Json> inspect_node(const core::ClusterModel& model, std::string_view node);
kube::Json rejections_json(const std::vector<Rejection>& rejections);

}  // namespace gpushare::extender
