#include "gpushare/core/fragmentation.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>

namespace gpushare::core {

FreeResources FreeResources::of(const NodeState& node) {
  FreeResources free;
  free.cpu_free = node.cpu_free();
  free.memory_free = node.memory_free();
  free.gpu_model = node.spec().gpu_model;
  free.gpu_capacity = node.spec().memory_per_gpu;
  free.gpu_free.reserve(node.gpus().size());
  for (const auto& gpu : node.gpus()) free.gpu_free.push_back(gpu.healthy ? gpu.free() : 0);
  return free;
}

Units FreeResources::total_gpu_free() const {
  Units total = 0;
  for (Units g : gpu_free) total += g;
  return total;
}

void FreeResources::take(const PodDemand& pod, std::span<const int> gpus) {
  constexpr auto untracked = std::numeric_limits<std::int64_t>::max();
  if (cpu_free != untracked) cpu_free -= pod.cpu_milli;
  if (memory_free != untracked) memory_free -= pod.memory;
  if (!pod.wants_gpu()) return;
  for (int gpu : gpus) gpu_free[static_cast<std::size_t>(gpu)] -= pod.per_gpu;
}

namespace {

// frag_j given the node's total idle GPU memory, computed once per node by the caller.
Units shape_fragmentation(const FreeResources& node, const WorkloadShape& shape, Units total) {
  if (!shape.wants_gpu() || node.cpu_free < shape.cpu_milli || node.memory_free < shape.memory ||
      !shape.allows_model(node.gpu_model)) {
    return total;
  }
  const Units need = shape.per_gpu_on(node.gpu_capacity);
  int big_enough = 0;
  Units too_small = 0;
  for (Units g : node.gpu_free) {
    if (g >= need) {
      ++big_enough;
    } else {
      too_small += g;
    }
  }
  return big_enough >= shape.gpu_count ? too_small : total;
}

}  // namespace

Units shape_fragmentation(const FreeResources& node, const WorkloadShape& shape) {
  return shape_fragmentation(node, shape, node.total_gpu_free());
}

double fragmentation(const FreeResources& node, const TargetWorkload& workload) {
  const Units total = node.total_gpu_free();
  if (total == 0) return 0;  // nothing idle, nothing fragmented
  double sum = 0;
  for (const auto& [shape, weight] : workload) {
    sum += weight * static_cast<double>(shape_fragmentation(node, shape, total));
  }
  return sum;
}

}  // namespace gpushare::core

// ---------------------------------------------------------------------------------------------
// The fast path.

