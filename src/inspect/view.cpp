#include "gpushare/inspect/view.h"

#include <fmt/format.h>

#include <algorithm>
#include <tuple>

namespace gpushare::inspect {
namespace {

using kube::Json;

// Reads `key` as T when present and of the right type; the fallback otherwise. The Go
// extender's document lacks most of our additions, so absence is normal.
template <typename T>
T field(const Json& object, std::string_view key, T fallback) {
  const Json* value = kube::find_key(object, key);
  if (value == nullptr || value->is_null()) return fallback;
  if constexpr (std::is_same_v<T, bool>) {
    return value->is_boolean() ? value->get<bool>() : fallback;
  } else if constexpr (std::is_same_v<T, std::string>) {
    return value->is_string() ? value->get<std::string>() : fallback;
  } else {
    return value->is_number_integer() ? value->get<T>() : fallback;
  }
}

PodView pod_view(const Json& pod) {
  if (!pod.is_object()) throw InspectError("inspect JSON: a pod entry is not an object");
  PodView view;
  view.name = field<std::string>(pod, "name", "");
  view.namespace_name = field<std::string>(pod, "namespace", "");
  view.uid = field<std::string>(pod, "uid", "");
  view.used = field<core::Units>(pod, "usedGPU", 0);
  view.assumed = field<bool>(pod, "assumed", false);
  view.phase = field<std::string>(pod, "phase", "");
  view.model_pin = field<std::string>(pod, "modelPin", "");
  if (const Json* allowed = kube::find_key(pod, "allowedModels"); allowed && allowed->is_array()) {
    for (const Json& model : *allowed) {
      if (model.is_string()) view.allowed_models.push_back(model.get<std::string>());
    }
  }
  return view;
}

std::vector<PodView> pod_views(const Json& object, std::string_view key) {
  std::vector<PodView> pods;
  const Json* list = kube::find_key(object, key);
  if (list == nullptr || list->is_null()) return pods;
  if (!list->is_array()) throw InspectError(fmt::format("inspect JSON: {} is not an array", key));
  for (const Json& pod : *list) pods.push_back(pod_view(pod));
  // Stable output whatever order the source used (the model orders pods by UID).
  std::sort(pods.begin(), pods.end(), [](const PodView& a, const PodView& b) {
    return std::tie(a.namespace_name, a.name, a.uid) < std::tie(b.namespace_name, b.name, b.uid);
  });
  return pods;
}

// devs[].draClaims, sorted by claim so that the tables do not depend on the source's order.
std::vector<DraClaimView> dra_claim_views(const Json& dev) {
  std::vector<DraClaimView> claims;
  const Json* list = kube::find_key(dev, "draClaims");
  if (list == nullptr || list->is_null()) return claims;
  if (!list->is_array()) throw InspectError("inspect JSON: draClaims is not an array");
  for (const Json& claim : *list) {
    if (!claim.is_object()) throw InspectError("inspect JSON: a draClaims entry is not an object");
    claims.push_back({field<std::string>(claim, "claim", ""), field<std::string>(claim, "pod", ""),
                      field<core::Units>(claim, "usedGPU", 0)});
  }
  std::sort(claims.begin(), claims.end(), [](const DraClaimView& a, const DraClaimView& b) {
    return std::tie(a.claim, a.pod) < std::tie(b.claim, b.pod);
  });
  return claims;
}

std::string after_slash(const std::string& key) {
  const auto slash = key.find('/');
  return slash == std::string::npos ? key : key.substr(slash + 1);
}

}  // namespace

std::string DraClaimView::claim_namespace() const {
  const auto slash = claim.find('/');
  return slash == std::string::npos ? "" : claim.substr(0, slash);
}

std::string DraClaimView::claim_name() const {
  return after_slash(claim);
}

std::string DraClaimView::pod_name() const {
  return after_slash(pod);
}

core::Units NodeView::dra_used() const {
  core::Units sum = 0;
  for (const auto& gpu : gpus) {
    for (const auto& claim : gpu.dra_claims) sum += claim.used;
  }
  return sum;
}

std::string PodView::status() const {
  if (assumed) return "Assumed";
  return phase;
}

core::Units NodeView::unindexed_used() const {
  core::Units sum = 0;
  for (const auto& pod : unindexed) sum += pod.used;
  return sum;
}

ClusterView cluster_view(const Json& inspect) {
  const Json* nodes = inspect.is_object() ? kube::find_key(inspect, "nodes") : nullptr;
  if (nodes == nullptr || !nodes->is_array()) {
    throw InspectError("not an inspect document: no \"nodes\" array");
  }
  ClusterView view;
  for (const Json& node : *nodes) {
    if (!node.is_object()) throw InspectError("inspect JSON: a node entry is not an object");
    NodeView n;
    n.name = field<std::string>(node, "name", "");
    n.address = field<std::string>(node, "address", "");
    n.gpu_model = field<std::string>(node, "gpuModel", "");
    n.unschedulable = field<bool>(node, "unschedulable", false);
    n.misconfiguration = field<std::string>(node, "misconfiguration", "");
    n.total = field<core::Units>(node, "totalGPU", 0);
    n.used = field<core::Units>(node, "usedGPU", 0);
    if (const Json* devs = kube::find_key(node, "devs"); devs != nullptr && !devs->is_null()) {
      if (!devs->is_array()) throw InspectError("inspect JSON: devs is not an array");
      for (const Json& dev : *devs) {
        if (!dev.is_object()) throw InspectError("inspect JSON: a dev entry is not an object");
        GpuView gpu;
        gpu.id = field<int>(dev, "id", static_cast<int>(n.gpus.size()));
        gpu.total = field<core::Units>(dev, "totalGPU", 0);
        gpu.used = field<core::Units>(dev, "usedGPU", 0);
        gpu.healthy = field<bool>(dev, "healthy", true);
        gpu.pods = pod_views(dev, "pods");
        gpu.dra_device = field<std::string>(dev, "draDevice", "");
        gpu.dra_claims = dra_claim_views(dev);
        n.gpus.push_back(std::move(gpu));
      }
    }
    n.unindexed = pod_views(node, "unindexedPods");
    // Pods on a GPU index the node lacks count on the node like unindexed ones.
    for (PodView& pod : pod_views(node, "invalidIndexPods")) n.unindexed.push_back(std::move(pod));
    view.nodes.push_back(std::move(n));
  }
  if (const Json* models = kube::find_key(inspect, "gpuModels"); models && models->is_array()) {
    for (const Json& entry : *models) {
      if (!entry.is_object()) continue;
      ModelView m;
      m.model = field<std::string>(entry, "model", "");
      m.nodes = field<std::size_t>(entry, "nodes", 0);
      m.gpus = field<int>(entry, "gpus", 0);
      m.total = field<core::Units>(entry, "totalGPU", 0);
      m.used = field<core::Units>(entry, "usedGPU", 0);
      m.pinned_pods = field<std::size_t>(entry, "pinnedPods", 0);
      if (const Json* weight = kube::find_key(entry, "learnedPinnedWeight");
          weight && weight->is_number()) {
        m.learned_pinned_weight = weight->get<double>();
      }
      view.models.push_back(std::move(m));
    }
  }
  if (const Json* warnings = kube::find_key(inspect, "configWarnings");
      warnings != nullptr && warnings->is_array()) {
    for (const Json& warning : *warnings) {
      if (warning.is_object())
        view.config_warnings.push_back(field<std::string>(warning, "message", ""));
    }
  }
  return view;
}

}  // namespace gpushare::inspect
