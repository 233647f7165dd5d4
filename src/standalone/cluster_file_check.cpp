#include "gpushare/standalone/cluster_file_check.h"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <set>
#include <span>
#include <utility>

#include "gpushare/kube/annotations.h"
#include "gpushare/kube/dra_objects.h"
#include "gpushare/kube/node_info.h"
#include "gpushare/service/config_warnings.h"

namespace gpushare::standalone {
namespace {

using kube::Json;
using Keys = std::span<const std::string_view>;
using Path = std::vector<std::string>;

// Field names of the Kubernetes API (v1.32) for the parts of objects checked here.
constexpr std::string_view kTopKeys[] = {"apiVersion", "kind", "metadata", "spec", "status"};
constexpr std::string_view kConfigMapKeys[] = {"apiVersion", "kind",       "metadata",
                                               "data",       "binaryData", "immutable"};
constexpr std::string_view kListKeys[] = {"apiVersion", "kind", "metadata", "items"};
constexpr std::string_view kObjectMetaKeys[] = {"name",
                                                "generateName",
                                                "namespace",
                                                "selfLink",
                                                "uid",
                                                "resourceVersion",
                                                "generation",
                                                "creationTimestamp",
                                                "deletionTimestamp",
                                                "deletionGracePeriodSeconds",
                                                "labels",
                                                "annotations",
                                                "ownerReferences",
                                                "finalizers",
                                                "managedFields",
                                                "clusterName"};
constexpr std::string_view kPodSpecKeys[] = {"volumes",
                                             "initContainers",
                                             "containers",
                                             "ephemeralContainers",
                                             "restartPolicy",
                                             "terminationGracePeriodSeconds",
                                             "activeDeadlineSeconds",
                                             "dnsPolicy",
                                             "nodeSelector",
                                             "serviceAccountName",
                                             "serviceAccount",
                                             "automountServiceAccountToken",
                                             "nodeName",
                                             "hostNetwork",
                                             "hostPID",
                                             "hostIPC",
                                             "shareProcessNamespace",
                                             "securityContext",
                                             "imagePullSecrets",
                                             "hostname",
                                             "subdomain",
                                             "affinity",
                                             "schedulerName",
                                             "tolerations",
                                             "hostAliases",
                                             "priorityClassName",
                                             "priority",
                                             "dnsConfig",
                                             "readinessGates",
                                             "runtimeClassName",
                                             "enableServiceLinks",
                                             "preemptionPolicy",
                                             "overhead",
                                             "topologySpreadConstraints",
                                             "setHostnameAsFQDN",
                                             "os",
                                             "hostUsers",
                                             "schedulingGates",
                                             "resourceClaims",
                                             "resources"};
constexpr std::string_view kPodStatusKeys[] = {"phase",
                                               "conditions",
                                               "message",
                                               "reason",
                                               "nominatedNodeName",
                                               "hostIP",
                                               "hostIPs",
                                               "podIP",
                                               "podIPs",
                                               "startTime",
                                               "initContainerStatuses",
                                               "containerStatuses",
                                               "qosClass",
                                               "ephemeralContainerStatuses",
                                               "resize",
                                               "resourceClaimStatuses",
                                               "observedGeneration"};
constexpr std::string_view kContainerKeys[] = {"name",
                                               "image",
                                               "command",
                                               "args",
                                               "workingDir",
                                               "ports",
                                               "envFrom",
                                               "env",
                                               "resources",
                                               "resizePolicy",
                                               "restartPolicy",
                                               "volumeMounts",
                                               "volumeDevices",
                                               "livenessProbe",
                                               "readinessProbe",
                                               "startupProbe",
                                               "lifecycle",
                                               "terminationMessagePath",
                                               "terminationMessagePolicy",
                                               "imagePullPolicy",
                                               "securityContext",
                                               "stdin",
                                               "stdinOnce",
                                               "tty"};
constexpr std::string_view kResourcesKeys[] = {"limits", "requests", "claims"};
constexpr std::string_view kNodeSpecKeys[] = {
    "podCIDR", "podCIDRs", "providerID", "unschedulable", "taints", "configSource", "externalID"};
constexpr std::string_view kNodeStatusKeys[] = {
    "capacity",        "allocatable",     "phase",   "conditions",   "addresses",
    "daemonEndpoints", "nodeInfo",        "images",  "volumesInUse", "volumesAttached",
    "config",          "runtimeHandlers", "features"};

std::string lower(std::string_view text) {
  std::string out(text);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return std::tolower(c); });
  return out;
}

