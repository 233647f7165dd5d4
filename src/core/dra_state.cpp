#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <tuple>
#include <utility>

#include "gpushare/core/dra.h"

namespace gpushare::core {
namespace {

std::string pool_key(std::string_view driver, std::string_view pool) {
  return fmt::format("{}/{}", driver, pool);
}

template <typename Index>
void index_erase(Index& index, const std::string& key, const std::string& value) {
  auto it = index.find(key);
  if (it == index.end()) return;
  it->second.erase(value);
  if (it->second.empty()) index.erase(it);
}

}  // namespace

void DraState::set_config(DraConfig config) {
  config_ = std::move(config);
  for (const auto& node : nodes()) mark_dirty(node);
  for (const auto& [key, claim] : claims_) dirty_claims_.insert(key);
  for (const auto& [name, device_class] : classes_)
    keep_problems(class_problems_, name, class_problems(device_class));
}

bool DraDeviceClass::selects(
    const std::map<std::string, std::string, std::less<>>& device_attributes) const {
  return std::all_of(attributes.begin(), attributes.end(), [&](const DraAttributeMatch& match) {
    const auto it = device_attributes.find(match.name);
    return it != device_attributes.end() && it->second == match.value;
  });
}

void DraState::mark_dirty(const std::string& node) {
  dirty_.insert(node);
  if (auto it = gpus_by_node_.find(node); it != gpus_by_node_.end()) gpus_by_node_.erase(it);
}

void DraState::mark_slice(const DraSlice& slice) {
  // A pool's generation or completeness decides for every node with slices in it.
  if (auto it = slices_by_pool_.find(pool_key(slice.driver, slice.pool));
      it != slices_by_pool_.end()) {
    for (const auto& name : it->second) {
      if (auto s = slices_.find(name); s != slices_.end() && !s->second.node.empty())
        mark_dirty(s->second.node);
    }
  }
  if (!slice.node.empty()) mark_dirty(slice.node);
}

void DraState::mark_claim(const DraClaim& claim) {
  // The claim counts on the nodes publishing its devices (holdings_on), whatever node its
  // allocation's selector names; the GPUs there stand (dirty_, not mark_dirty).
  dirty_claims_.insert(claim.key());
  for (const auto& result : claim.results) {
    auto it = slices_by_pool_.find(pool_key(result.driver, result.pool));
    if (it == slices_by_pool_.end()) continue;
    for (const auto& name : it->second) {
      if (auto s = slices_.find(name); s != slices_.end() && !s->second.node.empty())
        dirty_.insert(s->second.node);
    }
  }
}

void DraState::upsert_slice(DraSlice slice) {
  remove_slice(slice.name);
  slices_by_node_[slice.node].insert(slice.name);
  slices_by_pool_[pool_key(slice.driver, slice.pool)].insert(slice.name);
  mark_slice(slice);
  std::string name = slice.name;
  slices_.emplace(std::move(name), std::move(slice));
}

void DraState::remove_slice(std::string_view name) {
  auto it = slices_.find(name);
  if (it == slices_.end()) return;
  const DraSlice old = std::move(it->second);
  slices_.erase(it);
  index_erase(slices_by_node_, old.node, old.name);
  index_erase(slices_by_pool_, pool_key(old.driver, old.pool), old.name);
  mark_slice(old);
}

void DraState::index_claim(const DraClaim& claim, bool add) {
  if (!claim.allocated) return;
  const std::string key = claim.key();
  for (const auto& result : claim.results) {
    const std::string pool = pool_key(result.driver, result.pool);
    if (add) {
      claims_by_pool_[pool].insert(key);
    } else {
      index_erase(claims_by_pool_, pool, key);
    }
  }
}

void DraState::upsert_claim(DraClaim claim) {
  const std::string key = claim.key();
  remove_claim(key);
  mark_claim(claim);
  index_claim(claim, true);
  claims_.emplace(key, std::move(claim));
}

void DraState::remove_claim(std::string_view key) {
  auto it = claims_.find(key);
  if (it == claims_.end()) return;
  const DraClaim old = std::move(it->second);
  claims_.erase(it);
  index_claim(old, false);
  mark_claim(old);
}

void DraState::upsert_template(DraClaimTemplate claim_template) {
  std::string key = claim_template.namespace_name + "/" + claim_template.name;
  templates_.insert_or_assign(std::move(key), std::move(claim_template));
}

void DraState::remove_template(std::string_view key) {
  if (auto it = templates_.find(key); it != templates_.end()) templates_.erase(it);
}

void DraState::upsert_class(DraDeviceClass device_class) {
  std::string key = device_class.name;
  keep_problems(class_problems_, key, class_problems(device_class));
  classes_.insert_or_assign(std::move(key), std::move(device_class));
}

void DraState::remove_class(std::string_view name) {
  if (auto it = classes_.find(name); it != classes_.end()) {
    keep_problems(class_problems_, it->first, {});
    classes_.erase(it);
  }
}

void DraState::replace_slices(std::vector<DraSlice> slices) {
  std::vector<std::string> old;
  for (const auto& [name, slice] : slices_) old.push_back(name);
  for (const auto& name : old) remove_slice(name);
  for (auto& slice : slices) upsert_slice(std::move(slice));
}

void DraState::replace_claims(std::vector<DraClaim> claims) {
  std::vector<std::string> old;
  for (const auto& [key, claim] : claims_) old.push_back(key);
  for (const auto& key : old) remove_claim(key);
  for (auto& claim : claims) upsert_claim(std::move(claim));
}

void DraState::replace_templates(std::vector<DraClaimTemplate> templates) {
  templates_.clear();
  for (auto& t : templates) upsert_template(std::move(t));
}

void DraState::replace_classes(std::vector<DraDeviceClass> classes) {
  std::set<std::string, std::less<>> listed;
  for (const auto& c : classes) listed.insert(c.name);
  std::vector<std::string> gone;
  for (const auto& [name, device_class] : classes_) {
    if (!listed.contains(name)) gone.push_back(name);
  }
  for (const auto& name : gone) remove_class(name);
  for (auto& c : classes) upsert_class(std::move(c));
}

void DraState::keep_problems(std::map<std::string, std::vector<DraWarning>, std::less<>>& kept,
                             const std::string& key, std::vector<DraWarning> now) {
  auto it = kept.find(key);
  const std::vector<DraWarning> none;
  const std::vector<DraWarning>& before = it == kept.end() ? none : it->second;
  for (const auto& warning : before) {
    if (std::find(now.begin(), now.end(), warning) == now.end()) new_problems_.erase(warning);
  }
  for (const auto& warning : now) {
    if (std::find(before.begin(), before.end(), warning) == before.end())
      new_problems_.insert(warning);
  }
  if (now.empty()) {
    if (it != kept.end()) kept.erase(it);
  } else {
    kept.insert_or_assign(key, std::move(now));
  }
}

std::set<std::string> DraState::take_dirty_nodes() {
  for (const auto& node : dirty_) {
    if (!gpus_by_node_.contains(node)) {  // its slices changed (a claim alone leaves the GPUs)
      NodeView view = view_of(node);
      ++views_built_;
      // Claims holding the node's old devices or in the pools of its new ones: checked again.
      if (auto old = claims_on_node_.find(node); old != claims_on_node_.end())
        dirty_claims_.insert(old->second.begin(), old->second.end());
      if (auto old = devices_of_node_.find(node); old != devices_of_node_.end()) {
        for (const auto& key : old->second) {
          if (auto d = device_node_.find(key); d != device_node_.end() && d->second == node)
            device_node_.erase(d);
        }
        devices_of_node_.erase(old);
      }
      std::vector<std::string> keys;
      for (const auto& gpu : view.gpus) {
        const std::string pool = pool_key(gpu.driver, gpu.pool);
        if (auto in_pool = claims_by_pool_.find(pool); in_pool != claims_by_pool_.end())
          dirty_claims_.insert(in_pool->second.begin(), in_pool->second.end());
        keys.push_back(pool + "/" + gpu.device);
        device_node_.insert_or_assign(keys.back(), node);
      }
      if (!keys.empty()) devices_of_node_.emplace(node, std::move(keys));
      keep_problems(view_problems_, node, std::move(view.warnings));
      if (!view.gpus.empty()) gpus_by_node_.insert_or_assign(node, std::move(view.gpus));
    }
    std::vector<DraWarning> held;
    holdings_and_problems(node, &held);
    keep_problems(holding_problems_, node, std::move(held));
  }
  for (const auto& key : dirty_claims_) {
    ++claims_checked_;
    touched_claims_.insert(key);
    if (auto old = nodes_of_claim_.find(key); old != nodes_of_claim_.end()) {
      for (const auto& node : old->second) index_erase(claims_on_node_, node, key);
      nodes_of_claim_.erase(old);
    }
    const auto claim = claims_.find(key);
    if (claim == claims_.end()) {
      keep_problems(claim_problems_, key, {});
      continue;
    }
    if (claim->second.allocated) {
      for (const auto& r : claim->second.results) {
        if (r.driver != config_.driver) continue;
        const auto device = device_node_.find(pool_key(r.driver, r.pool) + "/" + r.device);
        if (device == device_node_.end()) continue;
        nodes_of_claim_[key].insert(device->second);
        claims_on_node_[device->second].insert(key);
      }
    }
    keep_problems(claim_problems_, key, claim_problems(claim->second));
  }
  dirty_claims_.clear();
  return std::exchange(dirty_, {});
}

std::vector<DraWarning> DraState::take_new_problems(
    const std::function<bool(std::string_view)>& node_known) {
  std::vector<DraWarning> result(new_problems_.begin(), new_problems_.end());
  new_problems_.clear();
  for (const auto& key : touched_claims_) {
    const auto nodes = nodes_of_claim_.find(key);
    if (nodes == nodes_of_claim_.end()) continue;
    for (const auto& node : nodes->second) {
      if (node_known(node)) continue;
      for (auto& warning : unknown_node_problems(key, node)) result.push_back(std::move(warning));
    }
  }
  touched_claims_.clear();
  std::sort(result.begin(), result.end(), [](const DraWarning& a, const DraWarning& b) {
    return std::tie(a.message, a.object, a.node) < std::tie(b.message, b.object, b.node);
  });
  result.erase(std::unique(result.begin(), result.end()), result.end());
  return result;
}

const std::vector<DraGpu>* DraState::cached_gpus(std::string_view node) const {
  auto it = gpus_by_node_.find(node);
  return it == gpus_by_node_.end() ? nullptr : &it->second;
}

const DraClaim* DraState::find_claim(std::string_view namespace_name, std::string_view name) const {
  auto it = claims_.find(fmt::format("{}/{}", namespace_name, name));
  return it == claims_.end() ? nullptr : &it->second;
}

const DraClaimTemplate* DraState::find_template(std::string_view namespace_name,
                                                std::string_view name) const {
  auto it = templates_.find(fmt::format("{}/{}", namespace_name, name));
  return it == templates_.end() ? nullptr : &it->second;
}

const DraDeviceClass* DraState::find_class(std::string_view name) const {
  auto it = classes_.find(name);
  return it == classes_.end() ? nullptr : &it->second;
}

DraState::NodeView DraState::view_of(std::string_view node) const {
  NodeView view;
  auto on_node = slices_by_node_.find(node);
  if (node.empty() || on_node == slices_by_node_.end()) return view;
  // The node's slices of our driver, by pool (a std::map: pools in (driver, name) order).
  std::map<std::string, std::vector<const DraSlice*>> pools;
  bool full = false;  // kMaxDraGpusPerNode reached (and said)
  for (const auto& name : on_node->second) {
    const DraSlice& slice = slices_.at(name);
    if (slice.driver == config_.driver) pools[pool_key(slice.driver, slice.pool)].push_back(&slice);
  }
  for (auto& [key, mine] : pools) {
    const auto& all_names = slices_by_pool_.at(key);
    std::int64_t newest = std::numeric_limits<std::int64_t>::min();
    for (const auto& name : all_names) newest = std::max(newest, slices_.at(name).generation);
    std::vector<const DraSlice*> current;  // the pool's slices of its newest generation
    for (const auto& name : all_names) {
      if (slices_.at(name).generation == newest) current.push_back(&slices_.at(name));
    }
    std::erase_if(mine, [&](const DraSlice* s) { return s->generation != newest; });
    if (mine.empty()) continue;  // this node's slices are outdated
    const std::int64_t expected = current.front()->slice_count;
    const auto disagrees = std::find_if(current.begin(), current.end(), [&](const DraSlice* s) {
      return s->slice_count != expected;
    });
    if (disagrees != current.end()) {
      view.warnings.push_back(
          {"ResourceSlice " + (*disagrees)->name, (*disagrees)->node,
           fmt::format(
               "ResourceSlice {}: pool {} generation {}: resourceSliceCount {} disagrees with {} "
               "of ResourceSlice {}; the pool's devices are ignored",
               (*disagrees)->name, key, newest, (*disagrees)->slice_count, expected,
               current.front()->name)});
      continue;
    }
    if (static_cast<std::int64_t>(current.size()) < expected) {
      view.warnings.push_back(
          {"ResourceSlice " + mine.front()->name, mine.front()->node,
           fmt::format("pool {} generation {}: {} of {} ResourceSlices seen (ResourceSlice {}); "
                       "the pool is incomplete and its devices are ignored until the rest arrive",
                       key, newest, current.size(), expected, mine.front()->name)});
      continue;
    }
    std::set<std::string_view> device_names;
    const DraSlice* repeating = nullptr;
    std::string_view repeated;
    for (const DraSlice* s : current) {
      for (const auto& device : s->devices) {
        if (!device_names.insert(device.name).second) {
          repeating = s;
          repeated = device.name;
        }
      }
    }
    if (repeating != nullptr) {
      view.warnings.push_back(
          {"ResourceSlice " + repeating->name, repeating->node,
           fmt::format("ResourceSlice {} device {} repeats a device name of pool {}; the pool's "
                       "devices are ignored",
                       repeating->name, repeated, key)});
      continue;
    }
    std::sort(mine.begin(), mine.end(),
              [](const DraSlice* a, const DraSlice* b) { return a->name < b->name; });
    for (const DraSlice* s : mine) {
      for (const auto& device : s->devices) {
        if (!device.capacity_error.empty()) {
          view.warnings.push_back({"ResourceSlice " + s->name, s->node,
                                   fmt::format("ResourceSlice {} device {}: {}; device ignored",
                                               s->name, device.name, device.capacity_error)});
          continue;
        }
        if (!device.memory_bytes) continue;  // not a GPU with memory
        const Units capacity = units_of_capacity(*device.memory_bytes);
        if (capacity <= 0) {
          view.warnings.push_back(
              {"ResourceSlice " + s->name, s->node,
               fmt::format("ResourceSlice {} device {}: memory {} bytes is less than one unit ({} "
                           "bytes); device ignored",
                           s->name, device.name, *device.memory_bytes, config_.bytes_per_unit)});
          continue;
        }
        if (view.gpus.size() == kMaxDraGpusPerNode) {
          if (full) continue;  // one warning per node
          full = true;
          view.warnings.push_back(
              {"ResourceSlice " + s->name, s->node,
               fmt::format("ResourceSlice {} device {}: node {} has {} DRA GPUs already, the most "
                           "the model gives a node; this device and the node's later ones are "
                           "ignored",
                           s->name, device.name, s->node, kMaxDraGpusPerNode)});
          continue;
        }
        DraGpu gpu;
        gpu.index = static_cast<int>(view.gpus.size());
        gpu.driver = s->driver;
        gpu.pool = s->pool;
        gpu.slice = s->name;
        gpu.device = device.name;
        gpu.capacity = capacity;
        gpu.product = device.product;
        gpu.shareable = device.shareable;
        gpu.attributes = device.attributes;
        view.gpus.push_back(std::move(gpu));
      }
    }
  }
  return view;
}

std::vector<DraGpu> DraState::gpus_of(std::string_view node) const {
  if (const std::vector<DraGpu>* cached = cached_gpus(node)) return *cached;
  return view_of(node).gpus;
}

NodeSpec DraState::overlay(NodeSpec base) const {
  if (base.gpu_count > 0 || !base.misconfiguration.empty()) return base;  // device plugin's node
  const std::vector<DraGpu> gpus = gpus_of(base.name);
  if (gpus.empty()) return base;
  Units largest = 0;
  base.gpu_capacities.clear();
  for (const auto& gpu : gpus) {
    largest = std::max(largest, gpu.capacity);
    base.gpu_capacities.push_back(gpu.capacity);
  }
  base.gpu_count = static_cast<int>(gpus.size());
  base.memory_per_gpu = largest;
  // One size: the plain form (memory_per_gpu each), as a device-plugin node has it.
  if (std::all_of(gpus.begin(), gpus.end(),
                  [&](const DraGpu& gpu) { return gpu.capacity == largest; }))
    base.gpu_capacities.clear();
  if (base.gpu_model.empty()) base.gpu_model = gpus.front().product;
  return base;
}

std::vector<DraHolding> DraState::holdings_on(std::string_view node) const {
  return holdings_and_problems(node, nullptr);
}

std::vector<DraHolding> DraState::holdings_and_problems(std::string_view node,
                                                        std::vector<DraWarning>* problems) const {
  std::vector<DraHolding> result;
  const std::vector<DraGpu> gpus = gpus_of(node);
  if (gpus.empty()) return result;
  // Claims with a result in a pool of the node's devices: kube's allocator counts a claim on
  // the device it was given, so the node its selector names does not matter here.
  std::set<std::string_view> keys;
  for (const auto& gpu : gpus) {
    if (auto it = claims_by_pool_.find(pool_key(gpu.driver, gpu.pool)); it != claims_by_pool_.end())
      keys.insert(it->second.begin(), it->second.end());
  }
  auto find_gpu = [&](const DraResult& r) -> std::size_t {
    for (std::size_t i = 0; i < gpus.size(); ++i) {
      if (gpus[i].driver == r.driver && gpus[i].pool == r.pool && gpus[i].device == r.device)
        return i;
    }
    return gpus.size();
  };
  std::vector<Units> held(gpus.size(), 0);
  std::vector<Units> asked(gpus.size(), 0);
  std::vector<std::string_view> first_cut(gpus.size());
  for (const std::string_view key : keys) {
    const DraClaim& claim = claims_.find(key)->second;
    if (!claim.allocated) continue;
    for (const auto& r : claim.results) {
      const std::size_t i = r.driver == config_.driver ? find_gpu(r) : gpus.size();
      if (i == gpus.size()) continue;
      const DraGpu& gpu = gpus[i];
      const Units want = r.consumed_bytes
                             ? std::clamp<Units>(units_of_claim(*r.consumed_bytes), 0, gpu.capacity)
                             : gpu.capacity;
      // The sum is clamped, not each holding: what is left of the device, at most.
      const Units amount = std::min(want, gpu.capacity - held[i]);
      if (amount < want && first_cut[i].empty()) first_cut[i] = key;
      held[i] += amount;
      asked[i] = asked[i] > std::numeric_limits<Units>::max() - want
                     ? std::numeric_limits<Units>::max()
                     : asked[i] + want;
      DraHolding holding;
      holding.gpu = gpu.index;
      holding.amount = amount;
      holding.claim = std::string(key);
      if (!claim.reserved_for.empty())
        holding.pod = claim.namespace_name + "/" + claim.reserved_for.front();
      holding.device = r.device;
      holding.share_id = r.share_id;
      result.push_back(std::move(holding));
    }
  }
  if (problems != nullptr) {
    for (std::size_t i = 0; i < gpus.size(); ++i) {
      if (first_cut[i].empty()) continue;
      problems->push_back(
          {"ResourceClaim " + std::string(first_cut[i]), std::string(node),
           fmt::format("ResourceClaim {}: allocated claims hold {} units of device {}/{}/{} on "
                       "node {}, more than its capacity {}; counted as {} (from this claim on, "
                       "what they hold is cut)",
                       first_cut[i], asked[i], gpus[i].driver, gpus[i].pool, gpus[i].device, node,
                       gpus[i].capacity, gpus[i].capacity)});
    }
  }
  return result;
}

std::set<std::string> DraState::nodes() const {
  std::set<std::string> result;
  for (const auto& [node, names] : slices_by_node_) {
    if (!node.empty()) result.insert(node);
  }
  for (const auto& [node, keys] : claims_on_node_) result.insert(node);
  return result;
}

std::vector<DraWarning> DraState::claim_problems(const DraClaim& claim) const {
  std::vector<DraWarning> result;
  if (!claim.allocated) return result;
  const std::string key = claim.key();
  for (const auto& r : claim.results) {
    if (r.driver != config_.driver) continue;
    const auto device = device_node_.find(pool_key(r.driver, r.pool) + "/" + r.device);
    if (device == device_node_.end()) {
      result.push_back({"ResourceClaim " + key, claim.node,
                        fmt::format("ResourceClaim {}: allocated device {}/{}/{} is not "
                                    "published by any current ResourceSlice; its memory is not "
                                    "counted",
                                    key, r.driver, r.pool, r.device)});
    } else if (!claim.node.empty() && device->second != claim.node) {
      result.push_back(
          {"ResourceClaim " + key, device->second,
           fmt::format("ResourceClaim {}: its allocation's node selector names node {}, but "
                       "device {}/{}/{} is published by node {}; counted on node {}, by device",
                       key, claim.node, r.driver, r.pool, r.device, device->second,
                       device->second)});
    }
  }
  return result;
}

std::vector<DraWarning> DraState::unknown_node_problems(const std::string& key,
                                                        const std::string& node) const {
  return {{"ResourceClaim " + key, node,
           fmt::format("ResourceClaim {}: allocated on node {}, which is not a node of the "
                       "cluster; its memory is not counted",
                       key, node)}};
}

std::vector<DraWarning> DraState::class_problems(const DraDeviceClass& device_class) const {
  std::vector<DraWarning> result;
  const bool ours = device_class.driver.empty() ? device_class.name == config_.driver
                                                : device_class.driver == config_.driver;
  if (!ours) return result;
  for (const auto& clause : device_class.unread) {
    result.push_back({"DeviceClass " + device_class.name, "",
                      fmt::format("DeviceClass {}: selector clause `{}` is not evaluated; the "
                                  "class is taken to select every device of driver {} that its "
                                  "other clauses select",
                                  device_class.name, clause, config_.driver)});
  }
  return result;
}

std::vector<DraWarning> DraState::problems(
    const std::function<bool(std::string_view)>& node_known) const {
  std::vector<DraWarning> result;
  for (const auto* kept :
       {&view_problems_, &holding_problems_, &claim_problems_, &class_problems_}) {
    for (const auto& [key, warnings] : *kept)
      result.insert(result.end(), warnings.begin(), warnings.end());
  }
  for (const auto& [node, keys] : claims_on_node_) {
    if (node_known(node)) continue;
    for (const auto& key : keys) {
      for (auto& warning : unknown_node_problems(key, node)) result.push_back(std::move(warning));
    }
  }
  std::sort(result.begin(), result.end(), [](const DraWarning& a, const DraWarning& b) {
    return std::tie(a.message, a.object, a.node) < std::tie(b.message, b.object, b.node);
  });
  result.erase(std::unique(result.begin(), result.end()), result.end());
  return result;
}

std::vector<std::string> DraState::warnings(
    const std::function<bool(std::string_view)>& node_known) const {
  std::vector<std::string> result;
  for (auto& problem : problems(node_known)) {
    if (result.empty() || result.back() != problem.message)
      result.push_back(std::move(problem.message));
  }
  return result;
}

bool DraState::ours(const DraDeviceAsk& ask) const {
  const DraDeviceClass* device_class = find_class(ask.device_class);
  // A class we have not seen (or whose selector we cannot read) is taken as ours when it is
  // named after the driver, as the NVIDIA driver's classes are (gpu.nvidia.com).
  if (device_class == nullptr || device_class->driver.empty())
    return ask.device_class == config_.driver;
  return device_class->driver == config_.driver;
}

bool DraState::any_ours(const DraRequest& request) const {
  const auto ways = request.ways();
  return std::any_of(ways.begin(), ways.end(), [&](const DraDeviceAsk& ask) { return ours(ask); });
}

namespace {

// kube's allocator on one node: depth first over the requests, each request's alternatives in
// order, the devices of an ask in allocator order (first fit, no backtracking over devices).
class FirstFitSearch {
 public:
  FirstFitSearch(const DraState& dra, std::span<const DraGpu> gpus,
                 std::span<const DraRequest> requests)
      : dra_(dra), gpus_(gpus), requests_(requests) {}

