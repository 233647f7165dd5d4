#include "fakeapi/fake_apiserver_store.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <mutex>
#include <random>
#include <stdexcept>

namespace gpushare::testing {

std::string_view to_string(Verb verb) {
  switch (verb) {
    case Verb::Discovery:
      return "discovery";
    case Verb::Get:
      return "get";
    case Verb::List:
      return "list";
    case Verb::Watch:
      return "watch";
    case Verb::Create:
      return "create";
    case Verb::Update:
      return "update";
    case Verb::Patch:
      return "patch";
    case Verb::Delete:
      return "delete";
    case Verb::Bind:
      return "bind";
    case Verb::Evict:
      return "evict";
    case Verb::Other:
      return "other";
  }
  return "other";
}

namespace {
constexpr std::array<ResourceInfo, 10> kResourceInfos = {{
    {Resource::Nodes, "nodes", "node", "Node", "NodeList", "", "v1", "v1", "no", false, true},
    {Resource::Pods, "pods", "pod", "Pod", "PodList", "", "v1", "v1", "po", true, true},
    {Resource::ConfigMaps, "configmaps", "configmap", "ConfigMap", "ConfigMapList", "", "v1", "v1",
     "cm", true, false},
    {Resource::Leases, "leases", "lease", "Lease", "LeaseList", "coordination.k8s.io", "v1",
     "coordination.k8s.io/v1", "", true, false},
    {Resource::ResourceSlices, "resourceslices", "resourceslice", "ResourceSlice",
     "ResourceSliceList", "resource.k8s.io", "v1", "resource.k8s.io/v1", "", false, false},
    {Resource::ResourceClaims, "resourceclaims", "resourceclaim", "ResourceClaim",
     "ResourceClaimList", "resource.k8s.io", "v1", "resource.k8s.io/v1", "", true, true},
    {Resource::ResourceClaimTemplates, "resourceclaimtemplates", "resourceclaimtemplate",
     "ResourceClaimTemplate", "ResourceClaimTemplateList", "resource.k8s.io", "v1",
     "resource.k8s.io/v1", "", true, false},
    {Resource::DeviceClasses, "deviceclasses", "deviceclass", "DeviceClass", "DeviceClassList",
     "resource.k8s.io", "v1", "resource.k8s.io/v1", "", false, false},
    {Resource::PodDisruptionBudgets, "poddisruptionbudgets", "poddisruptionbudget",
     "PodDisruptionBudget", "PodDisruptionBudgetList", "policy", "v1", "policy/v1", "pdb", true,
     true},
    {Resource::Events, "events", "event", "Event", "EventList", "", "v1", "v1", "ev", true, false},
}};
}  // namespace

const ResourceInfo& info(Resource resource) {
  for (const ResourceInfo& entry : kResourceInfos) {
    if (entry.resource == resource) return entry;
  }
  throw std::logic_error("unknown resource");
}

std::optional<Resource> resource_from_plural(std::string_view group, std::string_view plural) {
  for (const ResourceInfo& entry : kResourceInfos) {
    if (entry.group == group && entry.plural == plural) return entry.resource;
  }
  return std::nullopt;
}

namespace fakeapi {

using nlohmann::json;

std::string_view to_string(EventType type) {
  switch (type) {
    case EventType::Added:
      return "ADDED";
    case EventType::Modified:
      return "MODIFIED";
    case EventType::Deleted:
      return "DELETED";
  }
  return "ADDED";
}

std::string string_at(const json& object, std::string_view a, std::string_view b,
                      std::string_view c) {
  const json* node = &object;
  for (std::string_view part : {a, b, c}) {
    if (part.empty()) break;
    if (!node->is_object()) return {};
    auto it = node->find(part);
    if (it == node->end()) return {};
    node = &*it;
  }
  return node->is_string() ? node->get<std::string>() : std::string();
}

std::string name_of(const json& object) {
  return string_at(object, "metadata", "name");
}
std::string namespace_of(const json& object) {
  return string_at(object, "metadata", "namespace");
}

std::uint64_t rv_of(const json& object) {
  const std::string text = string_at(object, "metadata", "resourceVersion");
  if (text.empty() || text.find_first_not_of("0123456789") != std::string::npos) return 0;
  return std::stoull(text);
}

std::string make_key(Resource resource, std::string_view ns, std::string_view name) {
  if (info(resource).namespaced) return fmt::format("{}/{}", ns, name);
  return std::string(name);
}

std::string key_of(Resource resource, const json& object) {
  return make_key(resource, namespace_of(object), name_of(object));
}

std::string rfc3339_now(std::int64_t offset_seconds) {
  const std::time_t now =
      std::chrono::system_clock::to_time_t(std::chrono::system_clock::now()) + offset_seconds;
  std::tm utc{};
  gmtime_r(&now, &utc);
  char buffer[32];
  std::strftime(buffer, sizeof buffer, "%Y-%m-%dT%H:%M:%SZ", &utc);
  return buffer;
}

std::string new_uid() {
  static std::mutex mutex;
  static std::mt19937_64 generator{std::random_device{}()};
  std::uint64_t high = 0;
  std::uint64_t low = 0;
  {
    std::lock_guard lock(mutex);
    high = generator();
    low = generator();
  }
  // Version 4, variant 1.
  high = (high & 0xFFFFFFFFFFFF0FFFULL) | 0x0000000000004000ULL;
  low = (low & 0x3FFFFFFFFFFFFFFFULL) | 0x8000000000000000ULL;
  return fmt::format("{:08x}-{:04x}-{:04x}-{:04x}-{:012x}", high >> 32, (high >> 16) & 0xFFFF,
                     high & 0xFFFF, low >> 48, low & 0xFFFFFFFFFFFFULL);
}

ObjectStore::ObjectStore(std::uint64_t initial_rv, std::size_t max_history)
    : current_rv_(initial_rv),
      compacted_rv_(initial_rv),
      max_history_(std::max<std::size_t>(1, max_history)) {
  for (Resource resource : kAllResources) objects_[resource];
}

const json* ObjectStore::find(Resource resource, std::string_view key) const {
  const ObjectMap& map = objects_.at(resource);
  auto it = map.find(key);
  return it == map.end() ? nullptr : &it->second;
}

const ObjectMap& ObjectStore::objects(Resource resource) const {
  return objects_.at(resource);
}

std::uint64_t ObjectStore::next_rv() {
  return ++current_rv_;
}

void ObjectStore::record(HistoryEvent event) {
  history_.push_back(std::move(event));
  while (history_.size() > max_history_) {
    compacted_rv_ = std::max(compacted_rv_, history_.front().rv);
    history_.pop_front();
  }
}

const json& ObjectStore::add(Resource resource, json object) {
  const std::uint64_t rv = next_rv();
  object["metadata"]["resourceVersion"] = std::to_string(rv);
  std::string key = key_of(resource, object);
  auto [it, inserted] = objects_[resource].insert_or_assign(key, object);
  (void)inserted;
  record({rv, resource, std::move(key), EventType::Added, std::move(object), json()});
  return it->second;
}

const json& ObjectStore::modify(Resource resource, json object) {
  std::string key = key_of(resource, object);
  auto it = objects_[resource].find(key);
  if (it == objects_[resource].end()) throw std::logic_error("modify of a missing object");
  const std::uint64_t rv = next_rv();
  object["metadata"]["resourceVersion"] = std::to_string(rv);
  json previous = std::exchange(it->second, object);
  record(
      {rv, resource, std::move(key), EventType::Modified, std::move(object), std::move(previous)});
  return it->second;
}

json ObjectStore::erase(Resource resource, std::string_view key) {
  auto it = objects_[resource].find(key);
  if (it == objects_[resource].end()) throw std::logic_error("erase of a missing object");
  const std::uint64_t rv = next_rv();
  json previous = std::move(it->second);
  objects_[resource].erase(it);
  // A DELETED event carries the last state with the RV of the deletion.
  json last = previous;
  last["metadata"]["resourceVersion"] = std::to_string(rv);
  record({rv, resource, std::string(key), EventType::Deleted, last, std::move(previous)});
  return last;
}

ObjectMap ObjectStore::snapshot_at(Resource resource, std::uint64_t rv) const {
  if (rv < compacted_rv_) throw std::logic_error("snapshot of compacted history");
  ObjectMap snapshot = objects_.at(resource);
  // Undo the events after `rv`, newest first.
  for (auto it = history_.rbegin(); it != history_.rend() && it->rv > rv; ++it) {
    if (it->resource != resource) continue;
    if (it->type == EventType::Added) {
      snapshot.erase(it->key);
    } else {
      snapshot.insert_or_assign(it->key, it->previous);
    }
  }
  return snapshot;
}

std::deque<HistoryEvent>::const_iterator ObjectStore::events_after(std::uint64_t after) const {
  return std::upper_bound(
      history_.cbegin(), history_.cend(), after,
      [](std::uint64_t rv, const HistoryEvent& event) { return rv < event.rv; });
}

void ObjectStore::set_max_history(std::size_t max_history) {
  max_history_ = std::max<std::size_t>(1, max_history);
  while (history_.size() > max_history_) {
    compacted_rv_ = std::max(compacted_rv_, history_.front().rv);
    history_.pop_front();
  }
}

void ObjectStore::compact(std::uint64_t rv) {
  rv = std::min(rv, current_rv_);
  compacted_rv_ = std::max(compacted_rv_, rv);
  while (!history_.empty() && history_.front().rv <= compacted_rv_) history_.pop_front();
}

std::uint64_t ObjectStore::skip_rv() {
  return next_rv();
}

void ObjectStore::clear() {
  for (auto& [resource, map] : objects_) map.clear();
  history_.clear();
  compacted_rv_ = current_rv_;
}

}  // namespace fakeapi
}  // namespace gpushare::testing
