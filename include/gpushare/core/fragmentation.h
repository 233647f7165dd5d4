#pragma once
// GPU fragmentation of a node with respect to a target workload (Weng et al., "Beware of
// Fragmentation", USENIX ATC'23): the idle GPU memory that pods of the workload could not use.

#include <array>
#include <cstdint>
#include <limits>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "gpushare/core/node_state.h"
#include "gpushare/core/workload.h"

namespace gpushare::core {

// What is left on a node, as the measure reads it. A small value type: copy it and subtract a
// pod to ask what-if questions.
struct FreeResources {
  std::int64_t cpu_free = 0;     // max() when the node does not track CPU
  std::int64_t memory_free = 0;  // max() when not tracked
  std::string_view gpu_model;    // views the node's spec: keep the node alive
  Units gpu_capacity = 0;        // per GPU
  std::vector<Units> gpu_free;   // per GPU index; unhealthy GPUs count as 0

  static FreeResources of(const NodeState& node);
  Units total_gpu_free() const;
  // Takes the pod's share from each of `gpus` and its CPU/memory; no checks.
  void take(const PodDemand& pod, std::span<const int> gpus);
};

// frag_j(n): idle GPU memory on the node that a pod of shape j cannot use.
//  - j wants no GPU, or the node's model is not allowed for j: all idle GPU memory;
//  - the node can host j (gpu_count GPUs with free >= per_gpu, enough CPU and, if the shape
//    names it, memory): the memory of GPUs with less free than per_gpu;
//  - otherwise: all idle GPU memory.
Units shape_fragmentation(const FreeResources& node, const WorkloadShape& shape);

// F(n) = sum_j weight_j * frag_j(n).
double fragmentation(const FreeResources& node, const TargetWorkload& workload);
inline double fragmentation(const NodeState& node, const TargetWorkload& workload) {
  return fragmentation(FreeResources::of(node), workload);
}

// ---------------------------------------------------------------------------------------------
// The fast path of fgd and fgd-plus: the same F(n), bit for bit, for a node and for the node
// after each possible placement of a pod, without building FreeResources.
//
// frag_j depends on the node's GPUs only through (need_j, gpu_count_j): shapes are grouped by
// that pair, and each group's value is computed once per node state (from the count of GPUs
// with free >= need and the free memory of the others); for a sharing pod each candidate GPU
// changes those counts by at most one GPU, so a candidate costs O(groups), not
// O(shapes x GPUs). Which shapes the node's CPU, memory or GPU model excludes is read from
// masks precomputed per target. F itself is still summed shape by shape in the target's order,
// exactly as fragmentation() does, so the values are identical; to pick the best candidate,
// the candidates are first compared by a grouped approximation with a rigorous error bound,
// and only those that can still hold the minimum are summed exactly.

struct NodeReading;

// A target workload laid out for NodeFragmentation. Built when the target changes (observe(),
// under the model's exclusive lock); read-only afterwards, so concurrent scorers share it.
class CompiledWorkload {
 public:
  CompiledWorkload() = default;
  explicit CompiledWorkload(const TargetWorkload& workload);

  std::size_t size() const { return weight_.size(); }

  // A lower bound of the smallest F after placing a sharing pod (one GPU) of `per_gpu` on any
  // of its candidate GPUs: at most the F(after), as a double, that
  // NodeFragmentation::before_and_minimum returns first for that node and pod, whatever the
  // pod's CPU and memory. Read from the node's `reading` (filled by prepare() for this node's
  // state and this workload) and its GPUs' free amounts, in O(groups + GPUs) instead of summing
  // over the shapes: each group's value is bounded below over every candidate (a GPU with less
  // free than the need: too_small - per_gpu; otherwise at least too_small; a node with fewer
  // GPUs big enough than the group wants: the idle memory after placement, which is also what
  // excluded shapes read and the most any shape reads), summed per group and lowered by more
  // than the rounding of both sums. nullopt where no bound is given: a weight below 0, a
  // target beyond the fast path, a reading not for this workload, no GPU with `per_gpu` free.
  std::optional<double> sharing_after_lower_bound(const NodeReading& reading, const NodeState& node,
                                                  Units per_gpu) const;