  struct Placement {
    std::vector<Units> free;
    std::vector<char> held;
    std::vector<GpuTake> takes;
  };

  // Whether requests [from, end) fit on top of `placement`, which then holds their takes. On
  // failure `placement` is left changed: a caller with alternatives to try passes a copy.
  bool fit(std::size_t from, Placement& placement) {
    if (from == requests_.size()) return true;
    const auto ways = requests_[from].ways();
    if (ways.size() == 1) return take(ways.front(), placement) && fit(from + 1, placement);
    for (const DraDeviceAsk& way : ways) {
      // kube's search has no bound but its context's deadline; a pod whose alternatives multiply
      // past this many tries is predicted to fit nowhere.
      if (++tries_ > kMaxTries) return false;
      Placement attempt = placement;
      if (take(way, attempt) && fit(from + 1, attempt)) {
        placement = std::move(attempt);
        return true;
      }
    }
    return false;
  }

 private:
  static constexpr int kMaxTries = 4096;

  bool take(const DraDeviceAsk& ask, Placement& placement) const {
    if (!dra_.ours(ask)) return true;
    // Only the devices the ask's class selects (a class not seen selects every device).
    const DraDeviceClass* device_class = dra_.find_class(ask.device_class);
    const auto selected = [&](std::size_t i) {
      return device_class == nullptr || device_class->selects(gpus_[i].attributes);
    };
    std::int64_t selectable = 0;
    for (std::size_t i = 0; i < gpus_.size(); ++i) selectable += selected(i) ? 1 : 0;
    if (ask.all && selectable == 0) return false;
    std::vector<char> taken_here(gpus_.size(), 0);
    const std::int64_t wanted = ask.all ? selectable : std::max<std::int64_t>(1, ask.count);
    if (wanted > selectable) return false;
    std::int64_t got = 0;
    for (std::size_t i = 0; i < gpus_.size() && got < wanted; ++i) {
      if (!selected(i)) continue;
      const Units need = gpus_[i].shareable && ask.memory_bytes
                             ? dra_.units_of_claim(*ask.memory_bytes)
                             : gpus_[i].capacity;
      const bool available = gpus_[i].shareable ? placement.free[i] >= need
                                                : !placement.held[i] && placement.free[i] >= need;
      if (!available || taken_here[i]) {
        if (ask.all) return false;  // All wants every device
        continue;
      }
      taken_here[i] = 1;
      placement.free[i] -= need;
      placement.held[i] = 1;
      placement.takes.push_back({gpus_[i].index, need});
      ++got;
    }
    return got == wanted;
  }

