#include "gpushare/inspect/dra_view.h"

namespace gpushare::inspect {

using kube::Json;

void add_dra_holders(Json& node, const core::ClusterModel& model, std::string_view name) {
  const std::vector<core::DraGpu> gpus = model.dra().gpus_of(name);
  if (gpus.empty() || !node.contains("devs")) return;
  const core::NodeState* state = model.find_node(name);
  // DRA GPUs replace the device plugin's only on nodes without those (DraState::overlay).
  if (state == nullptr || state->gpu_count() != static_cast<int>(gpus.size())) return;
  const std::vector<core::DraHolding> holdings = model.dra().holdings_on(name);
  Json& devs = node["devs"];
  for (const core::DraGpu& gpu : gpus) {
    const auto index = static_cast<std::size_t>(gpu.index);
    if (index >= devs.size()) continue;
    Json claims = Json::array();
    for (const core::DraHolding& holding : holdings) {
      if (holding.gpu != gpu.index) continue;
      claims.push_back({{"claim", holding.claim},
                        {"pod", holding.pod},
                        {"usedGPU", holding.amount},
                        {"shareID", holding.share_id}});
    }
    devs[index]["draDevice"] = gpu.pool + "/" + gpu.device;
    devs[index]["draClaims"] = std::move(claims);
  }
}

}  // namespace gpushare::inspect
