#pragma once
// What fgd and fgd-plus read of each node alone (NodeReading, fragmentation.h: F(node) and the
// per-need counts), kept from one prioritize request to the next, so that a pod of a demand
// never seen before (which the score cache, score_cache.h, cannot serve) computes only the
// fragmentation after placement: F(after) - F(before) needs F(before) of the node, and that
// does not depend on the pod.
//
// A reading is a pure function of the node's state and the policy's target workload. It is
// kept per node position with the node's stamp (ClusterModel::stamp: a fresh one whenever the
// node changes), which names one node state exactly without hashing the state; nodes in equal
// states in one request are already scored once (state_memo.h). A move of the policy's
// reading_version (the target's version: fgd-plus's prices, which move its state_version, do not
// enter a reading) drops every reading.
//
// Bounded: one reading per position of the model, sized to the request's model (about 180
// bytes each: 5 000 nodes, 0.9 MiB). Not thread-safe; the owner serialises its use. Keyed on
// one ClusterModel object's positions and stamps: use one cache per model.

#include <array>
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

 private:
  struct Entry {
    std::uint64_t stamp = 0;  // stamps start at 1: 0 is empty
    NodeReading reading;
  };
  std::vector<Entry> entries_;
  std::uint64_t reading_version_ = 0;
};

// F after placement (fragmentation.h) of the node states fgd and fgd-plus met before, so that
// nodes that end in the same state, in one request or in later ones, sum it once. F of a state
// is a pure function of the state's group values (NodeFragmentation's State: one value per group
// of shapes and the idle memory) and of the shapes the node excludes (by CPU, memory or GPU
// model), for one CompiledWorkload: it depends on no node and no pod beyond those, so a demand
// never seen before still finds the states its placements leave. The key holds them exactly and
// a hit returns the bits the sum would give.
//
// Kept by the caller at one reading_version, as FragmentationCache: begin() drops every sum when
// the version moved. Only for workloads of at most kMaxWords x 64 shapes and kMaxValues - 1
// groups (others sum every time). Bounded: kSlots slots of 104 bytes (1.6 MiB), allocated on
// first use; when half of them are taken it starts over. Not thread-safe; the owner serialises
// its use.
class FragmentationSums {
 public:
  static constexpr std::size_t kSlots = std::size_t{1} << 14;
  static constexpr std::size_t kMaxWords = 2;
  static constexpr std::size_t kMaxValues = 16;
  // The excluded shapes (a CompiledWorkload mask) and the group values, unused entries 0.
  struct Key {
    std::array<std::uint64_t, kMaxWords> excluded{};
    std::array<std::int32_t, kMaxValues> value{};
    friend bool operator==(const Key&, const Key&) = default;
  };
  static std::uint64_t hash(const Key& key);

  // Starts a request for a policy at `reading_version` (PlacementPolicy::reading_version).
  void begin(std::uint64_t reading_version);
  // The F kept for `key` (whose hash() is `hash`), or nullptr.
  const double* find(const Key& key, std::uint64_t hash) const;
  void remember(const Key& key, std::uint64_t hash, double sum);
  // Sums kept now (for tests).
  std::size_t size() const { return used_; }

 private:
  struct Slot {
    std::uint64_t hash = 0;
    std::uint32_t epoch = 0;  // slots of an older epoch are free
    double sum = 0;
    Key key;
  };
  std::vector<Slot> slots_;  // open addressing, linear probing
  std::uint32_t epoch_ = 0;
  std::size_t used_ = 0;
  std::uint64_t reading_version_ = 0;
  bool started_ = false;
  void clear();
};

}  // namespace gpushare::core
