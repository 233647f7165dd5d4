#pragma once
// kube-scheduler's DRA allocator (the structured allocator of the DynamicResources plugin) for
// the claims the deployed path gives GPU pods: one exact-count request of `count` devices, each
// consuming `memory` of a device published with allowMultipleAllocations and a memory capacity.
// It takes the first devices that fit, in the order it walks them (pools and slices by name,
// devices in slice order), and never scores: where the free memory lies plays no part.
//
// Written from kube's allocator, not from the extender's prediction of it
// (core::DraState::first_fit), so that the deployed path checks that prediction.

#include <cstddef>
#include <optional>
#include <span>
#include <vector>

#include "gpushare/core/node_state.h"

namespace gpushare::kubesim {

// Indices into `free` (a node's devices in allocator order, the memory each has left) of the
// devices the request gets, ascending; nullopt when fewer than `count` devices have `memory`
// left (the node is infeasible for the pod).
std::optional<std::vector<std::size_t>> dra_first_fit(std::span<const core::Units> free,
                                                      std::int64_t count, core::Units memory);

}  // namespace gpushare::kubesim
