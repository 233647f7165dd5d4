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
// The default: fgd-plus (docs/placement.md, "As deployed", compares the policies through
// kube-scheduler as deployed).
inline constexpr std::string_view kDefaultPolicy = FgdPlusPolicy::kName;

}  // namespace gpushare::core
