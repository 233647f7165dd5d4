#include "gpushare/core/policy_registry.h"

#include <array>
#include <functional>

#include "gpushare/core/policies/best_fit.h"
#include "gpushare/core/policies/binpack.h"
#include "gpushare/core/policies/dot_product.h"
#include "gpushare/core/policies/fgd.h"
#include "gpushare/core/policies/gpu_packing.h"
#include "gpushare/core/policies/random_choice.h"
#include "gpushare/core/policies/spread.h"

namespace gpushare::core {
namespace {

struct Entry {
  std::string_view name;
  std::unique_ptr<PlacementPolicy> (*make)();
};

template <typename Policy>
std::unique_ptr<PlacementPolicy> make() {
  return std::make_unique<Policy>();
}

template <typename Policy>
constexpr Entry entry() {
  return {Policy::kName, &make<Policy>};
}

// The default first. fgd and fgd-plus learn the target workload online from the pods they are
// told about; best-fit, dot-product, gpu-packing and random are the FGD paper's baselines, for
// comparison.
constexpr std::array kPolicies = {
    entry<FgdPlusPolicy>(),    entry<BinpackPolicy>(), entry<SpreadPolicy>(),
    entry<FgdPolicy>(),        entry<BestFitPolicy>(), entry<DotProductPolicy>(),
    entry<GpuPackingPolicy>(), entry<RandomPolicy>(),
};
static_assert(kPolicies[0].name == kDefaultPolicy);

}  // namespace

std::unique_ptr<PlacementPolicy> make_policy(std::string_view name) {
  for (const Entry& policy : kPolicies) {
    if (policy.name == name) return policy.make();
  }
  return nullptr;
}

std::vector<std::string> policy_names() {
  std::vector<std::string> names;
  for (const Entry& policy : kPolicies) names.emplace_back(policy.name);
  return names;
}

}  // namespace gpushare::core
