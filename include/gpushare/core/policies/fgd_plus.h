#pragma once
// FGD plus: fragmentation gradient descent that also sees CPU and memory.
//
// The node measure is M(n) = F(n) + balance_weight * S(n):
//  - F(n): FGD's expected fragmentation against the target workload, with pod shapes that
//    include memory and weighted by sqrt(GPUs) so that rare multi-GPU pods stay in the target;
//  - S(n): GPU memory that the node's CPU or memory will strand, in a fluid view of the
//    workload: with c CPU and m memory per unit of GPU memory arriving on average, a node with
//    G idle GPU memory, C CPU and M memory left can use at most min(G, C / c, M / m) of it.
// A pod goes where M grows least (continuous scores: no integer truncation), fuller nodes
// first among equals; the GPU inside the node is chosen by the same measure.
//
// Scarce GPU models: pods pinned to GPU models (allowed_models) can only use those models'
// GPUs. For every model set A that target shapes are pinned to, D_A = the pinned shapes' share
// of the workload's GPU demand x the idle GPU memory cluster-wide (the demand still to come, if
// the cluster fills), and I_A = the idle GPU memory on A's nodes. The price of A is
// min(1, D_A / I_A): 1 when the pinned demand will take all of A, so every unit another pod
// takes there is a pinned unit lost. A pod that A's pins do not cover (unpinned, or allowed
// beyond A) pays price x the GPU memory it takes there, in GPUs, against the score; a model's
// price is the highest of the sets it is in. Prices come from the whole cluster
// (observe_cluster), recomputed every scarcity_refresh placements and when the target changes,
// so cached scores stay valid in between; scoring reads one price per node: O(pinned sets).
//
// Hosts of multi-GPU pods: a pod of g GPUs needs g wholly free GPUs and its CPU and memory on
// one node, and the nodes that have them (a few CPU-rich 8-GPU nodes for the biggest pods) are
// used up by small pods long before the cluster is full. For every multi-GPU target shape s,
// H_s = the s pods the cluster can still host (sum over nodes of min(free whole GPUs / g,
// free CPU / cpu, free memory / memory)) and D_s = the GPU demand still to come (as above) of
// the multi-GPU shapes that need at least what s needs (their hosts are hosts of s). The price
// of s rises from 0 to 1 as D_s / (g x H_s) goes from host_threshold to 1; a pod that leaves a
// node able to host k fewer s pods loses price x k x g, in GPUs, and the pod pays host_weight
// x the largest such loss over the priced shapes: the shapes overlap (a slot of 8 wholly free
// GPUs hosts every shape of up to 8 GPUs and its CPU and memory, each variant a shape), so the
// slot would have held one pod, the dearest, not one of every variant.
//
// A slot is priced by the pods that could use it: on a node, D_s counts only the shapes that
// node can host when empty. Nodes are grouped into host classes (GPU count, CPU, memory and
// model, as their specs give them); the 8-GPU pods that only a CPU-rich 8-GPU node hosts make
// its slots dear, not those of a 2-GPU node or of an 8-GPU node without their CPU. Counted
// cluster-wide, that demand would price every small node's slots near 1, and the differences
// between those prices (up to host_weight x 2 GPUs) would outweigh what a CPU-hungry small pod
// strands: it would go to the CPU-poor node whose slots serve fewer shapes and strand the GPUs
// left there. A node of a class not seen when the prices were computed pays the cluster-wide
// D_s. Scoring reads
// the node's class (O(classes), at most kMaxHostClasses) and the priced shapes: O(GPUs + host
// classes + priced shapes) per node.
//
// The largest loss does not tell a node that also hosts rarer shapes from one that does not: a
// CPU-rich 8-GPU node hosts the common 8-GPU shapes as well, so it costs what a common node
// does. With exclusive_weight above 0, a pod of the largest GPU count among the priced shapes
// also pays exclusive_weight x the sum, over the distinct sets of nodes that can host a shape
// (when empty), of the largest scarcity x k x g among the broken shapes of that set which need
// at least what the pod needs (scarcity = D_s / (g x H_s), up to 1, without the threshold).
// Among the pod's own hosts, a node that also hosts rarer shapes costs more; the sets the pod
// breaks wherever it goes add the same to every such host. Smaller pods pay the largest loss
// alone: the sets would steer them off the CPU-rich nodes that host the rarer shapes, onto
// nodes where their CPU strands the GPUs they leave (docs/placement.md, "Multi-GPU share").
//
// Middle pods (multi-GPU pods of fewer GPUs than the largest priced shape) choose which node's
// slot to break. A class's price above counts its demand against the shape's slots in the whole
// cluster, so a class that hosts only the smaller shapes prices its slots near 0, however few
// hosts those shapes have elsewhere once the larger pods take theirs. Middle pods pay routed
// prices instead: the demand behind s (each shape that needs at least what s needs) is routed
// to the classes that host it, the shapes hosted by the fewest classes first, each spread so
// that the loads of its classes (GPUs routed / the class's s slots, in GPUs) rise evenly, and a
// class's price ramps with its load as above. Where the rarer shapes leave their class room,
// its slots and those of the classes sharing the common shapes cost alike. A middle pod also
// weighs S by balance_weight + middle_balance_weight x the largest host price in force: it
// decides with how much CPU the GPUs it leaves on the node stay, which matters as far as hosts
// are scarce; with no host dear, the extra weight would only send it to wholly free nodes.
//
// Pods of one GPU or less pay class prices, which leave a class that hosts only middle shapes
// (4-GPU nodes of little CPU, say) near 0 however many middle pods will need it: they would
// open those nodes first, and the middle pods then break the largest shapes' slots. They pay a
// class's routed price instead for the slots of the middle shapes of at least half the largest
// priced GPU count (a displaced smaller pod mostly fits where a node is already broken) where
// the class's CPU and memory per GPU let the workload use at least small_routed_usable of its
// GPUs (min over CPU and memory of the class's per GPU against the target's per GPU, up to 1).
// On a class poorer than that, the middle pods that the routed price would keep it for strand
// its GPUs behind too little CPU anyway, so it keeps its class price.
//
// Equal scores: a pod of several whole GPUs that takes every wholly free GPU of a node (an
// empty one, say) leaves nothing for F or S to tell nodes of different specs apart, and scores
// exactly the same on them where no priced shape does either (none is priced while the target has
// no multi-GPU shape, for one). It then goes to the node with less CPU and memory: the larger one
// hosts every shape the smaller one does, and more. The pod pays kSpecTieBreak x the node's spec
// size (spec_tie_break), far below what the measure and the prices weigh. Only there: paid by every
// multi-GPU pod, it cost the default trace under churn (docs/placement.md, "Equal scores
// between node specs").
//
// docs/placement.md compares it with FGD in the simulator. Nodes that do not track CPU or memory
// (the service leaves those to kube-scheduler) simply drop those terms.