 private:
  friend class NodeFragmentation;
  struct Need {
    Units per_gpu = 0;
    bool relative = false;
  };
  struct Group {
    std::uint16_t need = 0;  // index into needs_
    int count = 0;           // GPUs the shapes of the group want
  };
  // Shapes excluded when the node has less of a resource than they want: masks_[i] holds the
  // shapes whose value is above the i smallest distinct values (values_[i - 1]).
  struct Thresholds {
    std::vector<std::int64_t> values;  // distinct, ascending
    std::vector<std::uint64_t> masks;  // (values.size() + 1) x words_
    const std::uint64_t* excluded(std::int64_t free, std::size_t words) const;
  };
  static Thresholds make_thresholds(const std::vector<std::int64_t>& per_shape, std::size_t words);
  // excluded_weight x idle plus, per group, group_weight[g] x the least value any candidate of
  // a sharing pod of `per_gpu` leaves on the node `reading` reads (`least`: the least free
  // amount among the candidates; `capacity`: the node's GPU size; `idle`: the idle memory after
  // placement, above 0). At most each candidate's approximation with these weights; summed in
  // group order.
  double least_after(const NodeReading& reading, Units capacity, Units least, Units per_gpu,
                     Units idle, double excluded_weight, const double* group_weight) const;
  struct ModelSet {
    std::vector<std::string> models;  // sorted
    std::vector<std::uint64_t> mask;  // shapes that name exactly these models
  };

  std::size_t words_ = 0;             // 64-bit words of a shape mask
  std::vector<double> weight_;        // per shape, in target order
  std::vector<std::uint16_t> group_;  // per shape; shapes without GPU are in no_gpu_ instead
  std::vector<Need> needs_;
  std::vector<Group> groups_;
  std::vector<std::uint64_t> no_gpu_;  // shapes that want no GPU: frag = all idle, always
  Thresholds cpu_;
  Thresholds memory_;
  std::vector<ModelSet> model_sets_;
  std::vector<double> group_weight_;  // per group: weight of its shapes (approximations only)
  double no_gpu_weight_ = 0;
  double weight_sum_ = 0;  // of |weight|, for bounds
  // Per shape: its group, or groups_.size() for shapes without GPU (the index into a
  // NodeFragmentation state when nothing else is excluded).
  std::vector<std::uint8_t> plain_index_;
  std::vector<std::uint32_t> group_size_;  // GPU shapes per group
  bool fits_fast_path_ = true;             // within NodeFragmentation's fixed capacities
  bool nonnegative_ = true;                // every weight >= 0 (sharing_after_lower_bound)
};

// What NodeFragmentation reads of a node alone, nothing of the pod: F(node) and the per-need
// counts the candidates start from. A pure function of the node's state (node_state_key.h) and
// the CompiledWorkload, so it can be kept from one pod to the next (fragmentation_cache.h) and
// only the part after placement is computed for a new demand. Filled by prepare(); only for
// nodes whose amounts are all below 2^30 (every node in practice; others are not kept).
struct NodeReading {
  static constexpr std::size_t kMaxNeeds = 32;
  bool filled = false;
  std::uint8_t needs = 0;                          // entries of the arrays below in use
  std::uint16_t first_of_free = 0;                 // GPUs whose free amount no lower-index GPU has
  double before = 0;                               // F(node)
  std::array<std::uint8_t, kMaxNeeds> big_enough;  // GPUs with at least the need free
  std::array<std::int32_t, kMaxNeeds> too_small;   // free memory of the others
  // The free memory of the healthy GPUs, and each GPU's free amount (0 when unhealthy),
  // ascending (the first `gpus` entries; INT32_MAX after them), with a hash of those and the
  // GPU size, and the distinct amounts from each entry on: a sharing pod's candidates without
  // reading the GPUs again, and the key of the F(after) values that SharedExclusions keeps for
  // the nodes of one request.
  std::int32_t idle = 0;
  std::uint8_t gpus = 0;
  std::uint64_t free_hash = 0;
  std::array<std::int32_t, 16> sorted_free;
  std::array<std::uint8_t, 17> distinct_from;  // distinct values in sorted_free[k, gpus)
  // A policy's measure of the node before placement, computed from F(node) == `measure_of` and
  // the node's state (as the reading is), kept by the policy for the pods after; a NaN
  // `measure_of` (as keep_reading leaves it): none kept. Mutable: a cache that bounds computed
  // from a const reading fill too, under the same lock as the reading.
  mutable double measure_of = std::numeric_limits<double>::quiet_NaN();
  mutable double measure = 0;