// Levenshtein distance, case-insensitive (a key that differs only in case is a typo too).
std::size_t edit_distance(std::string_view a_text, std::string_view b_text) {
  const std::string a = lower(a_text);
  const std::string b = lower(b_text);
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

constexpr std::size_t kTypoDistance = 2;

// The known key `key` is most likely a misspelling of, if any.
std::string_view near_miss(std::string_view key, const std::vector<std::string_view>& known) {
  std::string_view best;
  std::size_t best_distance = kTypoDistance + 1;
  for (std::string_view candidate : known) {
    const std::size_t distance = edit_distance(key, candidate);
    if (distance < best_distance) {
      best = candidate;
      best_distance = distance;
    }
  }
  return best;
}

Path extend(const Path& path, std::string_view key) {
  Path out = path;
  out.emplace_back(key);
  return out;
}

class Checker {
 public:
  Checker(const kube::ResourceNames& names, std::vector<ClusterFileProblem>& problems)
      : names_(names), problems_(problems) {}

  void list(const Json& list) {
    keys(list, {}, kListKeys, "the List");
    const Json* items = kube::find_key(list, "items");
    if (items == nullptr || !items->is_array()) return;
    for (const Json& item : *items) {
      if (!item.is_object()) continue;
      const Json* metadata = kube::find_key(item, "metadata");
      const Json* name = metadata != nullptr && metadata->is_object()
                             ? kube::find_key(*metadata, "name")
                             : nullptr;
      if (item.value("kind", "") == "Node" && name != nullptr && name->is_string()) {
        nodes_.insert(name->get<std::string>());
      }
    }
    for (std::size_t i = 0; i < items->size(); ++i) item((*items)[i], {"items", std::to_string(i)});
  }

 private:
  void problem(Path path, std::string message, bool fatal = true) {
    problems_.push_back({std::move(path), std::move(message), fatal});
  }

  // Keys of `object` not in `known`: fatal when close to a known one.
  void keys(const Json& object, const Path& path, Keys known, std::string_view where) {
    if (!object.is_object()) return;
    const std::vector<std::string_view> candidates(known.begin(), known.end());
    for (const auto& [key, value] : object.items()) {
      if (std::find(candidates.begin(), candidates.end(), key) != candidates.end()) continue;
      if (const std::string_view guess = near_miss(key, candidates); !guess.empty()) {
        problem(extend(path, key),
                fmt::format("{}: unknown key \"{}\" (did you mean \"{}\"?)", where, key, guess));
      } else {
        problem(extend(path, key), fmt::format("{}: unknown key \"{}\", ignored", where, key),
                false);
      }
    }
  }

  // Keys that are one of ours misspelt: resources (aliyun.com/gpu-mem) and annotations.
  void our_keys(const Json* object, const Path& path, const std::vector<std::string_view>& ours,
                std::string_view where) {
    if (object == nullptr || !object->is_object()) return;
    for (const auto& [key, value] : object->items()) {
      if (std::find(ours.begin(), ours.end(), key) != ours.end()) continue;
      if (const std::string_view guess = near_miss(key, ours); !guess.empty()) {
        problem(extend(path, key),
                fmt::format("{}: \"{}\" is not read (did you mean \"{}\"?)", where, key, guess));
      }
    }
  }

  const Json* child(const Json& object, std::string_view key) {
    const Json* value = kube::find_key(object, key);
    return value != nullptr && value->is_object() ? value : nullptr;
  }

  void item(const Json& object, const Path& path) {
    if (!object.is_object()) return;
    const std::string kind = object.value("kind", "");
    const Json* metadata = child(object, "metadata");
    const std::string name = metadata != nullptr ? metadata->value("name", "") : "";
    const std::string ns = metadata != nullptr ? metadata->value("namespace", "") : "";
    const std::string what = fmt::format("{} {}", kind, ns.empty() ? name : ns + "/" + name);
    // DRA objects are checked by their decoders, as live mode's watches read them.
    if (kube::is_dra_kind(kind)) return;
    if (kind != "Node" && kind != "Pod" && kind != "ConfigMap") {
      std::vector<std::string_view> known = {"Node", "Pod", "ConfigMap"};
      known.insert(known.end(), kube::kDraKinds.begin(), kube::kDraKinds.end());
      if (const std::string_view guess = near_miss(kind, known); !guess.empty()) {
        problem(extend(path, "kind"),
                fmt::format("item kind \"{}\" (did you mean \"{}\"?)", kind, guess));
      }
      return;
    }
    keys(object, path, kind == "ConfigMap" ? Keys(kConfigMapKeys) : Keys(kTopKeys), what);
    if (metadata != nullptr)
      keys(*metadata, extend(path, "metadata"), kObjectMetaKeys, what + " metadata");
    if (kind == "Node") node(object, path, what);
    if (kind == "Pod") pod(object, path, metadata, what);
    if (kind == "ConfigMap") {
      try {
        configmap(object, path, what);
      } catch (const kube::BadInput&) {
        // Not a ConfigMap at all: StandaloneCluster says so, naming the item.
      }
    }
  }

  void node(const Json& object, const Path& path, const std::string& what) {
    if (const Json* spec = child(object, "spec"))
      keys(*spec, extend(path, "spec"), kNodeSpecKeys, what + " spec");
    const Json* status = child(object, "status");
    if (status == nullptr) return;
    const Path at = extend(path, "status");
    keys(*status, at, kNodeStatusKeys, what + " status");
    for (std::string_view list : {"capacity", "allocatable"}) {
      our_keys(child(*status, list), extend(at, list), {names_.memory, names_.count},
               fmt::format("{} status.{}", what, list));
    }
  }

  void pod(const Json& object, const Path& path, const Json* metadata, const std::string& what) {
    if (metadata != nullptr) {
      our_keys(
          child(*metadata, "annotations"), extend(extend(path, "metadata"), "annotations"),
          {kube::kAnnotationGpuIndex, kube::kAnnotationPodRequest, kube::kAnnotationDeviceMemory,
           kube::kAnnotationAssigned, kube::kAnnotationAssumeTime},
          what + " annotations");
    }
    if (const Json* status = child(object, "status")) {
      keys(*status, extend(path, "status"), kPodStatusKeys, what + " status");
    }
    const Json* spec = child(object, "spec");
    if (spec == nullptr) return;
    const Path at = extend(path, "spec");
    keys(*spec, at, kPodSpecKeys, what + " spec");
    if (const Json* node = kube::find_key(*spec, "nodeName");
        node != nullptr && node->is_string()) {
      const std::string node_name = node->get<std::string>();
      if (!node_name.empty() && !nodes_.contains(node_name)) {
        problem(
            extend(at, "nodeName"),
            fmt::format("{}: spec.nodeName \"{}\" names no Node of this file", what, node_name));
      }
    }
    for (std::string_view list : {"containers", "initContainers"}) {
      const Json* containers = kube::find_key(*spec, list);
      if (containers == nullptr || !containers->is_array()) continue;
      for (std::size_t i = 0; i < containers->size(); ++i) {
        const Json& container = (*containers)[i];
        const Path container_at = extend(extend(at, list), std::to_string(i));
        const std::string where =
            fmt::format("{} {} {}", what, list == "containers" ? "container" : "init container",
                        container.is_object() ? container.value("name", "") : "");
        keys(container, container_at, kContainerKeys, where);
        const Json* resources = container.is_object() ? child(container, "resources") : nullptr;
        if (resources == nullptr) continue;
        const Path resources_at = extend(container_at, "resources");
        keys(*resources, resources_at, kResourcesKeys, where + " resources");
        for (std::string_view kind : {"limits", "requests"}) {
          our_keys(child(*resources, kind), extend(resources_at, kind), {names_.memory},
                   fmt::format("{} resources.{}", where, kind));
        }
      }
    }
  }

  void configmap(const Json& object, const Path& path, const std::string& what) {
    auto parsed = kube::parse_unhealthy_configmap(object);
    if (!parsed) return;
    const Json* metadata = child(object, "metadata");
    const std::string ns = metadata != nullptr ? metadata->value("namespace", "") : "";
    if (ns != names_.unhealthy_namespace) {
      problem(extend(path, "metadata"), fmt::format("{}: an unhealthy-gpu ConfigMap must be in "
                                                    "namespace {} (live mode reads only that one)",
                                                    what, names_.unhealthy_namespace));
    }
    if (!nodes_.contains(parsed->node)) {
      problem(extend(extend(path, "metadata"), "name"),
              fmt::format(
                  "{}: node \"{}\" (from the name unhealthy-gpu-<node>) is no Node of this file",
                  what, parsed->node));
    }
    for (const service::ConfigWarning& warning : service::unhealthy_configmap_warnings(*parsed)) {
      problem(extend(extend(path, "data"), warning.key), warning.message);
    }
    const Json* data = child(object, "data");
    if (parsed->indices.empty() && parsed->rejected.empty() && parsed->unknown_keys.empty() &&
        (data == nullptr || kube::find_key(*data, "gpus") == nullptr)) {
      problem(path, fmt::format("{}: has no data.gpus, so it marks no GPU unhealthy", what));
    }
  }

  const kube::ResourceNames& names_;
  std::vector<ClusterFileProblem>& problems_;
  std::set<std::string, std::less<>> nodes_;
};

// Walks `path` down from `root`: the line of the last key (or element) found on the way.
int find_line(const YAML::Node& root, const Path& path) {
  YAML::Node node;
  node.reset(root);  // YAML::Node's operator= would assign into the tree, not rebind
  YAML::Mark mark = root.Mark();
  for (const std::string& step : path) {
    if (node.IsSequence()) {
      std::size_t index = 0;
      const auto [end, ec] = std::from_chars(step.data(), step.data() + step.size(), index);
      if (ec != std::errc() || end != step.data() + step.size() || index >= node.size())
        return mark.line + 1;
      const YAML::Node element = std::as_const(node)[index];
      node.reset(element);
      mark = node.Mark();
    } else if (node.IsMap()) {
      bool found = false;
      for (const auto& entry : node) {
        if (entry.first.IsScalar() && entry.first.Scalar() == step) {
          mark = entry.first.Mark();
          node.reset(entry.second);
          found = true;
          break;
        }
      }
      if (!found) return mark.line + 1;
    } else {
      return mark.line + 1;
    }
  }
  return mark.line + 1;
}

}  // namespace

std::vector<ClusterFileProblem> check_cluster_list(const Json& list,
                                                   const kube::ResourceNames& names) {
  std::vector<ClusterFileProblem> problems;
  if (list.is_object()) Checker(names, problems).list(list);
  return problems;
}

int line_of(std::string_view text, const std::vector<std::string>& path) {
  try {
    const YAML::Node root = YAML::Load(std::string(text));
    return find_line(root, path);
  } catch (const YAML::Exception&) {
    return 0;
  }
}

}  // namespace gpushare::standalone