#include <optional>
#include <string>
#include <vector>

#include "gpushare/core/fragmentation.h"
#include "gpushare/core/placement_policy.h"
#include "gpushare/core/workload.h"

namespace gpushare::core {

struct FgdPlusOptions {
  double balance_weight = 1.0;  // weight of S(n) against F(n)
  double pack_weight = 0.1;     // per 8 GPUs left idle on the node after placement
  // Weight of the model price; 0 = off. Above 1 because the demand still to come is taken as
  // the idle memory, while pods keep arriving once the cluster is full (the value is chosen on
  // the openb variants: docs/placement.md).
  double scarcity_weight = 4.0;
  // The model price starts at this D_A / I_A and reaches 1 at D_A / I_A = 1: a model whose
  // pinned demand fits its idle memory with room to spare is no reason to keep other pods off.
  double scarcity_threshold = 0.0;
  // Weight of the host price (see FgdPlusPolicy); 0 = off. Above 1 for the reason given for
  // scarcity_weight (chosen on the openb traces and variants: docs/placement.md).
  double host_weight = 3.0;
  // The host price starts at this demand / supply of hosts and reaches 1 at 1.
  double host_threshold = 0.2;
  // Weight of the host sets a pod of the largest priced GPU count breaks (see FgdPlusPolicy);
  // 0 = off (chosen on the multi-GPU share sweep: docs/placement.md).
  double exclusive_weight = 3.0;
  // Added to balance_weight for middle pods, times the largest host price in force (see
  // FgdPlusPolicy); chosen on the multi-GPU share sweep (docs/placement.md).
  double middle_balance_weight = 1.0;
  // A pod of one GPU or less pays routed prices for the slots of middle shapes of at least half
  // the largest priced GPU count on a node whose class lets the workload use at least this
  // share of its GPUs (see FgdPlusPolicy); above 1 = never. Chosen on the multi-GPU share sweep
  // (docs/placement.md).
  double small_routed_usable = 0.8;
  int scarcity_refresh = 64;  // placements between recomputations of the prices
};

// The price of one pinned model set (see FgdPlusPolicy).
struct ModelPrice {
  std::vector<std::string> models;  // sorted
  double price = 0;                 // 0..1, per GPU of memory taken by a pod it does not cover
  friend bool operator==(const ModelPrice&, const ModelPrice&) = default;
};

// The price of breaking a host of one multi-GPU target shape (see FgdPlusPolicy).
struct HostPrice {
  WorkloadShape shape;
  double price = 0;         // 0..1, per GPU of the shape's placements a node loses
  std::uint64_t hosts = 0;  // identifies the set of nodes able to host the shape when empty
  double scarcity = 0;      // 0..1, D_s / (g x H_s) (see FgdPlusPolicy), without the threshold
  // The price on the nodes of each host class (FgdPlusPolicy::host_classes, same order), D_s
  // counting only the shapes that class hosts; never above `price`.
  std::vector<double> class_prices;
  // The routed price on the nodes of each host class (same order), what middle pods pay.
  std::vector<double> routed_prices;
  friend bool operator==(const HostPrice&, const HostPrice&) = default;
};

// Nodes alike in what they can host when empty (see FgdPlusPolicy).
struct HostClass {
  int gpu_count = 0;
  std::int64_t cpu_milli = 0;  // the spec's; 0 = not tracked
  std::int64_t memory = 0;     // the spec's; 0 = not tracked
  std::string gpu_model;
  bool holds(const NodeState& node) const;
  friend bool operator==(const HostClass&, const HostClass&) = default;
};

class FgdPlusPolicy final : public PlacementPolicy {
 public:
  using Options = FgdPlusOptions;
  // How the service learns the target: memory-aware shapes, sqrt(GPUs) weights.
  static WorkloadHistogram::Options default_learning();
  // The target for a known workload (the simulator's trace), built the same way.
  static TargetWorkload target_for(std::span<const PodDemand> pods);