  // NodeFragmentation::before_and_minimum's F(after) values for the last sharing pod scored
  // with this reading, with all they depend on besides the node's state and the workload: the
  // pod's GPU memory, the shapes the node excludes after placement (by the pod's CPU, memory and
  // the node's model) and the margin. A later pod that asks the same of the GPUs, with CPU or
  // memory that exclude the same shapes (a demand never seen before that differs in those), is
  // answered from it: the same bits (NodeFragmentation::prepare_to_score then prepares nothing
  // else of the node). Kept only for targets of at most kMaxWords x 64 shapes and
  // windows of at most kMaxWindow; window 0: none kept. Dropped with the reading. With
  // `lower_bound_only`, after[0] is instead a lower bound of those values
  // (NodeFragmentation::minimum_lower_bound's), and window is 1.
  struct Minimum {
    static constexpr std::size_t kMaxWords = 2;
    static constexpr int kMaxWindow = 4;
    std::uint8_t window = 0;
    bool lower_bound_only = false;
    Units per_gpu = 0;
    double margin = 0;
    std::array<std::uint64_t, kMaxWords> excluded;
    std::array<double, kMaxWindow> after;
  };
  Minimum minimum;
};

// Weights for NodeFragmentation's approximation of F after a candidate: of the shapes the node
// after placement excludes, and of the others per group. A pure function of those shapes.
struct ApproximationWeights {
  static constexpr std::size_t kMaxGroups = 64;
  double excluded;
  const double* group;  // per group (into storage, or the CompiledWorkload's)
  std::array<double, kMaxGroups> storage;
  std::array<bool, kMaxGroups> hosted;  // some shape of the group is not excluded
};

// What NodeFragmentation derives from the set of shapes a node excludes after placement (by the
// pod's CPU and memory and the node's model), shared by the nodes of one request: the shapes'
// indexes into a state's values and the approximation's weights. A request meets few such sets
// (the nodes' CPU and memory fall between the same few thresholds of the target's shapes), so
// each is built once, not once per node. Keyed on the set itself: the same values, bit for bit.
//
// Also the F(after) values of before_and_minimum for the nodes a request prepares in full after
// a bound from their reading (prepare_to_score's bound_first): nodes of one GPU size whose GPUs
// have the same free amounts and which exclude the same shapes after placement have the same
// values, bit for bit, and nodes that tie at the top levels are mostly such. Keyed on all of
// that (compared in full, not by hash), the pod's GPU memory and the margin; at most kAfterSlots
// entries a request, the others computed as without it.
//
// Begun per request for one CompiledWorkload (begin() drops every set and value: the workload
// may have moved); at most kMaxSets sets, the others built per node as without it. Targets of
// at most kMaxWords x 64 shapes. Not thread-safe; the owner (FragmentationCache) serialises its
// use.
class SharedExclusions {
 public:
  static constexpr std::size_t kMaxSets = 16;
  static constexpr std::size_t kMaxWords = 2;
  static constexpr std::size_t kAfterSlots = 1024;
  void begin() {
    count_ = 0;
    last_ = 0;
    ++generation_;
    after_count_ = 0;
  }
  // Sets kept in this request (for tests).
  std::size_t size() const { return count_; }
  // F(after) values kept in this request (for tests).
  std::size_t after_size() const { return after_count_; }

