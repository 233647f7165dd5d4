#pragma once
// Consolidation's holds: GPU memory kept free on one GPU for the replacement pod of an evicted
// pod's owner, so that the extender places it where the plan said.
//
// A hold is (node, GPU, memory, owner UID, expiry). While it is in force (now < expires_ns):
//   - for every pod not of that owner, filter and bind count the held memory as used on that
//     GPU (view_for);
//   - for a pod of that owner, the held GPU is the one bind chooses when the pod fits there, and
//     prioritize gives the held node the top score (for_owner).
// It ends when the replacement binds (anywhere), when the plan stops, or at expiry. A hold in
// the book past its expiry is no longer in force, whether or not it was taken out yet.
//
// Holds are in memory only and create no allocation: the model never counts them, so dropping
// them (a restart, a new leader) oversubscribes nothing; it only lets other pods take the slot.
//
// Not thread-safe: it lives beside the ClusterModel behind the model store's lock (exclusive to
// change it, shared to read it), so a bind that chooses a GPU and a hold that claims it never
// both succeed on the same memory.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gpushare/core/cluster_model.h"
#include "gpushare/core/node_state.h"

namespace gpushare::core {

struct ConsolidationHold {
  std::string node;
  int gpu = 0;
  Units memory = 0;
  std::string owner_uid;  // the evicted pod's controller: its pods are the replacements
  std::string owner;      // "Kind/name", for logs and the web view
  std::string evicted;    // the evicted pod, namespace/name
  std::string evicted_uid;
  std::int64_t created_ns = 0;  // Unix nanoseconds
  std::int64_t expires_ns = 0;

  bool in_force(std::int64_t now_ns) const { return now_ns < expires_ns; }
  friend bool operator==(const ConsolidationHold&, const ConsolidationHold&) = default;
};

class HoldBook {
 public:
  // Places `hold` if its GPU has room for it now: healthy, and free memory less the other holds
  // in force on it at least `hold.memory`. Replaces a hold of the same owner. Returns "" when
  // placed, else why not (nothing changed).
  std::string place(const ClusterModel& model, ConsolidationHold hold, std::int64_t now_ns);

  // Takes out the owner's hold; nullopt if it had none.
  std::optional<ConsolidationHold> release(std::string_view owner_uid);
  // Takes out the holds whose expiry has passed at `now_ns`.
  std::vector<ConsolidationHold> release_expired(std::int64_t now_ns);

  // The owner's hold if in force ("" owns none).
  const ConsolidationHold* for_owner(std::string_view owner_uid, std::int64_t now_ns) const;
  // Memory held on `node` GPU `gpu` against pods not of `owner_uid` ("" = any pod).
  Units held_against(std::string_view node, int gpu, std::string_view owner_uid,
                     std::int64_t now_ns) const;
  // `node` as a pod of `owner_uid` may use it: a copy with the holds in force for other owners
  // counted as used, or nullopt when none applies (use `node` itself).
  std::optional<NodeState> view_for(const NodeState& node, std::string_view owner_uid,
                                    std::int64_t now_ns) const;

  bool empty() const { return holds_.empty(); }
  std::size_t size() const { return holds_.size(); }
  // Every hold in the book, by owner UID (expired ones until taken out).
  const std::map<std::string, ConsolidationHold, std::less<>>& all() const { return holds_; }

 private:
  std::map<std::string, ConsolidationHold, std::less<>> holds_;  // by owner UID
};

}  // namespace gpushare::core