  // Learns the target workload online (the service).
  FgdPlusPolicy();
  FgdPlusPolicy(WorkloadHistogram::Options learning, Options options);
  // A fixed target workload (the simulator, as the FGD paper).
  explicit FgdPlusPolicy(TargetWorkload fixed_target, Options options = {});

  static constexpr std::string_view kName = "fgd-plus";
  std::string_view name() const override { return kName; }
  std::optional<Placement> place(const NodeState& node, const PodDemand& pod) const override;
  // place()->score without choosing the GPU: only the candidates that can score best are
  // evaluated exactly (see NodeFragmentation::before_and_minimum).
  std::optional<double> score(const NodeState& node, const PodDemand& pod) const override;
  // A sharing pod whose score is below context.floor may get the bound of its score from the
  // approximation NodeFragmentation computes first (minimum_lower_bound) instead, where that is
  // below the floor too.
  std::optional<double> score_in(const NodeState& node, const PodDemand& pod,
                                 ScoreContext& context) const override;
  // Sharing pods (one GPU), on nodes with a filled reading: the score with F after placement
  // replaced by CompiledWorkload::sharing_after_lower_bound, everything else as score() computes
  // it (the score falls as F(after) grows, each step a monotonic floating-point operation).
  std::optional<std::optional<double>> score_bound(const NodeState& node, const PodDemand& pod,
                                                   const NodeReading* reading) const override;
  bool bounds_scores(const PodDemand& pod) const override;
  // The learned target's version (fgd-plus: prices do not enter a reading).
  std::optional<std::uint64_t> reading_version() const override;
  std::optional<double> score_taken(const NodeState& node, const PodDemand& pod,
                                    std::span<const GpuTake> takes) const override;
  void observe(const PodDemand& pod) override;
  void observe_cluster(std::span<const NodeState> nodes) override;
  std::uint64_t state_version() const override;
  std::string describe_state() const override;

