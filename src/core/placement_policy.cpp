#include "gpushare/core/placement_policy.h"

#include <algorithm>
#include <cmath>

#include "gpushare/core/policies/binpack.h"
#include "gpushare/core/policies/fgd.h"
#include "gpushare/core/policies/fgd_plus.h"
#include "gpushare/core/policies/paper_baselines.h"
#include "gpushare/core/policies/spread.h"

namespace gpushare::core {

std::vector<int> normalize_scores(std::span<const std::optional<double>> raw, int max_score) {
  std::vector<int> result(raw.size(), 0);
  double lo = 0;
  double hi = 0;
  bool any = false;
  for (const auto& score : raw) {
    if (!score) continue;
    lo = any ? std::min(lo, *score) : *score;
    hi = any ? std::max(hi, *score) : *score;
    any = true;
  }
  if (!any) return result;
  for (std::size_t i = 0; i < raw.size(); ++i) {
    if (!raw[i]) continue;
    if (hi - lo <= 1e-12) {
      result[i] = max_score;
    } else {
      const double scaled = 1.0 + (max_score - 1) * (*raw[i] - lo) / (hi - lo);
      result[i] = std::clamp(static_cast<int>(std::lround(scaled)), 1, max_score);
    }
  }
  return result;
}

std::unique_ptr<PlacementPolicy> make_policy(std::string_view name) {
  if (name == "binpack") return std::make_unique<BinpackPolicy>();
  if (name == "spread") return std::make_unique<SpreadPolicy>();
  // Both learn the target workload online from the pods they are told about.
  if (name == "fgd") return std::make_unique<FgdPolicy>();
  if (name == "fgd-plus") return std::make_unique<FgdPlusPolicy>();
  // Baselines of the FGD paper, for comparison.
  if (name == "best-fit") return std::make_unique<BestFitPolicy>();
  if (name == "dot-product") return std::make_unique<DotProductPolicy>();
  if (name == "gpu-packing") return std::make_unique<GpuPackingPolicy>();
  if (name == "random") return std::make_unique<RandomPolicy>();
  return nullptr;
}

std::vector<std::string> policy_names() {
  return {"fgd-plus", "binpack",     "spread",      "fgd",
          "best-fit", "dot-product", "gpu-packing", "random"};
}

}  // namespace gpushare::core