 private:
  friend class NodeFragmentation;
  struct Set {
    std::array<std::uint64_t, kMaxWords> excluded;
    bool weighed = false;  // weights filled
    ApproximationWeights weights;
    std::array<std::uint8_t, kMaxWords * 64> index;
  };
  // The kept set for `excluded` (`words` words, at most kMaxWords), with `found`; else a new one
  // to fill (`found` false); null when kMaxSets are kept.
  Set* find(const std::uint64_t* excluded, std::size_t words, bool& found);

  // What the F(after) values depend on besides the workload: the set of shapes excluded after
  // placement (an index into sets_, or kMaxSets for none beyond those that want no GPU), the
  // node's GPU size and free amounts (its reading's), the pod's GPU memory and the margin.
  struct AfterKey {
    std::size_t set;
    Units capacity;
    Units per_gpu;
    double margin;
    const NodeReading* reading;
  };
  struct After {
    std::uint64_t generation = 0;  // begin()'s count when kept; 0: never
    std::uint64_t hash;
    std::size_t set;
    Units capacity;
    Units per_gpu;
    double margin;
    std::uint8_t gpus;
    std::array<std::int32_t, 16> sorted_free;
    int window;
    std::array<double, NodeReading::Minimum::kMaxWindow> after;
  };
  // The values kept for `key`, else null.
  const After* find_after(const AfterKey& key) const;
  // Keeps `window` values (at most Minimum::kMaxWindow) for `key`, where there is room.
  void keep_after(const AfterKey& key, int window, std::span<const double> after);
  std::uint64_t after_hash(const AfterKey& key) const;

  std::array<Set, kMaxSets> sets_;
  std::size_t count_ = 0;
  std::size_t last_ = 0;  // the set find() returned last (looked at first: nodes come in runs)
  std::uint64_t generation_ = 1;  // never 0: a slot of generation 0 is empty
  std::size_t after_count_ = 0;
  std::vector<After> after_;  // kAfterSlots, open addressing; allocated on first use
};

// One node as one pod sees it, through a CompiledWorkload. A scratch value on the stack.
class NodeFragmentation {
 public:
  static constexpr int kMaxGpus = 16;
  static constexpr std::size_t kMaxNeeds = NodeReading::kMaxNeeds;
  static constexpr std::size_t kMaxGroups = ApproximationWeights::kMaxGroups;
  static constexpr std::size_t kMaxWords = 16;  // 1 024 shapes

  // Reads the node and the pod; false when the node or the target is beyond the fixed
  // capacities above (the caller then uses the reference computation). With `reading`: a
  // filled one is used instead of reading the node again (it must be this node's state's, for
  // this workload); an empty one is filled. The results are the same bits either way.
  bool prepare(const CompiledWorkload& workload, const NodeState& node, const PodDemand& pod,
               NodeReading* reading = nullptr);
  // prepare() for a caller that then reads only before(), total_before(), the CPU and memory
  // accessors, candidates(), fragmentation_bound() and before_and_minimum() (the policies'
  // score()): where a filled `reading` keeps the minimum for this sharing pod's GPU memory and
  // the shapes the node excludes after placement, the rest is read only if before_and_minimum()
  // finds it kept for another margin. The same results, bit for bit. The node and the pod must
  // outlive the last call.
  // With `shared` (begun for this request), the shapes' indexes and weights after placement
  // are read from it where another node left them, and left there.
  // With `bound_first` (a caller that asks minimum_lower_bound() first and needs the rest only
  // where the bound is not low enough), a filled reading defers the rest for a sharing pod
  // even where it keeps no minimum for it: minimum_lower_bound() then bounds F(after) from the
  // reading alone (no candidate's approximation), and before_and_minimum() prepares in full.
  bool prepare_to_score(const CompiledWorkload& workload, const NodeState& node,
                        const PodDemand& pod, NodeReading* reading,
                        SharedExclusions* shared = nullptr, bool bound_first = false) {
    shared_ = shared;
    if (reading != nullptr &&
        (bound_first ||
         (reading->minimum.window != 0 && reading->minimum.per_gpu == pod.per_gpu)) &&
        prepare_deferred(workload, node, pod, *reading, bound_first)) {
      return true;
    }
    return prepare(workload, node, pod, reading);
  }