namespace gpushare::core {
namespace {

constexpr std::int64_t kNotTracked = std::numeric_limits<std::int64_t>::max();

void set_bit(std::uint64_t* mask, std::size_t bit) {
  mask[bit / 64] |= std::uint64_t{1} << (bit % 64);
}
bool has_bit(const std::uint64_t* mask, std::size_t bit) {
  return (mask[bit / 64] >> (bit % 64)) & 1U;
}

// Small fixed-width kernels in GCC/Clang vector types (SSE2 on x86-64, NEON on arm64): four
// 32-bit lanes per vector, V vectors (8 or 16 lanes). Only for nodes whose amounts are all
// below 2^30; lanes past the node's GPUs hold 0.
using I32x4 = std::int32_t __attribute__((vector_size(16)));
using I32x2 = std::int32_t __attribute__((vector_size(8)));
using F64x2 = double __attribute__((vector_size(16)));

inline std::int32_t lane_sum(I32x4 v) {
  return v[0] + v[1] + v[2] + v[3];
}

// GPUs with at least `need` (> 0) free, and the free memory of the others. Branch-free: which
// GPUs pass is data, not a pattern the branch predictor could learn. Padding lanes hold 0:
// too small, adding nothing, and counted out of the lanes below.
template <int V>
inline void count_lanes(const I32x4* free, std::int32_t need, int& big_enough, Units& too_small) {
  const I32x4 n = I32x4{} + need;
  I32x4 small_count{};
  I32x4 small_sum{};
  for (int v = 0; v < V; ++v) {
    const I32x4 is_small = free[v] < n;  // all ones or zero per lane
    small_count += is_small;             // minus one per small lane
    small_sum += free[v] & is_small;
  }
  big_enough = 4 * V + lane_sum(small_count);  // every lane but the small (padding included)
  too_small = lane_sum(small_sum);
}

// Whether a lane before `i` holds `value`.
template <int V>
inline bool earlier_equal(const I32x4* free, int i, std::int32_t value) {
  const I32x4 target = I32x4{} + value;
  const I32x4 before = I32x4{} + i;
  I32x4 any{};
  for (int v = 0; v < V; ++v) {
    const I32x4 lane = I32x4{0, 1, 2, 3} + 4 * v;
    any |= (free[v] == target) & (lane < before);
  }
  return (any[0] | any[1] | any[2] | any[3]) != 0;
}

// The same in 64 bits over the node's GPUs.
template <class T>
inline void count_gpus(const T* free, int gpu_count, T need, int& big_enough, Units& too_small) {
  T big = 0;
  T small = 0;
  for (int i = 0; i < gpu_count; ++i) {
    const T g = free[i];
    const T is_small = -static_cast<T>(g < need);  // all ones or zero
    big += 1 + is_small;
    small += g & is_small;
  }
  big_enough = static_cast<int>(big);
  too_small = small;
}

// The steps of NodeFragmentation::prepare that read only the node's free amounts.

// Each GPU's free memory (0 when unhealthy) into `free`; returns their sum. Inlined into both
// callers: prepare() runs it for every node scored.
[[gnu::always_inline]] inline Units read_free(
    const NodeState& node, std::array<Units, NodeFragmentation::kMaxGpus>& free) {
  Units total = 0;
  const GpuState* gpus = node.gpus().data();
  for (int i = 0; i < node.gpu_count(); ++i) {
    const GpuState& gpu = gpus[i];
    // gpu.healthy ? gpu.free() : 0, without branches
    const Units amount = gpu.used >= gpu.capacity ? 0 : gpu.capacity - gpu.used;
    free[static_cast<std::size_t>(i)] = amount & -static_cast<Units>(gpu.healthy);
    total += free[static_cast<std::size_t>(i)];
  }
  return total;
}

// GPUs with at least `need` free and the free memory of the others, in 32 bits (`free32`, 8 or
// 16 lanes) where every amount is below 2^30 (`narrow`), else in 64 bits.
void count_need(Units need, const Units* free, const I32x4* free32, int gpu_count, Units total,
                bool narrow, bool wide, int& big_enough, Units& too_small) {
  if (!narrow) {
    count_gpus(free, gpu_count, need, big_enough, too_small);
  } else if (need <= 0) {  // every GPU is big enough
    big_enough = gpu_count;
    too_small = 0;
  } else if (need > total) {  // none is
    big_enough = 0;
    too_small = total;
  } else if (wide) {
    count_lanes<4>(free32, static_cast<std::int32_t>(need), big_enough, too_small);
  } else {
    count_lanes<2>(free32, static_cast<std::int32_t>(need), big_enough, too_small);
  }
}

// Bit i set when no GPU below i has GPU i's free amount (the candidates a sharing pod tries).
std::uint32_t first_of_each_free(const Units* free, const I32x4* free32, int gpu_count, bool narrow,
                                 bool wide) {
  std::uint32_t first_of_free = 0;
  for (int i = 0; i < gpu_count; ++i) {
    const Units f = free[i];
    bool first = true;
    if (narrow) {
      first = wide ? !earlier_equal<4>(free32, i, static_cast<std::int32_t>(f))
                   : !earlier_equal<2>(free32, i, static_cast<std::int32_t>(f));
    } else {
      for (int e = 0; e < i; ++e) first &= free[e] != f;
    }
    first_of_free |= static_cast<std::uint32_t>(first) << i;
  }
  return first_of_free;
}

}  // namespace

CompiledWorkload::Thresholds CompiledWorkload::make_thresholds(
    const std::vector<std::int64_t>& per_shape, std::size_t words) {
  Thresholds t;
  t.values = per_shape;
  std::sort(t.values.begin(), t.values.end());
  t.values.erase(std::unique(t.values.begin(), t.values.end()), t.values.end());
  t.masks.assign((t.values.size() + 1) * words, 0);
  for (std::size_t j = 0; j < per_shape.size(); ++j) {
    const auto index = static_cast<std::size_t>(
        std::lower_bound(t.values.begin(), t.values.end(), per_shape[j]) - t.values.begin());
    // Excluded whenever fewer than index + 1 distinct values are <= the node's free amount.
    for (std::size_t pos = 0; pos <= index; ++pos) set_bit(&t.masks[pos * words], j);
  }
  return t;
}

const std::uint64_t* CompiledWorkload::Thresholds::excluded(std::int64_t free,
                                                            std::size_t words) const {
  // Shapes wanting more than `free`: those whose value is above the values <= free, i.e.
  // std::upper_bound, without branches (which values pass is data).
  std::size_t pos = 0;
  std::size_t length = values.size();
  if (length > 0 && free >= values[length - 1]) {
    pos = length;  // the node has enough for every shape: the usual case
  } else {
    while (length > 0) {
      const std::size_t half = length / 2;
      const bool above = values[pos + half] <= free;
      pos += above ? half + 1 : 0;
      length = above ? length - half - 1 : half;
    }
  }
  return &masks[pos * words];
}

CompiledWorkload::CompiledWorkload(const TargetWorkload& workload) {
  const std::size_t n = workload.size();
  words_ = std::max<std::size_t>(1, (n + 63) / 64);
  weight_.reserve(n);
  group_.reserve(n);
  no_gpu_.assign(words_, 0);
  std::vector<std::int64_t> cpu(n);
  std::vector<std::int64_t> memory(n);
  for (std::size_t j = 0; j < n; ++j) {
    // Not a structured binding: clang (the fuzz build) cannot capture one in the lambdas below.
    const auto& shape = workload[j].shape;
    const auto& weight = workload[j].weight;
    weight_.push_back(weight);
    cpu[j] = shape.cpu_milli;
    memory[j] = shape.memory;
    if (!shape.allowed_models.empty()) {
      auto set = std::find_if(model_sets_.begin(), model_sets_.end(),
                              [&](const ModelSet& m) { return m.models == shape.allowed_models; });
      if (set == model_sets_.end()) {
        model_sets_.push_back({shape.allowed_models, std::vector<std::uint64_t>(words_, 0)});
        set = model_sets_.end() - 1;
      }
      set_bit(set->mask.data(), j);
    }
    if (!shape.wants_gpu()) {
      set_bit(no_gpu_.data(), j);
      group_.push_back(0);
      no_gpu_weight_ += weight;
      continue;
    }
    const Need need{shape.per_gpu, shape.relative};
    auto n_it = std::find_if(needs_.begin(), needs_.end(), [&](const Need& x) {
      return x.per_gpu == need.per_gpu && x.relative == need.relative;
    });
    if (n_it == needs_.end()) n_it = needs_.insert(needs_.end(), need);
    const auto need_index = static_cast<std::uint16_t>(
        std::min<std::size_t>(static_cast<std::size_t>(n_it - needs_.begin()),
                              std::numeric_limits<std::uint16_t>::max()));
    auto g_it = std::find_if(groups_.begin(), groups_.end(), [&](const Group& g) {
      return g.need == need_index && g.count == shape.gpu_count;
    });
    if (g_it == groups_.end()) {
      g_it = groups_.insert(groups_.end(), Group{need_index, shape.gpu_count});
      group_weight_.push_back(0);
    }
    const auto group_index = static_cast<std::size_t>(g_it - groups_.begin());
    group_.push_back(static_cast<std::uint16_t>(std::min<std::size_t>(group_index, 0xffff)));
    group_weight_[group_index] += weight;
  }
  for (double w : weight_) {
    weight_sum_ += std::abs(w);
    nonnegative_ &= w >= 0;
  }
  group_size_.assign(groups_.size(), 0);
  for (std::size_t j = 0; j < n; ++j) {
    if (!has_bit(no_gpu_.data(), j)) ++group_size_[group_[j]];
  }
  if (groups_.size() < 255) {
    // Padded to whole words of eight shapes (NodeFragmentation::build_index reads them so).
    plain_index_.assign((n + 7) / 8 * 8, 0);
    for (std::size_t j = 0; j < n; ++j) {
      plain_index_[j] =
          static_cast<std::uint8_t>(has_bit(no_gpu_.data(), j) ? groups_.size() : group_[j]);
    }
  }
  cpu_ = make_thresholds(cpu, words_);
  memory_ = make_thresholds(memory, words_);
  fits_fast_path_ = needs_.size() <= NodeFragmentation::kMaxNeeds &&
                    groups_.size() <= NodeFragmentation::kMaxGroups &&
                    words_ <= NodeFragmentation::kMaxWords;
}

namespace {

// A sharing pod's candidates on the node `reading` reads, as pick_candidates picks them (one per
// distinct free amount of at least per_gpu), counted, and the least free among them into
// `least` (max() where none).
int reading_candidates(const NodeReading& reading, Units per_gpu, Units& least) {
  // (Over all 16 entries, a fixed count that vectorises: the padding is never below.)
  const auto need =
      static_cast<std::int32_t>(std::min<Units>(per_gpu, std::numeric_limits<std::int32_t>::max()));
  int below = 0;
  for (const std::int32_t amount : reading.sorted_free) below += static_cast<int>(amount < need);
  const int count = reading.distinct_from[static_cast<std::size_t>(below)];
  least = count > 0 ? reading.sorted_free[static_cast<std::size_t>(below)]
                    : std::numeric_limits<Units>::max();
  return count;
}

}  // namespace

// Inlined into both callers: the bound from a reading runs for most nodes a floor rules out.
[[gnu::always_inline]] inline double CompiledWorkload::least_after(
    const NodeReading& reading, Units capacity, Units least, Units per_gpu, Units idle,
    double excluded_weight, const double* group_weight) const {
  // Per group, the least value any candidate leaves (NodeFragmentation::candidate_state). A
  // candidate f below the need n takes per_gpu off the too-small memory; one that stays at least
  // n after placement leaves it; one that drops below n adds f - per_gpu to it and takes one
  // big-enough GPU away. A group short of big-enough GPUs is idle, which is at least any of
  // these. So: below n, the least candidate's value; else, where the largest candidate stays at
  // least n, the too-small memory; else every candidate drops, and the least one adds least.
  // Needs above drop_from and at most least: every candidate drops below them (none where
  // drop_from >= least, the usual case, which keeps to the shorter loop).
  const Units drop_from = reading.sorted_free[static_cast<std::size_t>(reading.gpus) - 1] - per_gpu;
  std::array<Units, NodeReading::kMaxNeeds> hosted;  // per need, where enough GPUs are big
  // WorkloadShape::per_gpu_on
  const auto need = [&](std::size_t d) {
    return needs_[d].relative ? (needs_[d].per_gpu * capacity + 999) / 1000 : needs_[d].per_gpu;
  };
  // big(d): the need's big-enough GPUs after placement.
  const auto sum = [&](const auto& big) {
    double bound = excluded_weight * static_cast<double>(idle);
    for (std::size_t g = 0; g < groups_.size(); ++g) {
      const std::size_t d = groups_[g].need;
      const Units value = big(d) >= groups_[g].count ? hosted[d] : idle;
      bound += group_weight[g] * static_cast<double>(value);
    }
    return bound;
  };
  if (drop_from >= least) {
    for (std::size_t d = 0; d < needs_.size(); ++d) {
      const Units small = reading.too_small[d];
      hosted[d] = least < need(d) ? small - per_gpu : small;
    }
    return sum([&](std::size_t d) { return static_cast<int>(reading.big_enough[d]); });
  }
  std::array<int, NodeReading::kMaxNeeds> big;
  for (std::size_t d = 0; d < needs_.size(); ++d) {
    const Units n = need(d);
    const Units small = reading.too_small[d];
    const bool drops = drop_from < n && n <= least;
    hosted[d] = least < n ? small - per_gpu : drops ? small + least - per_gpu : small;
    big[d] = reading.big_enough[d] - (drops ? 1 : 0);
  }
  return sum([&](std::size_t d) { return big[d]; });
}

std::optional<double> CompiledWorkload::sharing_after_lower_bound(const NodeReading& reading,
                                                                  const NodeState& node,
                                                                  Units per_gpu) const {
  if (!nonnegative_ || !fits_fast_path_ || !reading.filled || reading.needs != needs_.size() ||
      node.gpu_count() > NodeFragmentation::kMaxGpus || per_gpu <= 0) {
    return std::nullopt;
  }
  // The idle memory as prepare() reads it, and the candidate with the least free (best fit).
  Units least = 0;
  if (reading_candidates(reading, per_gpu, least) == 0) return std::nullopt;
  const Units idle = reading.idle - per_gpu;  // after placement, whichever candidate
  if (idle <= 0) return 0.0;                  // nothing idle: F(after) is exactly 0
  const double bound = least_after(reading, node.spec().memory_per_gpu, least, per_gpu, idle,
                                   no_gpu_weight_, group_weight_.data());
  // Every term of both sums is >= 0 (weights >= 0, values >= 0). The exact F(after) adds
  // size() products in target order (within (2 size() + 1) u of its terms' exact sum, u =
  // 2^-53), which is at least the bound's exact sum; the bound regroups those terms (each
  // group's weight summed, then multiplied) and is within (size() + groups + 3) u of its exact
  // sum. Taking 2^-46 (size() + 16) = 128 u (size() + 16) off covers both with room to spare.
  const double slack = 0x1p-46 * (static_cast<double>(size()) + 16.0);
  return bound - bound * slack;
}

SharedExclusions::Set* SharedExclusions::find(const std::uint64_t* excluded, std::size_t words,
                                              bool& found) {
  const auto same = [&](const Set& kept) {
    bool equal = true;
    for (std::size_t w = 0; w < words; ++w) equal &= kept.excluded[w] == excluded[w];
    return equal;
  };
  found = true;
  if (last_ < count_ && same(sets_[last_])) return &sets_[last_];
  for (std::size_t k = 0; k < count_; ++k) {
    if (same(sets_[k])) {
      last_ = k;
      return &sets_[k];
    }
  }
  found = false;
  if (count_ == kMaxSets) return nullptr;
  last_ = count_;
  Set& added = sets_[count_++];
  for (std::size_t w = 0; w < words; ++w) added.excluded[w] = excluded[w];
  added.weighed = false;
  return &added;
}

namespace {

constexpr std::size_t kAfterProbes = 8;

// Spreads the bits of `x` over the word (a multiply and xor-shift; for hash tables, not for
// anything adversarial: the keys are compared in full).
std::uint64_t mix(std::uint64_t x) {
  x *= 0xff51afd7ed558ccdULL;
  return x ^ (x >> 32);
}

}  // namespace

std::uint64_t SharedExclusions::after_hash(const AfterKey& key) const {
  std::uint64_t hash = key.reading->free_hash ^ (static_cast<std::uint64_t>(key.set) << 56);
  hash = mix(hash ^ static_cast<std::uint64_t>(key.per_gpu));
  return mix(hash ^ std::bit_cast<std::uint64_t>(key.margin));
}

const SharedExclusions::After* SharedExclusions::find_after(const AfterKey& key) const {
  if (after_.empty()) return nullptr;
  const std::uint64_t hash = after_hash(key);
  const NodeReading& reading = *key.reading;
  for (std::size_t probe = 0; probe < kAfterProbes; ++probe) {
    const After& entry = after_[(hash + probe) & (kAfterSlots - 1)];
    if (entry.generation != generation_) return nullptr;  // an empty slot ends the run
    if (entry.hash == hash && entry.set == key.set && entry.capacity == key.capacity &&
        entry.per_gpu == key.per_gpu && entry.margin == key.margin && entry.gpus == reading.gpus &&
        std::equal(reading.sorted_free.begin(), reading.sorted_free.begin() + reading.gpus,
                   entry.sorted_free.begin())) {
      return &entry;
    }
  }
  return nullptr;
}

void SharedExclusions::keep_after(const AfterKey& key, int window, std::span<const double> after) {
  if (window <= 0 || window > NodeReading::Minimum::kMaxWindow || after_count_ >= kAfterSlots / 2)
    return;
  if (after_.empty()) after_.resize(kAfterSlots);
  const std::uint64_t hash = after_hash(key);
  for (std::size_t probe = 0; probe < kAfterProbes; ++probe) {
    After& entry = after_[(hash + probe) & (kAfterSlots - 1)];
    if (entry.generation == generation_) continue;
    const NodeReading& reading = *key.reading;
    entry.generation = generation_;
    entry.hash = hash;
    entry.set = key.set;
    entry.capacity = key.capacity;
    entry.per_gpu = key.per_gpu;
    entry.margin = key.margin;
    entry.gpus = reading.gpus;
    std::copy(reading.sorted_free.begin(), reading.sorted_free.begin() + reading.gpus,
              entry.sorted_free.begin());
    entry.window = window;
    for (int k = 0; k < window; ++k)
      entry.after[static_cast<std::size_t>(k)] = after[static_cast<std::size_t>(k)];
    ++after_count_;
    return;
  }
}

void NodeFragmentation::read_node(const CompiledWorkload& workload, const NodeState& node,
                                  const PodDemand& pod) {
  total_ = read_free(node, free_);
  read_cpu_memory(workload, node, pod);
}

void NodeFragmentation::read_cpu_memory(const CompiledWorkload& workload, const NodeState& node,
                                        const PodDemand& pod) {
  workload_ = &workload;
  gpu_count_ = node.gpu_count();
  cpu_before_ = node.cpu_free();
  memory_before_ = node.memory_free();
  cpu_after_ = cpu_before_ == kNotTracked ? cpu_before_ : cpu_before_ - pod.cpu_milli;
  memory_after_ = memory_before_ == kNotTracked ? memory_before_ : memory_before_ - pod.memory;
}

bool NodeFragmentation::prepare_deferred(const CompiledWorkload& workload, const NodeState& node,
                                         const PodDemand& pod, NodeReading& reading,
                                         bool bound_first) {
  // As prepare() decides that the reading is used and keeps its minimum, for a sharing pod the
  // node can hold (a node whose amounts reach 2^30 has no filled reading).
  if (!reading.filled || reading.needs != workload.needs_.size() ||
      workload.words_ > NodeReading::Minimum::kMaxWords || !workload.fits_fast_path_ ||
      node.gpu_count() > kMaxGpus || !pod.wants_gpu() || pod.needs_whole_gpus() ||
      node.total_free() < pod.per_gpu) {
    return false;
  }
  read_cpu_memory(workload, node, pod);
  total_ = reading.idle;  // free_ is read only if the node is prepared in full
  mark_exclusions<false>(node);
  bool same = true;
  for (std::size_t w = 0; w < workload.words_; ++w)
    same &= reading.minimum.excluded[w] == excluded_after_[w];
  // The candidates, as pick_candidates counts them (one per distinct free amount that fits),
  // and the least free among them.
  const int count = reading_candidates(reading, pod.per_gpu, least_fit_);
  same &= reading.minimum.window != 0 && reading.minimum.per_gpu == pod.per_gpu;
  if (!(same || bound_first) || count == 0) return false;
  pod_wants_gpu_ = true;
  per_gpu_ = pod.per_gpu;
  narrow_ = true;  // the reading is filled
  before_known_ = true;
  before_value_ = reading.before;
  candidate_count_ = count;
  reading_ = &reading;
  deferred_ = true;
  node_ = &node;
  pod_ = &pod;
  return true;
}

bool NodeFragmentation::prepare(const CompiledWorkload& workload, const NodeState& node,
                                const PodDemand& pod, NodeReading* reading) {
  if (!workload.fits_fast_path_ || node.gpu_count() > kMaxGpus) return false;
  read_node(workload, node, pod);
  prepare_read(node, pod, reading, /*after_marked=*/false);
  return true;
}

void NodeFragmentation::prepare_read(const NodeState& node, const PodDemand& pod,
                                     NodeReading* reading, bool after_marked) {
  const CompiledWorkload& workload = *workload_;
  node_ = &node;
  deferred_ = false;
  approximated_ = false;
  pod_wants_gpu_ = pod.wants_gpu();
  per_gpu_ = pod.per_gpu;

  // Per need: GPUs with at least that much free, and the free memory of the others.
  const Units capacity = node.spec().memory_per_gpu;
  const std::size_t needs = workload.needs_.size();
  // Amounts below 2^30 (all of them, in practice) are counted in 32 bits, which vectorises.
  narrow_ = total_ < (Units{1} << 30);
  const bool narrow = narrow_;
  // A reading kept from an earlier pod replaces the counts, the distinct free amounts and F.
  const bool known = reading != nullptr && reading->filled && narrow && reading->needs == needs;
  // In 32 bits, padded with GPUs of nothing free (too small for any need > 0, adding 0), over a
  // fixed width of 8 or 16 GPUs, so the loops below have fixed trip counts and vectorise.
  std::array<I32x4, kMaxGpus / 4> free32;
  const bool wide = gpu_count_ > 8;
  if (narrow && !known) {
    // Built in registers (element stores followed by vector loads would stall store forwarding).
    const auto lane = [&](int i) {
      return i < gpu_count_ ? static_cast<std::int32_t>(free_[static_cast<std::size_t>(i)]) : 0;
    };
    for (int v = 0; v < (wide ? 4 : 2); ++v) {
      free32[static_cast<std::size_t>(v)] =
          I32x4{lane(4 * v), lane(4 * v + 1), lane(4 * v + 2), lane(4 * v + 3)};
    }
  }
  for (std::size_t d = 0; d < needs; ++d) {
    const auto& need = workload.needs_[d];
    // WorkloadShape::per_gpu_on
    const Units n = need.relative ? (need.per_gpu * capacity + 999) / 1000 : need.per_gpu;
    need_[d] = n;
    if (known) {
      big_enough_[d] = reading->big_enough[d];
      too_small_[d] = reading->too_small[d];
    } else {
      count_need(n, free_.data(), free32.data(), gpu_count_, total_, narrow, wide, big_enough_[d],
                 too_small_[d]);
    }
  }
  before_known_ = known;
  if (known) {
    before_value_ = reading->before;
  } else {
    fill_state(big_enough_, too_small_, total_, before_state_);
  }

  const bool sharing =
      pod.wants_gpu() && !pod.needs_whole_gpus() && node.total_free() >= pod.per_gpu;
  // With F(node) known, the shapes excluded before placement serve only before_and_after's
  // shortcut for pods whose GPUs stay as they are: a sharing pod's are not marked (the shortcut
  // is then off, which gives the same bits).
  const bool marked_before = !(known && sharing);
  if (marked_before) {
    mark_exclusions<true>(node);
  } else if (!after_marked) {
    mark_exclusions<false>(node);
  }
  const bool keep = reading != nullptr && !known && narrow;
  std::uint32_t first_of_free = known ? reading->first_of_free : 0;
  if (!known && (sharing || keep)) {
    first_of_free = first_of_each_free(free_.data(), free32.data(), gpu_count_, narrow, wide);
  }
  candidate_count_ = 0;
  if (sharing) pick_candidates(pod.per_gpu, first_of_free);
  choose_indexes(known, marked_before);
  if (keep) keep_reading(*reading, first_of_free);
  reading_ =
      (known || keep) && workload.words_ <= NodeReading::Minimum::kMaxWords ? reading : nullptr;
}

// Which shapes the node (after placement, and with Before before it too) cannot host for CPU,
// memory or model.
template <bool Before>
void NodeFragmentation::mark_exclusions(const NodeState& node) {
  const CompiledWorkload& workload = *workload_;
  const std::size_t words = workload.words_;
  const std::uint64_t* cpu_before = nullptr;
  const std::uint64_t* memory_before = nullptr;
  if constexpr (Before) {
    cpu_before = workload.cpu_.excluded(cpu_before_, words);
    memory_before = workload.memory_.excluded(memory_before_, words);
  }
  const std::uint64_t* cpu_after = workload.cpu_.excluded(cpu_after_, words);
  const std::uint64_t* memory_after = workload.memory_.excluded(memory_after_, words);
  for (std::size_t w = 0; w < words; ++w) {
    if constexpr (Before) {
      excluded_before_[w] = workload.no_gpu_[w] | cpu_before[w] | memory_before[w];
    }
    excluded_after_[w] = workload.no_gpu_[w] | cpu_after[w] | memory_after[w];
  }
  for (const auto& set : workload.model_sets_) {
    if (std::find(set.models.begin(), set.models.end(), node.spec().gpu_model) !=
        set.models.end()) {
      continue;
    }
    for (std::size_t w = 0; w < words; ++w) {
      if constexpr (Before) excluded_before_[w] |= set.mask[w];
      excluded_after_[w] |= set.mask[w];
    }
  }
}

// Candidates: GPUs that fit (healthy, free >= p; unhealthy ones read 0 < p), the first of each
// free amount. Branch-free: the loop runs over the node's GPUs, a fixed count.
void NodeFragmentation::pick_candidates(Units p, std::uint32_t first_of_free) {
  for (int i = 0; i < gpu_count_; ++i) {
    const Units f = free_[static_cast<std::size_t>(i)];
    const bool first = (first_of_free >> i) & 1U;
    candidate_gpu_[static_cast<std::size_t>(candidate_count_)] = i;
    candidate_free_[static_cast<std::size_t>(candidate_count_)] = f;
    candidate_count_ += static_cast<int>(first & (f >= p));
  }
}

// Each shape's index into a state's values: its group, or the all-idle slot if excluded.
void NodeFragmentation::choose_indexes(bool known, bool marked_before) {
  const CompiledWorkload& workload = *workload_;
  const std::size_t words = workload.words_;
  plain_after_ = plain(excluded_after_);
  same_exclusions_ = marked_before;
  for (std::size_t w = 0; w < words && marked_before; ++w)
    same_exclusions_ &= excluded_before_[w] == excluded_after_[w];
  index_before_ = workload.plain_index_.data();
  index_after_ = workload.plain_index_.data();
  if (!known && !plain(excluded_before_)) {  // F(node) known: the index before is not read
    build_index(excluded_before_.data(), index_before_storage_.data());
    index_before_ = index_before_storage_.data();
  }
  exclusion_ = nullptr;
  if (same_exclusions_ && !known) {
    index_after_ = index_before_;
  } else if (!plain_after_) {
    index_after_ = index_after_for_excluded();
  }
}

const std::uint8_t* NodeFragmentation::index_after_for_excluded() {
  const std::size_t words = workload_->words_;
  if (shared_ != nullptr && words <= SharedExclusions::kMaxWords) {
    bool found = false;
    exclusion_ = shared_->find(excluded_after_.data(), words, found);
    if (exclusion_ != nullptr) {
      if (!found) build_index(excluded_after_.data(), exclusion_->index.data());
      return exclusion_->index.data();
    }
  }
  build_index(excluded_after_.data(), index_after_storage_.data());
  return index_after_storage_.data();
}

const NodeFragmentation::Weights& NodeFragmentation::weights_for_excluded(Weights& storage) const {
  if (exclusion_ == nullptr) {
    approximation_weights(storage);
    return storage;
  }
  if (!exclusion_->weighed) {
    approximation_weights(exclusion_->weights);  // its group weights point into the set's
    exclusion_->weighed = true;
  }
  return exclusion_->weights;
}

// F(node) now, on its own, so that later pods find it; the pod's own sums then add only
// F(after) (the same additions in the same order as sum_two: the same bits).
static_assert(std::tuple_size_v<decltype(NodeReading::sorted_free)> >=
              static_cast<std::size_t>(NodeFragmentation::kMaxGpus));

void NodeFragmentation::keep_reading(NodeReading& reading, std::uint32_t first_of_free) {
  const std::size_t needs = workload_->needs_.size();
  before_value_ = sum(index_before_, before_state_);
  before_known_ = true;
  reading.filled = true;
  reading.minimum.window = 0;  // a new state: nothing after placement is known
  reading.needs = static_cast<std::uint8_t>(needs);
  reading.first_of_free = static_cast<std::uint16_t>(first_of_free);
  reading.before = before_value_;
  reading.measure_of = std::numeric_limits<double>::quiet_NaN();
  for (std::size_t d = 0; d < needs; ++d) {
    reading.big_enough[d] = static_cast<std::uint8_t>(big_enough_[d]);
    reading.too_small[d] = static_cast<std::int32_t>(too_small_[d]);
  }
  reading.idle = static_cast<std::int32_t>(total_);
  // Every GPU's free amount, sorted by insertion (at most 16), and their hash with the GPU size.
  for (int i = 0; i < gpu_count_; ++i) {
    const auto amount = static_cast<std::int32_t>(free_[static_cast<std::size_t>(i)]);
    auto at = static_cast<std::size_t>(i);
    for (; at > 0 && reading.sorted_free[at - 1] > amount; --at) {
      reading.sorted_free[at] = reading.sorted_free[at - 1];
    }
    reading.sorted_free[at] = amount;
  }
  reading.gpus = static_cast<std::uint8_t>(gpu_count_);
  const auto gpus = static_cast<std::size_t>(gpu_count_);
  std::fill(reading.sorted_free.begin() + gpu_count_, reading.sorted_free.end(),
            std::numeric_limits<std::int32_t>::max());
  std::fill(reading.distinct_from.begin() + gpu_count_, reading.distinct_from.end(), 0);
  for (std::size_t k = gpus; k-- > 0;) {
    const bool last_of_value =
        k + 1 == gpus || reading.sorted_free[k] != reading.sorted_free[k + 1];
    reading.distinct_from[k] =
        static_cast<std::uint8_t>(reading.distinct_from[k + 1] + (last_of_value ? 1 : 0));
  }
  std::uint64_t hash = mix(static_cast<std::uint64_t>(node_->spec().memory_per_gpu));
  for (int i = 0; i < gpu_count_; ++i) {
    hash = mix(hash ^ static_cast<std::uint32_t>(reading.sorted_free[static_cast<std::size_t>(i)]));
  }
  reading.free_hash = hash;
}

bool NodeFragmentation::plain(const std::array<std::uint64_t, kMaxWords>& excluded) const {
  for (std::size_t w = 0; w < workload_->words_; ++w) {
    if (excluded[w] != workload_->no_gpu_[w]) return false;
  }
  return true;
}

void NodeFragmentation::build_index(const std::uint64_t* excluded, std::uint8_t* out) const {
  // Eight shapes at a time: spread eight bits of the mask to eight bytes of 0x00 or 0xff, and
  // pick the plain index or the idle slot with them.
  const std::uint8_t* plain = workload_->plain_index_.data();
  const std::uint64_t idle = 0x0101010101010101ULL * workload_->groups_.size();
  for (std::size_t base = 0; base < workload_->size(); base += 8) {
    const std::uint64_t bits = (excluded[base / 64] >> (base % 64)) & 0xffU;
    const std::uint64_t spread = (bits * 0x0101010101010101ULL) & 0x8040201008040201ULL;
    const std::uint64_t high = ((spread + 0x7f7f7f7f7f7f7f7fULL) | spread) & 0x8080808080808080ULL;
    const std::uint64_t mask = (high >> 7) * 0xffU;
    std::uint64_t index;
    std::memcpy(&index, plain + base, sizeof index);
    index ^= (index ^ idle) & mask;
    std::memcpy(out + base, &index, sizeof index);
  }
}

void NodeFragmentation::fill_state(const std::array<int, kMaxNeeds>& big_enough,
                                   const std::array<Units, kMaxNeeds>& too_small, Units total,
                                   State& state) const {
  const auto& groups = workload_->groups_;
  state.total = total;
  for (std::size_t g = 0; g < groups.size(); ++g) {
    const std::size_t d = groups[g].need;
    state.value[g] = static_cast<double>(big_enough[d] >= groups[g].count ? too_small[d] : total);
  }
  state.value[groups.size()] = static_cast<double>(total);
}

double NodeFragmentation::sum(const std::uint8_t* index, const State& state) const {
  if (state.total == 0) return 0;  // as fragmentation(): nothing idle, nothing fragmented
  const std::size_t n = workload_->size();
  const double* weight = workload_->weight_.data();
  double sum = 0;
  // Unrolled for fewer loop instructions; still one chain of additions in the target's order.
#pragma GCC unroll 4
  for (std::size_t j = 0; j < n; ++j) sum += weight[j] * state.value[index[j]];
  return sum;
}

// Two sums in one pass: two independent chains of additions keep the pipeline busier than
// one after the other. Each is still added up in the target's order.
void NodeFragmentation::sum_two(const std::uint8_t* index_a, const State& a,
                                const std::uint8_t* index_b, const State& b, double& sum_a,
                                double& sum_b) const {
  const std::size_t n = workload_->size();
  const double* weight = workload_->weight_.data();
  const double* value_a = a.value.data();
  const double* value_b = b.value.data();
  double x = 0;
  double y = 0;
  if (index_a == index_b) {  // the same shapes excluded: one index per shape for both
    for (std::size_t j = 0; j < n; ++j) {
      const std::uint8_t i = index_a[j];
      x += weight[j] * value_a[i];
      y += weight[j] * value_b[i];
    }
  } else {
    for (std::size_t j = 0; j < n; ++j) {
      x += weight[j] * value_a[index_a[j]];
      y += weight[j] * value_b[index_b[j]];
    }
  }
  sum_a = a.total == 0 ? 0 : x;
  sum_b = b.total == 0 ? 0 : y;
}

double NodeFragmentation::before() const {
  return before_known_ ? before_value_ : sum(index_before_, before_state_);
}

void NodeFragmentation::before_and_after(std::span<const int> gpus, double& before,
                                         double& after) const {
  if (!pod_wants_gpu_ || gpus.empty()) {
    // The GPUs are as before: only the shapes the pod's CPU and memory exclude can change.
    if (same_exclusions_) {
      before = after = this->before();
    } else if (before_known_) {
      State state;
      fill_state(big_enough_, too_small_, total_, state);
      before = before_value_;
      after = sum(index_after_, state);
    } else {
      sum_two(index_before_, before_state_, index_after_, before_state_, before, after);
    }
    return;
  }
  std::array<Units, kMaxGpus> free = free_;
  Units total = total_;
  for (int gpu : gpus) {
    free[static_cast<std::size_t>(gpu)] -= per_gpu_;
    total -= per_gpu_;
  }
  std::array<int, kMaxNeeds> big_enough;
  std::array<Units, kMaxNeeds> too_small;
  for (std::size_t d = 0; d < workload_->needs_.size(); ++d) {
    count_gpus(free.data(), gpu_count_, need_[d], big_enough[d], too_small[d]);
  }
  State state;
  fill_state(big_enough, too_small, total, state);
  before_and(state, before, after);
}

void NodeFragmentation::before_and(const State& state, double& before, double& after) const {
  if (before_known_) {
    before = before_value_;
    after = sum(index_after_, state);
  } else {
    sum_two(index_before_, before_state_, index_after_, state, before, after);
  }
}

void NodeFragmentation::candidate_state(int k, State& state) const {
  // The candidate GPU goes from f to f - p free. Per need, it was too small and stays so (the
  // too-small memory drops by p), or was big enough and becomes too small (one big-enough GPU
  // fewer, f - p more too-small memory), or stays big enough (nothing changes).
  const Units f = candidate_free_[static_cast<std::size_t>(k)];
  const Units p = per_gpu_;
  const Units total = total_ - p;
  const auto& groups = workload_->groups_;
  const std::size_t count = groups.size();
  for (std::size_t g = 0; g < count; ++g) {
    const std::size_t d = groups[g].need;
    const Units n = need_[d];
    const Units was_small = -static_cast<Units>(f < n);
    const Units turns_small = ~was_small & -static_cast<Units>(f - p < n);
    const Units big = big_enough_[d] + turns_small;  // -1 when it turns small
    const Units small = too_small_[d] - (p & was_small) + ((f - p) & turns_small);
    state.value[g] = static_cast<double>(big >= groups[g].count ? small : total);
  }
  state.value[count] = static_cast<double>(total);
  state.total = total;
}

double NodeFragmentation::candidate_after(int k) const {
  State state;
  candidate_state(k, state);
  return sum(index_after_, state);
}

void NodeFragmentation::approximation_weights(Weights& weights) const {
  const CompiledWorkload& w = *workload_;
  const std::size_t groups = w.groups_.size();
  for (std::size_t g = 0; g < groups; ++g) weights.hosted[g] = w.group_size_[g] > 0;
  if (plain_after_) {
    weights.excluded = w.no_gpu_weight_;
    weights.group = w.group_weight_.data();
    return;
  }
  // The shapes the node excludes beyond those without GPU are usually few: take their weights
  // off their groups' (an approximation; the tolerance covers the cancellation).
  std::array<double, kMaxGroups> taken;
  std::array<std::uint32_t, kMaxGroups> members_taken;
  for (std::size_t g = 0; g < groups; ++g) {
    taken[g] = 0;
    members_taken[g] = 0;
  }
  double excluded = w.no_gpu_weight_;
  for (std::size_t word = 0; word < w.words_; ++word) {
    std::uint64_t bits = excluded_after_[word] & ~w.no_gpu_[word];
    while (bits != 0) {
      const std::size_t j = word * 64 + static_cast<std::size_t>(std::countr_zero(bits));
      bits &= bits - 1;
      const std::size_t g = w.group_[j];
      taken[g] += w.weight_[j];
      members_taken[g] += 1;
      excluded += w.weight_[j];
    }
  }
  weights.excluded = excluded;
  for (std::size_t g = 0; g < groups; ++g) {
    weights.storage[g] = std::max(0.0, w.group_weight_[g] - taken[g]);
    weights.hosted[g] = members_taken[g] < w.group_size_[g];
  }
  weights.group = weights.storage.data();
}

bool NodeFragmentation::same_state(const State& a, const State& b) const {
  bool same = a.total == b.total;
  const std::size_t groups = workload_->groups_.size();
  for (std::size_t g = 0; g < groups; ++g) same &= a.value[g] == b.value[g];
  return same;
}

void NodeFragmentation::candidates_after(std::span<double> after) const {
  std::array<State, kMaxGpus> states;
  for (int k = 0; k < candidate_count_; ++k) {
    const auto i = static_cast<std::size_t>(k);
    candidate_state(k, states[i]);
    // Candidates that leave every group as another one did have the same F: sum it once.
    std::size_t same = i;
    for (std::size_t e = 0; e < i && same == i; ++e) {
      if (same_state(states[e], states[i])) same = e;
    }
    after[i] = same < i ? after[same] : sum(index_after_, states[i]);
  }
}

// Every candidate's group values (column k for candidate k) and the approximation of its
// F(after), for all candidates at once over a fixed number of lanes (4 V; lanes past the
// candidates repeat the first), in 32 bits (only when every amount on the node is below 2^30).
template <int V>
void NodeFragmentation::approximate_candidates(const Weights& weights, Columns& columns,
                                               std::array<double, kMaxGpus>& approx) const {
  const auto& groups = workload_->groups_;
  const std::size_t count = groups.size();
  const Units total = total_ - per_gpu_;
  // As candidate_state, in 32 bits.
  std::array<I32x4, V> f;
  std::array<I32x4, V> f_after;
  const auto p = static_cast<std::int32_t>(per_gpu_);
  // Built in registers (element stores followed by a vector load would stall store forwarding).
  const auto lane = [&](int k) {
    return static_cast<std::int32_t>(
        candidate_free_[static_cast<std::size_t>(k < candidate_count_ ? k : 0)]);
  };
  for (int v = 0; v < V; ++v) {
    f[static_cast<std::size_t>(v)] =
        I32x4{lane(4 * v), lane(4 * v + 1), lane(4 * v + 2), lane(4 * v + 3)};
  }
  for (int v = 0; v < V; ++v)
    f_after[static_cast<std::size_t>(v)] = f[static_cast<std::size_t>(v)] - p;
  const I32x4 idle = I32x4{} + static_cast<std::int32_t>(total);
  std::array<F64x2, 2 * V> sum;
  const double idle_term = weights.excluded * static_cast<double>(total);
  for (auto& x : sum) x = F64x2{} + idle_term;
  for (std::size_t g = 0; g < count; ++g) {
    const std::size_t d = groups[g].need;
    // A need of 2^30 or more is never met here (every amount is below 2^30).
    const I32x4 n = I32x4{} + static_cast<std::int32_t>(std::min<Units>(need_[d], Units{1} << 30));
    const I32x4 big_before = I32x4{} + static_cast<std::int32_t>(big_enough_[d]);
    const I32x4 small_before = I32x4{} + static_cast<std::int32_t>(too_small_[d]);
    const I32x4 wanted = I32x4{} + groups[g].count;
    const F64x2 w = F64x2{} + weights.group[g];
    for (int v = 0; v < V; ++v) {
      const auto i = static_cast<std::size_t>(v);
      const I32x4 was_small = f[i] < n;
      const I32x4 turns_small = ~was_small & (f_after[i] < n);
      const I32x4 big = big_before + turns_small;  // turns_small is -1 or 0
      const I32x4 small = small_before - (p & was_small) + (f_after[i] & turns_small);
      const I32x4 value = idle ^ ((small ^ idle) & (big >= wanted));
      columns.value[g][static_cast<std::size_t>(v)] = value;
      const I32x2 low = __builtin_shufflevector(value, value, 0, 1);
      const I32x2 high = __builtin_shufflevector(value, value, 2, 3);
      sum[2 * i] += w * __builtin_convertvector(low, F64x2);
      sum[2 * i + 1] += w * __builtin_convertvector(high, F64x2);
    }
  }
  std::memcpy(approx.data(), sum.data(), sizeof sum);
}

bool NodeFragmentation::kept_for(const NodeReading::Minimum& kept, double margin) const {
  // The candidates' states follow from the reading and the pod's GPU memory; which shapes they
  // are summed over, and the approximation's weights, from the shapes excluded after placement.
  bool same = kept.window > 0 && kept.per_gpu == per_gpu_ && kept.margin == margin;
  for (std::size_t w = 0; w < workload_->words_; ++w)
    same &= kept.excluded[w] == excluded_after_[w];
  return same;
}

int NodeFragmentation::before_and_minimum(double margin, double& before, std::span<double> after) {
  if (reading_ == nullptr || candidate_count_ == 0) return compute_minimum(margin, before, after);
  NodeReading::Minimum& kept = reading_->minimum;
  if (!kept.lower_bound_only && kept_for(kept, margin)) {
    before = before_value_;  // a reading is filled: F(node) is known
    for (int k = 0; k < kept.window; ++k)
      after[static_cast<std::size_t>(k)] = kept.after[static_cast<std::size_t>(k)];
    return kept.window;
  }
  if (deferred_) return prepare_and_minimum(margin, before, after);  // kept for another margin
  const int window = compute_minimum(margin, before, after);
  keep_minimum(margin, window, after);
  return window;
}

void NodeFragmentation::keep_minimum(double margin, int window, std::span<const double> after) {
  if (window <= 0 || window > NodeReading::Minimum::kMaxWindow) return;
  NodeReading::Minimum& kept = reading_->minimum;
  kept.window = static_cast<std::uint8_t>(window);
  kept.lower_bound_only = false;
  kept.per_gpu = per_gpu_;
  kept.margin = margin;
  for (std::size_t w = 0; w < workload_->words_; ++w) kept.excluded[w] = excluded_after_[w];
  for (int k = 0; k < window; ++k)
    kept.after[static_cast<std::size_t>(k)] = after[static_cast<std::size_t>(k)];
}

void NodeFragmentation::prepare_rest() {
  total_ = read_free(*node_, free_);
  prepare_read(*node_, *pod_, reading_, /*after_marked=*/true);
}

int NodeFragmentation::prepare_and_minimum(double margin, double& before, std::span<double> after) {
  // The values another node of this request with the same key left (the set of values; their
  // order follows the GPUs' and does not matter to the callers, who take the best), else
  // computed and left for the next.
  std::optional<SharedExclusions::AfterKey> key;
  if (after_set_ >= 0 && shared_ != nullptr) {
    key = SharedExclusions::AfterKey{static_cast<std::size_t>(after_set_),
                                     node_->spec().memory_per_gpu, per_gpu_, margin, reading_};
    if (const SharedExclusions::After* kept = shared_->find_after(*key)) {
      before = before_value_;  // the reading's
      for (int k = 0; k < kept->window; ++k) {
        after[static_cast<std::size_t>(k)] = kept->after[static_cast<std::size_t>(k)];
      }
      keep_minimum(margin, kept->window, after);
      return kept->window;
    }
  }
  prepare_rest();
  const int window = before_and_minimum(margin, before, after);
  if (key) shared_->keep_after(*key, window, after);
  return window;
}

std::optional<double> NodeFragmentation::minimum_lower_bound(double margin) {
  // (A deferred preparation is worth bounding even for one candidate: the bound spares it.)
  if (candidate_count_ < 2 && !deferred_) return std::nullopt;
  if (reading_ != nullptr && kept_for(reading_->minimum, margin)) {
    // Kept for this pod: the bound, or the values themselves (then no bound is needed).
    if (reading_->minimum.lower_bound_only) return reading_->minimum.after[0];
    return std::nullopt;
  }
  // (The allowances below hold for weights of one sign, as compute_minimum's.)
  double bound = 0;
  if (deferred_ && workload_->nonnegative_) {
    // The kept minimum is for another pod: bound from the reading, the node not yet prepared.
    bound = reading_lower_bound();
  } else {
    if (deferred_) {  // prepare the node in full
      prepare_rest();
      if (candidate_count_ < 2) return std::nullopt;
    }
    if (!narrow_ || !before_known_ || !workload_->nonnegative_) return std::nullopt;
    if (!approximated_) approximate();
    // Every exact F(after) is within relative_ x (approximation + lowest) + cancellation_ of
    // its approximation, which is at least lowest_ (compute_minimum): twice the allowance at
    // lowest_ covers the rounding of this subtraction too.
    bound = lowest_ - (2 * relative_ * lowest_ + cancellation_);
  }
  if (reading_ != nullptr) {  // kept until before_and_minimum keeps the values instead
    NodeReading::Minimum& kept = reading_->minimum;
    kept.window = 1;
    kept.lower_bound_only = true;
    kept.per_gpu = per_gpu_;
    kept.margin = margin;
    for (std::size_t w = 0; w < workload_->words_; ++w) kept.excluded[w] = excluded_after_[w];
    kept.after[0] = bound;
  }
  return bound;
}

double NodeFragmentation::reading_lower_bound() {
  const Units idle = total_ - per_gpu_;  // after placement, whichever candidate
  if (idle <= 0) return 0.0;             // nothing idle: every F(after) is exactly 0
  // The weights of the shapes the node hosts after placement, per group, and of the others.
  const CompiledWorkload& workload = *workload_;
  plain_after_ = plain(excluded_after_);
  exclusion_ = nullptr;
  if (!plain_after_) index_after_ = index_after_for_excluded();
  after_set_ = plain_after_            ? static_cast<int>(SharedExclusions::kMaxSets)
               : exclusion_ != nullptr ? static_cast<int>(exclusion_ - shared_->sets_.data())
                                       : -1;
  const Weights& weights = weights_for_excluded(approximation_storage_);
  const double bound = workload.least_after(*reading_, node_->spec().memory_per_gpu, least_fit_,
                                            per_gpu_, idle, weights.excluded, weights.group);
  // Each group's least value is at most every candidate's, so the bound is at most each
  // candidate's approximation (the same weights), and the allowances of approximate() hold for
  // it as they do for the smallest approximation (minimum_lower_bound).
  const double relative = 0x1p-47 * (static_cast<double>(workload.size()) + 16.0);
  const double cancellation =
      plain_after_ ? 0.0 : relative * static_cast<double>(idle) * workload.weight_sum_;
  return bound - (2 * relative * bound + cancellation);
}

void NodeFragmentation::approximate() {
  approximation_weights_ = &weights_for_excluded(approximation_storage_);
  const int count = candidate_count_;
  if (count > 8) {
    approximate_candidates<4>(*approximation_weights_, columns_, approximation_);
  } else if (count > 4) {
    approximate_candidates<2>(*approximation_weights_, columns_, approximation_);
  } else {
    approximate_candidates<1>(*approximation_weights_, columns_, approximation_);
  }
  const double idle = static_cast<double>(total_ - per_gpu_);
  lowest_ = std::numeric_limits<double>::infinity();
  for (int k = 0; k < count; ++k) {
    lowest_ = std::min(lowest_, approximation_[static_cast<std::size_t>(k)]);
  }
  // Both the exact sum (n products and n additions in target order) and the approximation
  // (the same terms regrouped: weights summed per group, then multiplied) are within
  // (2n + groups + 4) u of the exact value of the terms, all of which are non-negative
  // (u = 2^-53, groups <= 64). 2^-47 (n + 16) = 64 u (n + 16) covers both, with room to spare
  // for the rounding of the comparison itself. (With nothing idle after placement, every
  // candidate's F is exactly 0, and so is every approximation.)
  // The group weights with excluded shapes taken off are within 2 gamma_(n+1) of the sum of
  // all their shapes' weights (cancellation): at most that times the idle memory after
  // placement times the total weight, covered by the last term (2^-47 (n + 16) > 4 gamma).
  relative_ = 0x1p-47 * (static_cast<double>(workload_->size()) + 16.0);
  cancellation_ = plain_after_ ? 0.0 : relative_ * idle * workload_->weight_sum_;
  approximated_ = true;
}

int NodeFragmentation::compute_minimum(double margin, double& before, std::span<double> after) {
  const int count = candidate_count_;
  if (count == 0) {
    before = this->before();
    return 0;
  }
  State state;
  if (count == 1) {
    candidate_state(0, state);
    before_and(state, before, after[0]);
    return 1;
  }
  if (!narrow_) {  // amounts beyond 32 bits (not seen in practice): every candidate, exactly
    before = this->before();
    candidates_after(after);
    return count;
  }
  // Compare the candidates by an approximation of F(after), then sum exactly only those that
  // can be the smallest.
  if (!approximated_) approximate();
  const Weights& weights = *approximation_weights_;
  const Columns& columns = columns_;
  const std::size_t groups = workload_->groups_.size();
  std::uint32_t may_win = 0;
  for (int k = 0; k < count; ++k) {
    const auto i = static_cast<std::size_t>(k);
    const double approx = approximation_[i];
    const double tolerance = relative_ * (approx + lowest_) + cancellation_ + margin;
    may_win |= static_cast<std::uint32_t>(approx - lowest_ <= tolerance) << k;
  }
  // The first (at least one candidate is at `lowest`) is summed along with F(node); others
  // only if no candidate summed before left the same values in every group the node hosts
  // (groups whose shapes are all excluded do not enter the sum).
  const auto same = [&](std::size_t a, std::size_t b) {
    bool equal = true;
    for (std::size_t g = 0; g < groups; ++g) {
      equal &=
          !weights.hosted[g] || columns.value[g][a / 4][a % 4] == columns.value[g][b / 4][b % 4];
    }
    return equal;
  };
  std::array<std::size_t, kMaxGpus> summed;
  int distinct = 0;
  while (may_win != 0) {
    const auto k = static_cast<std::size_t>(std::countr_zero(may_win));
    may_win &= may_win - 1;
    bool repeated = false;
    for (int e = 0; e < distinct; ++e) repeated |= same(summed[static_cast<std::size_t>(e)], k);
    if (repeated) continue;
    candidate_state(static_cast<int>(k), state);
    if (distinct == 0) {
      before_and(state, before, after[0]);
    } else {
      after[static_cast<std::size_t>(distinct)] = sum(index_after_, state);
    }
    summed[static_cast<std::size_t>(distinct++)] = k;
  }
  return distinct;
}

}  // namespace gpushare::core