  const TargetWorkload& target() const;
  // The prices of the pinned model sets of target(), from the cluster `nodes`.
  std::vector<ModelPrice> model_prices(std::span<const NodeState> nodes) const;
  // The prices in force (computed by the last observe_cluster).
  const std::vector<ModelPrice>& prices() const { return prices_; }
  // The host prices of the multi-GPU shapes of target(), from the cluster `nodes` (only those
  // above 0, or with a scarcity above 0 when exclusive_weight is not 0).
  std::vector<HostPrice> host_prices(std::span<const NodeState> nodes) const;
  const std::vector<HostPrice>& host_prices() const { return host_prices_; }
  // The host classes of `nodes` of two GPUs or more, in order of first appearance, at most
  // kMaxHostClasses (nodes of further classes pay the cluster-wide prices).
  static std::vector<HostClass> host_classes(std::span<const NodeState> nodes);
  static constexpr std::size_t kMaxHostClasses = 64;
  // What `pod` pays, in GPUs, for the hosts of priced multi-GPU shapes it takes on `node`: the
  // largest loss over the shapes, not their sum; a multi-GPU pod also the host sets it breaks.
  double host_cost(const NodeState& node, const PodDemand& pod) const;
  // What `pod` pays, in GPUs, to break ties between nodes of different specs (see FgdPlusPolicy):
  // for a pod of several whole GPUs that takes every wholly free GPU of `node`, kSpecTieBreak x
  // the node's spec CPU in cores plus its spec memory in the cores the workload asks with that
  // much memory; 0 otherwise.
  double spec_tie_break(const NodeState& node, const PodDemand& pod) const;
  static constexpr double kSpecTieBreak = 1e-8;
  // A multi-GPU pod of fewer GPUs than the largest priced shape (routed prices, heavier S).
  bool middle_pod(const PodDemand& pod) const;
  // The share of `node`'s GPUs the target workload's CPU and memory per GPU can use, given the
  // node's spec CPU and memory per GPU: min(1, spec per GPU / the target's per GPU) over CPU
  // and memory; 1 where the node or the target does not track them.
  double usable_share(const NodeState& node) const;
  // What `pod` pays, in GPUs, for taking `taken` GPU memory on a node of `model` with GPUs of
  // `capacity`: scarcity_weight x the highest price of a set holding `model` that does not
  // cover the pod's own pin.
  double scarcity_cost(std::string_view model, Units capacity, const PodDemand& pod,
                       Units taken) const;
  // S(n) above, in units of GPU memory.
  double stranded_gpu(const FreeResources& node) const;
  // M(n) above.
  double measure(const FreeResources& node) const;

  // The straightforward computation (FreeResources and M(n) per candidate), which place() and
  // score() reproduce exactly; used for nodes beyond NodeFragmentation's capacities, and by tests.
  std::optional<Placement> reference_place(const NodeState& node, const PodDemand& pod) const;