  // F(node), as fragmentation(FreeResources::of(node), target).
  double before() const;
  Units total_before() const { return total_; }
  // CPU and memory FreeResources::take(pod) leaves (max() stays max(): not tracked).
  std::int64_t cpu_before() const { return cpu_before_; }
  std::int64_t memory_before() const { return memory_before_; }
  std::int64_t cpu_after() const { return cpu_after_; }
  std::int64_t memory_after() const { return memory_after_; }

  // Pods that want no GPU or whole GPUs: F(node), and F after FreeResources::take(pod, gpus),
  // in one pass.
  void before_and_after(std::span<const int> gpus, double& before, double& after) const;

  // Sharing pods (one GPU): the candidate GPUs as the policies try them (healthy, enough
  // free, ascending index, one per distinct free amount) and F after taking the pod on each.
  int candidates() const { return candidate_count_; }
  int candidate_gpu(int k) const { return candidate_gpu_[static_cast<std::size_t>(k)]; }
  double candidate_after(int k) const;
  // F after each candidate, into after[0 .. candidates()).
  void candidates_after(std::span<double> after) const;
  // For scoring, where only the best candidate counts: F(node) into `before`, and into
  // after[0 .. returned count) the exact F(after) of every candidate that can have the
  // smallest (each distinct value once; usually one). Every other candidate's exact F(after)
  // is above the smallest by more than `margin` (in F units). With a reading (prepare), read
  // from and kept in its NodeReading::Minimum.
  int before_and_minimum(double margin, double& before, std::span<double> after);
  // For a caller that needs before_and_minimum(margin, ...) only where its F(after) values can
  // be small: a lower bound of every F(after) value it would give, from the approximation it
  // computes first (kept for it, so that it is not computed twice), or after a deferred
  // preparation (prepare_to_score's bound_first) from the reading alone. nullopt where
  // before_and_minimum needs no approximation (the reading keeps the answer, fewer than two
  // candidates of a node prepared in full, amounts of 2^30 or more) or F(node) is not known
  // without summing it (no filled reading). Where it gives a bound, before() reads F(node)
  // without summing. The bound is kept in the reading for this pod.
  std::optional<double> minimum_lower_bound(double margin);
  // An upper bound of F(node) and of F(after): the idle memory times the sum of the weights.
  double fragmentation_bound() const {
    return static_cast<double>(total_) * workload_->weight_sum_;
  }

