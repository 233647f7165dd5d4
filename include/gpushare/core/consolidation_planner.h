#pragma once
// Consolidation: a small set of moves (running pods re-placed on other GPUs) that frees whole
// GPUs, or that makes room for a pending pod that fits nowhere. Pure: plans on a snapshot of
// the model and the caller's per-pod eligibility; carrying the moves out (evicting, letting the
// owner re-create the pod, placing it where the plan says) is the caller's.
//
// Every plan is checked move by move in order: each moved pod is counted on its new GPU while
// still counted on its old one, so no GPU or node is ever over its capacity, whatever the order
// in which the old copy stops and the new one starts. Only single-GPU pods move; multi-GPU pods
// and pods bound without a GPU index stay where they are.

#include <cstdint>
#include <deque>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "gpushare/core/cluster_model.h"
#include "gpushare/core/pod_demand.h"

namespace gpushare::core {

// What the caller knows of a pod beyond the model (its labels, owner and PodDisruptionBudget).
struct PodMobility {
  bool opted_in = false;   // the pod (or its namespace) allows being moved
  bool has_owner = false;  // a controller re-creates it after eviction (a bare pod is lost)
  // The PodDisruptionBudget covering the pod: empty = none. Pods of one budget share its count.
  std::string disruption_budget;
  int disruptions_allowed = 0;  // the budget's allowed disruptions now (ignored without one)
  std::vector<std::string> allowed_models;  // the pod's GPU model pin; empty = any
};

// Looked up for each pod the planner considers moving; nullopt = not movable.
using MobilityLookup = std::function<std::optional<PodMobility>(const PodAllocation&)>;

struct ConsolidationLimits {
  int max_moves = 4;  // pods moved by one plan (the caller lowers it to what its hourly budget
                      // has left; 0 = no plan)
  // Freeing GPUs: a GPU is emptied only if it costs at most this many moves.
  int max_moves_per_gpu_freed = 2;
};

struct ConsolidationMove {
  std::string pod_uid;
  std::string pod_name;
  std::string from_node;
  int from_gpu = 0;
  std::string to_node;
  int to_gpu = 0;
  Units amount = 0;  // GPU memory the pod holds
  friend bool operator==(const ConsolidationMove&, const ConsolidationMove&) = default;
};

struct ConsolidationPlan {
  std::vector<ConsolidationMove> moves;  // in the order to carry them out
  int gpus_freed = 0;                    // healthy GPUs wholly free after the plan, less before
  // With a pending pod: where it fits after the moves.
  std::string pending_node;
  std::vector<int> pending_gpus;
  // Pods moved per GPU freed (infinite when none is freed).
  double cost() const;
};

// Moves that empty GPUs in use: each emptied GPU's pods go to GPUs already in use elsewhere
// (best fit: the fullest GPU with room), never to a wholly free GPU, so each emptied GPU is a
// GPU freed. GPUs cheapest to empty first (fewest pods, then least memory). nullopt when no
// GPU can be freed within the limits.
std::optional<ConsolidationPlan> plan_free_gpus(const ClusterModel& model,
                                                const MobilityLookup& mobility,
                                                const ConsolidationLimits& limits);

// Moves after which `pending` (a pod that fits nowhere now) fits on some node: the fewest moves
// found, GPUs chosen one node at a time. nullopt when nothing within the limits makes room, or
// when the pod already fits somewhere.
std::optional<ConsolidationPlan> plan_for_pending(const ClusterModel& model,
                                                  const PodDemand& pending,
                                                  const MobilityLookup& mobility,
                                                  const ConsolidationLimits& limits);

// Moves per hour: how many of `per_hour` remain at `now` (seconds, any epoch) given the moves
// recorded in the hour before it.
class MoveBudget {
 public:
  explicit MoveBudget(int per_hour) : per_hour_(per_hour) {}
  void set_per_hour(int per_hour) { per_hour_ = per_hour; }
  int left(double now);
  void record(double now, int moves);
  int moved_in_last_hour(double now);

 private:
  int per_hour_;
  std::deque<std::pair<double, int>> recent_;
};

}  // namespace gpushare::core
