#pragma once
// Placement policies: one object both scores a node (prioritize) and picks the GPUs (bind),
// so the node that scored best is filled exactly the way its score assumed.

#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "gpushare/core/node_state.h"
#include "gpushare/core/pod_demand.h"

namespace gpushare::core {

struct Placement {
  double score = 0;       // higher = better node; scale is the policy's own
  std::vector<int> gpus;  // GPUs to take (empty for pods that want no GPU)
};

class PlacementPolicy {
 public:
  virtual ~PlacementPolicy() = default;
  virtual std::string_view name() const = 0;

  // Where `pod` would go on `node`, or nullopt if it does not fit (check_fit fails).
  // Must be a pure function of (node, pod, the policy's learned state).
  virtual std::optional<Placement> place(const NodeState& node, const PodDemand& pod) const = 0;
  // place(node, pod)->score, or nullopt where place() gives nullopt: all prioritize needs.
  // Policies may override it to skip building the Placement; it must return the same value.
  virtual std::optional<double> score(const NodeState& node, const PodDemand& pod) const {
    std::optional<Placement> placement = place(node, pod);
    return placement ? std::optional<double>(placement->score) : std::nullopt;
  }

  // Told about every pod actually placed, for policies that learn the workload online.
  virtual void observe(const PodDemand& /*pod*/) {}
  // Told the whole cluster after each observe() (and whenever the owner's view of the nodes
  // changed a lot), for policies that weigh what is scarce cluster-wide. The policy may read
  // it only now and then; state_version() changes when that changed what place() returns.
  virtual void observe_cluster(std::span<const NodeState> /*nodes*/) {}
  // Changes whenever observe() changed what place() returns; caches key on it.
  virtual std::uint64_t state_version() const { return 0; }
  // Policy-specific state for /inspect (JSON text), empty if none.
  virtual std::string describe_state() const { return {}; }
};

// Maps raw scores of the offered nodes to kube-scheduler's extender scale 0..max_score:
// infeasible nodes (nullopt) get 0, feasible ones 1..max_score by min-max over the feasible set,
// so the best node always gets max_score.
std::vector<int> normalize_scores(std::span<const std::optional<double>> raw, int max_score = 10);

std::unique_ptr<PlacementPolicy> make_policy(std::string_view name);
// Names make_policy accepts, the default first.
std::vector<std::string> policy_names();
// fgd-plus: through kube-scheduler as deployed it leaves 9-31 % fewer GPUs idle than binpack on
// the openb traces (29-61 % when kube-scheduler alone places the CPU-only pods, spreading them
// over GPU nodes); docs/placement.md, "As deployed".
inline constexpr std::string_view kDefaultPolicy = "fgd-plus";

}  // namespace gpushare::core
