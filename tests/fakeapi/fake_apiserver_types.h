#pragma once
// Small vocabulary types shared by the fake API server's parts and its users.

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace gpushare::testing {

// The resources the fake serves.
// resource.k8s.io/v1 (Dynamic Resource Allocation): ResourceSlices, ResourceClaims,
// ResourceClaimTemplates, DeviceClasses. policy/v1 PodDisruptionBudgets (read by pods/eviction)
// and core/v1 Events.
enum class Resource {
  Nodes,
  Pods,
  ConfigMaps,
  Leases,
  ResourceSlices,
  ResourceClaims,
  ResourceClaimTemplates,
  DeviceClasses,
  PodDisruptionBudgets,
  Events
};
inline constexpr std::array<Resource, 10> kAllResources = {Resource::Nodes,
                                                           Resource::Pods,
                                                           Resource::ConfigMaps,
                                                           Resource::Leases,
                                                           Resource::ResourceSlices,
                                                           Resource::ResourceClaims,
                                                           Resource::ResourceClaimTemplates,
                                                           Resource::DeviceClasses,
                                                           Resource::PodDisruptionBudgets,
                                                           Resource::Events};

// What a request did, for fault targeting and request counters.
// Evict: a POST of pods/eviction.
enum class Verb { Discovery, Get, List, Watch, Create, Update, Patch, Delete, Bind, Evict, Other };
std::string_view to_string(Verb verb);

// The static facts about one resource type.
struct ResourceInfo {
  Resource resource;
  std::string_view plural;       // "pods"
  std::string_view singular;     // "pod"
  std::string_view kind;         // "Pod"
  std::string_view list_kind;    // "PodList"
  std::string_view group;        // "" for core
  std::string_view version;      // "v1"
  std::string_view api_version;  // "v1" or "coordination.k8s.io/v1"
  std::string_view short_name;   // "po"; may be empty
  bool namespaced;
  bool has_status;  // main-resource writes keep the old status (status subresource)
};

const ResourceInfo& info(Resource resource);
std::optional<Resource> resource_from_plural(std::string_view group, std::string_view plural);

}  // namespace gpushare::testing