 private:
  // place() on a prepared node (the pod fits); with `score_only`, only the score, into it, or
  // with `context` (score_in's), maybe a bound below its floor (context->bounded).
  Placement place_with(NodeFragmentation& fragmentation, const NodeState& node,
                       const PodDemand& pod, double* score_only,
                       ScoreContext* context = nullptr) const;
  void update_ratios();
  // small_routed_classes_ for `classes`, each read off the first of `nodes` it holds.
  std::vector<bool> small_routed_classes(std::span<const NodeState> nodes,
                                         const std::vector<HostClass>& classes) const;
  // host_prices() with the host classes of `nodes` already found.
  std::vector<HostPrice> host_prices(std::span<const NodeState> nodes,
                                     const std::vector<HostClass>& classes) const;
  // S(n) of a node with `idle` GPU memory, `cpu_free` and `memory_free` left.
  double stranded_gpu(Units idle, std::int64_t cpu_free, std::int64_t memory_free) const;
  // middle_balance_weight x the largest host price in force x the growth of S(n) from before
  // to after a middle pod's placement, in units of GPU memory.
  double middle_stranding(Units idle_before, std::int64_t cpu_before, std::int64_t memory_before,
                          Units idle_after, std::int64_t cpu_after,
                          std::int64_t memory_after) const;
  // A sharing pod's score before its prices: the growth of M(n) in GPUs, from M(n) before
  // (`measure_before`) and F after placement, and a little packing. Non-increasing in
  // `fragmentation_after`.
  double sharing_score(double measure_before, double fragmentation_after, Units idle_after,
                       std::int64_t cpu_after, std::int64_t memory_after, double capacity) const;
  // M(n) from F(n) and what S(n) reads.
  double measure(double fragmentation, Units idle, std::int64_t cpu_free,
                 std::int64_t memory_free) const;
  // The same for a node before placement, kept in its `reading` (where given and filled: the
  // node's state is the reading's) and read back while F(n) is the one it was computed from.
  double measure_before(const NodeReading* reading, double fragmentation, Units idle,
                        std::int64_t cpu_free, std::int64_t memory_free) const;

  std::optional<WorkloadHistogram> learned_;
  TargetWorkload fixed_;
  ShapeWeighting weighting_ = ShapeWeighting::kSqrtGpus;  // how target() weighs its shapes
  Options options_;
  // The workload's CPU (milli) and memory per unit of GPU memory; 0 = unknown, term dropped.
  double cpu_per_gpu_unit_ = 0;
  double memory_per_gpu_unit_ = 0;
  CompiledWorkload compiled_;  // target(), rebuilt whenever it changes
  // The shapes the prices weigh demand by: every shape learned (rare ones included: the
  // biggest multi-GPU pods are rare), or the fixed target.
  const std::vector<WeightedShape>& demand_mix() const;
  // Each demand_mix() shape's share of the GPU demand (pods, not the sqrt(GPUs) weights),
  // parallel to it; relative shapes at `per_gpu`.
  std::vector<double> demand_shares(Units per_gpu) const;
  // The prices in force, from the last recomputation; host_prices_ as host_prices() returns.
  std::vector<ModelPrice> prices_;
  std::vector<HostPrice> host_prices_;
  std::vector<HostClass> host_classes_;  // host_classes() of the cluster host_prices_ read
  int largest_priced_gpus_ = 0;          // the largest GPU count among host_prices_' shapes
  double dearest_host_price_ = 0;        // the largest price among host_prices_
  std::uint64_t prices_version_ = 0;     // recomputations that changed prices_
  int since_prices_ = 0;                 // observe_cluster calls since the last recomputation
  bool prices_stale_ = true;             // the target changed since prices_ were computed
  // Per host_classes_ entry: usable_share of its nodes >= small_routed_usable, with the target
  // the prices were computed for.
  std::vector<bool> small_routed_classes_;
};

}  // namespace gpushare::core
