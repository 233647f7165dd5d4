#pragma once
// What fgd and fgd-plus read of each node alone (NodeReading, fragmentation.h: F(node) and the
// per-need counts), kept from one prioritize request to the next, so that a pod of a demand
// never seen before (which the score cache, score_cache.h, cannot serve) computes only the
// fragmentation after placement: F(after) - F(before) needs F(before) of the node, and that
// does not depend on the pod. The reading also keeps the F(after) values of the last sharing
// pod (NodeReading::Minimum), which a pod of the same GPU memory whose CPU and memory exclude
// the same shapes (a demand that is new only in those) reads instead of computing them.
//
// A reading is a pure function of the node's state and the policy's target workload. It is
// kept per node position with the node's stamp (ClusterModel::stamp: a fresh one whenever the
// node changes), which names one node state exactly without hashing the state; nodes in equal
// states in one request are already scored once (state_memo.h). A move of the policy's
// reading_version (the target's version: fgd-plus's prices, which move its state_version, do not
// enter a reading) drops every reading.
//
// Bounded: one reading per position of the model, sized to the request's model (256 bytes
// each: 5 000 nodes, 1.2 MiB). Not thread-safe; the owner serialises its use. Keyed on
// one ClusterModel object's positions and stamps: use one cache per model.

#include <cstdint>
#include <vector>

#include "gpushare/core/fragmentation.h"

namespace gpushare::core {

class FragmentationCache {
 public:
  // Starts a request on a model of `positions` nodes, for a policy at `reading_version`
  // (PlacementPolicy::reading_version).
  void begin(std::uint64_t reading_version, std::size_t positions);
  // The reading of the node at `position` with `stamp`: filled if one was kept for that stamp
  // (and version), else an empty one for the scorer to fill. Valid until the next begin().
  NodeReading& at(std::size_t position, std::uint64_t stamp) {
    Entry& entry = entries_[position];
    if (entry.stamp != stamp) {
      entry.stamp = stamp;
      entry.reading.filled = false;
    }
    return entry.reading;
  }
  // Readings the cache has room for now (for tests).
  std::size_t capacity() const { return entries_.size(); }
  // What the request's nodes share of the shapes they exclude after placement
  // (fragmentation.h), begun by begin().
  SharedExclusions& exclusions() { return exclusions_; }

 private:
  struct Entry {
    std::uint64_t stamp = 0;  // stamps start at 1: 0 is empty
    NodeReading reading;
  };
  std::vector<Entry> entries_;
  std::uint64_t reading_version_ = 0;
  SharedExclusions exclusions_;
};

}  // namespace gpushare::core