 private:
  // What a shape of each group contributes in one state of the node; [groups] = all idle.
  struct State {
    Units total;
    std::array<double, kMaxGroups + 1> value;  // only the first groups + 1 are filled
  };
  void fill_state(const std::array<int, kMaxNeeds>& big_enough,
                  const std::array<Units, kMaxNeeds>& too_small, Units total, State& state) const;
  void candidate_state(int k, State& state) const;
  bool same_state(const State& a, const State& b) const;
  // prepare_to_score()'s deferral: true (deferred_) where `reading` keeps a minimum for this
  // pod's GPU memory and the shapes excluded after placement, or (`bound_first`) where it is
  // filled; false when the node must be prepared in full.
  bool prepare_deferred(const CompiledWorkload& workload, const NodeState& node,
                        const PodDemand& pod, NodeReading& reading, bool bound_first);
  // minimum_lower_bound() of a deferred preparation, from the reading's per-need counts: per
  // group, the least value any candidate can leave, weighted by the shapes not excluded after
  // placement.
  double reading_lower_bound();
  // prepare() after read_node(): the rest of the node and pod. `after_marked`: the shapes
  // excluded after placement are marked already (a deferred preparation of this node and pod,
  // whose reading is filled: the shapes before placement are not needed).
  void prepare_read(const NodeState& node, const PodDemand& pod, NodeReading* reading,
                    bool after_marked);
  // What both preparations read first: the node's free amounts (read_node only), and its CPU
  // and memory before and after `pod`.
  void read_node(const CompiledWorkload& workload, const NodeState& node, const PodDemand& pod);
  void read_cpu_memory(const CompiledWorkload& workload, const NodeState& node,
                       const PodDemand& pod);
  // A deferred preparation in full: the free amounts (not read where the reading answered for
  // them), then prepare_read().
  void prepare_rest();
  // prepare()'s steps: the shapes the node cannot host after placement (CPU, memory, model),
  // and with Before before it; the sharing pod's candidate GPUs; each state's shape index; the
  // reading to keep.
  template <bool Before>
  void mark_exclusions(const NodeState& node);
  void pick_candidates(Units per_gpu, std::uint32_t first_of_free);
  // (`marked_before`: excluded_before_ is marked; else only a known reading's F(node) is read.)
  void choose_indexes(bool known, bool marked_before);
  void keep_reading(NodeReading& reading, std::uint32_t first_of_free);
  // Keeps before_and_minimum's values in the reading's Minimum (windows of at most kMaxWindow).
  void keep_minimum(double margin, int window, std::span<const double> after);
  // Out of line: prepare() in full what prepare_to_score() deferred, then before_and_minimum;
  // after a bound from the reading, the values shared_ keeps for this key where it has them.
  [[gnu::noinline]] int prepare_and_minimum(double margin, double& before, std::span<double> after);
  // before_and_minimum without the reading's Minimum.
  int compute_minimum(double margin, double& before, std::span<double> after);
  // compute_minimum's approximation of each candidate's F(after) (two or more candidates, all
  // amounts below 2^30), into the members below.
  void approximate();
  // Whether `kept` is for this pod (GPU memory, shapes excluded after placement) and `margin`:
  // its before_and_minimum, or (lower_bound_only) its minimum_lower_bound.
  bool kept_for(const NodeReading::Minimum& kept, double margin) const;
  // Whether `excluded` holds only the shapes that want no GPU (the plain index applies).
  bool plain(const std::array<std::uint64_t, kMaxWords>& excluded) const;
  void build_index(const std::uint64_t* excluded, std::uint8_t* out) const;
  // F of a state: weight x value[index[j]] over the shapes j, added in the target's order.
  double sum(const std::uint8_t* index, const State& state) const;
  void sum_two(const std::uint8_t* index_a, const State& a, const std::uint8_t* index_b,
               const State& b, double& sum_a, double& sum_b) const;
  // F(node) and F of `state` after placement (only the latter summed when F(node) is known).
  void before_and(const State& state, double& before, double& after) const;
  using Weights = ApproximationWeights;
  void approximation_weights(Weights& weights) const;
  // The shapes' indexes after placement and the approximation's weights for excluded_after_:
  // from shared_ where another node left them (else left there), or built in this object.
  const std::uint8_t* index_after_for_excluded();
  const Weights& weights_for_excluded(Weights& storage) const;
  // The candidates' group values: value[g][k] for candidate k (columns of States).
  using Lanes = std::int32_t __attribute__((vector_size(16)));  // four candidates
  struct Columns {
    std::array<std::array<Lanes, kMaxGpus / 4>, kMaxGroups> value;
  };
  template <int V>
  void approximate_candidates(const Weights& weights, Columns& columns,
                              std::array<double, kMaxGpus>& approx) const;

