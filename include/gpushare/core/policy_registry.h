#pragma once
// Every placement policy by name: what --policy, gpushare-sim and the benchmarks accept. A
// policy's name is its class's kName, written once there.

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "gpushare/core/placement_policy.h"
#include "gpushare/core/policies/fgd_plus.h"

namespace gpushare::core {

// nullptr for a name no policy has.
std::unique_ptr<PlacementPolicy> make_policy(std::string_view name);
// Names make_policy accepts, the default first.
std::vector<std::string> policy_names();
// fgd-plus: through kube-scheduler as deployed it leaves 9-31 % fewer GPUs idle than binpack on
// the openb traces (29-61 % when kube-scheduler alone places the CPU-only pods, spreading them
// over GPU nodes); docs/placement.md, "As deployed".
inline constexpr std::string_view kDefaultPolicy = FgdPlusPolicy::kName;

}  // namespace gpushare::core