  const DraState& dra_;
  std::span<const DraGpu> gpus_;
  std::span<const DraRequest> requests_;
  int tries_ = 0;
};

}  // namespace

std::optional<std::vector<GpuTake>> DraState::first_fit(
    const NodeState& node, std::span<const DraRequest> requests) const {
  std::vector<DraGpu> worked_out;
  const std::vector<DraGpu>* cached = cached_gpus(node.name());
  if (cached == nullptr) worked_out = view_of(node.name()).gpus;
  const std::vector<DraGpu>& gpus = cached != nullptr ? *cached : worked_out;
  FirstFitSearch::Placement placement;
  placement.free.assign(gpus.size(), 0);
  placement.held.assign(gpus.size(), 0);
  for (std::size_t i = 0; i < gpus.size(); ++i) {
    const auto index = static_cast<std::size_t>(gpus[i].index);
    if (index >= node.gpus().size() || !node.gpus()[index].healthy) continue;
    const GpuState& state = node.gpus()[index];
    placement.free[i] = std::min(state.free(), gpus[i].capacity);
    placement.held[i] = state.used > 0;
  }
  FirstFitSearch search(*this, gpus, requests);
  if (!search.fit(0, placement)) return std::nullopt;
  return std::move(placement.takes);
}

}  // namespace gpushare::core