  const CompiledWorkload* workload_ = nullptr;
  // The request's shared exclusions (prepare_to_score), and the set kept there for
  // excluded_after_ (choose_indexes; null: built in this object).
  SharedExclusions* shared_ = nullptr;
  SharedExclusions::Set* exclusion_ = nullptr;
  // The reading of this node's state (filled, or filled by prepare), where its Minimum can be
  // kept (narrow_, at most Minimum::kMaxWords words of shapes); else null.
  NodeReading* reading_ = nullptr;
  // prepare_to_score() read only the CPU and memory, excluded_after_, and from the reading F(node),
  // the idle memory and the candidates' count (free_ is not read): before_and_minimum()
  // prepares the node and pod below in full if the kept minimum does not answer it,
  // minimum_lower_bound() if it does not keep one and cannot bound from the reading.
  bool deferred_ = false;
  const NodeState* node_ = nullptr;
  const PodDemand* pod_ = nullptr;
  Units least_fit_ = 0;  // a deferred preparation's least free amount among its candidates
  // The index of excluded_after_ in shared_ (SharedExclusions::AfterKey::set) where
  // reading_lower_bound() found it, else -1: the key of the shared F(after) values.
  int after_set_ = -1;
  int gpu_count_ = 0;
  std::array<Units, kMaxGpus> free_;
  Units total_ = 0;
  std::int64_t cpu_before_ = 0;
  std::int64_t memory_before_ = 0;
  std::int64_t cpu_after_ = 0;
  std::int64_t memory_after_ = 0;
  bool pod_wants_gpu_ = false;
  bool narrow_ = false;  // every amount on the node is below 2^30
  Units per_gpu_ = 0;
  std::array<Units, kMaxNeeds> need_;
  std::array<int, kMaxNeeds> big_enough_;
  std::array<Units, kMaxNeeds> too_small_;
  std::array<std::uint64_t, kMaxWords> excluded_before_;
  std::array<std::uint64_t, kMaxWords> excluded_after_;
  State before_state_;  // only when !before_known_ (else built where needed)
  // F(node) from a NodeReading: before() returns it, and only F(after) is summed.
  bool before_known_ = false;
  double before_value_ = 0;
  // Whether the node after placement excludes only the shapes that want no GPU, and whether it
  // excludes the same shapes as before (false where those before are not marked).
  bool plain_after_ = false;
  bool same_exclusions_ = false;
  // Per shape, the index into a state's values (CompiledWorkload::plain_index_ when the node
  // excludes only the shapes that want no GPU, else the storage below).
  const std::uint8_t* index_before_ = nullptr;
  const std::uint8_t* index_after_ = nullptr;
  std::array<std::uint8_t, kMaxWords * 64> index_before_storage_;
  std::array<std::uint8_t, kMaxWords * 64> index_after_storage_;
  // (Arrays are filled before they are read: not zeroed, as this is made for every node.)
  int candidate_count_ = 0;
  std::array<int, kMaxGpus> candidate_gpu_;
  std::array<Units, kMaxGpus> candidate_free_;
  // approximate()'s results, for the candidates of this preparation (reset by each prepare).
  bool approximated_ = false;
  const Weights* approximation_weights_ = nullptr;  // approximation_storage_ or a shared set's
  Weights approximation_storage_;
  Columns columns_;
  alignas(16) std::array<double, kMaxGpus> approximation_;
  double lowest_ = 0;        // the smallest approximation
  double relative_ = 0;      // the error allowance relative to the values compared
  double cancellation_ = 0;  // and the absolute one (weights with excluded shapes taken off)
};

}  // namespace gpushare::core
