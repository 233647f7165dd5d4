#pragma once
// DRA in /inspect: the device behind each DRA GPU and the ResourceClaims holding its memory
// (claim and pod), beside the device-plugin pods of the same GPU.

#include <string_view>

#include "gpushare/core/cluster_model.h"
#include "gpushare/kube/json_access.h"

namespace gpushare::inspect {

// Adds to `node` (an inspect_node() document) each DRA GPU's "draDevice" (pool/device) and
// "draClaims" ([{claim, pod, usedGPU, shareID}]); nothing for a node without DRA GPUs.
void add_dra_holders(kube::Json& node, const core::ClusterModel& model, std::string_view name);

}  // namespace gpushare::inspect
