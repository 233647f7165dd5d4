#pragma once
// The scores of the node states met in one prioritize request, so that nodes in the same state
// (node_state_key.h) are scored once: a cluster's empty nodes of one pool, its full ones.
//
// Only for policies whose score does not read the node's identity
// (PlacementPolicy::reads_node_identity). Holds pointers to the request's nodes: valid only
// while the model's lock of that request is held; begin() forgets them.
//
// Memory: 32 bytes per slot, at most twice as many slots as the largest request's nodes,
// rounded up to a power of two (10 000 nodes: 1 MiB), kept from one request to the next.
// Not thread-safe; the owner serialises its use.

#include <cstdint>
#include <optional>
#include <vector>

#include "gpushare/core/node_state.h"

namespace gpushare::core {

class StateMemo {
 public:
  // Starts a request that looks up at most `nodes` nodes; forgets the last request's states.
  void begin(std::size_t nodes);
  // What was remembered for a state: its score (nullopt: the state cannot hold the pod), or
  // with `bounded`, an upper bound of it that the policy gave below a floor (ScoreContext).
  struct Remembered {
    std::optional<double> score;
    bool bounded = false;
  };
  // What was remembered for a node in the same state as `node` (whose state_hash is `hash`), or
  // nullopt if nothing.
  std::optional<Remembered> find(const NodeState& node, std::uint64_t hash) const;
  // Remembers `score` (a bound where `bounded`) for `node`'s state; a state is remembered once,
  // except that a score replaces a bound.
  void remember(const NodeState& node, std::uint64_t hash, std::optional<double> score,
                bool bounded = false);

 private:
  struct Slot {
    std::uint64_t hash = 0;
    const NodeState* node = nullptr;
    double score = 0;
    std::uint32_t epoch = 0;  // the request it belongs to: older slots are free
    bool feasible = false;
    bool bounded = false;
  };
  std::vector<Slot> slots_;  // open addressing, linear probing, power-of-two size
  std::uint32_t epoch_ = 0;
  std::size_t used_ = 0;  // this request's slots
};

}  // namespace gpushare::core
