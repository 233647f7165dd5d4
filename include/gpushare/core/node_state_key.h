#pragma once
// A node's state without its identity: everything a placement policy may read of a node to
// score it (PlacementPolicy::reads_node_identity), so that nodes in the same state can share
// one score. In a cluster many nodes are alike (empty nodes of one pool, full ones), and each
// distinct state is then scored once per request.

#include <cstdint>

#include "gpushare/core/node_state.h"

namespace gpushare::core {

// Whether `a` and `b` differ at most in name, address and generation.
bool same_state(const NodeState& a, const NodeState& b);
// A hash consistent with same_state (equal states, equal hashes).
std::uint64_t state_hash(const NodeState& node);

}  // namespace gpushare::core
