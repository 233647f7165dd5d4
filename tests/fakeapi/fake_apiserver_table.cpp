// Server-side printing for the fake API server: the Table columns and cells of
// kube-apiserver's printers (printPod, printNode, printConfigMap, printLease) and its
// content negotiation of `as=Table`.

#include "fakeapi/fake_apiserver_table.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <set>

namespace gpushare::testing::fakeapi {
namespace {

using nlohmann::json;

constexpr std::string_view kNameDoc =
    "Name must be unique within a namespace. Is required when creating resources, although some "
    "resources may allow a client to request the generation of an appropriate name "
    "automatically. Name is primarily intended for creation idempotence and configuration "
    "definition. Cannot be updated.";
constexpr std::string_view kAgeDoc =
    "CreationTimestamp is a timestamp representing the server time when this object was "
    "created. It is not guaranteed to be set in happens-before order across separate operations.";

json column(std::string_view name, std::string_view description, int priority = 0,
            std::string_view type = "string", std::string_view format = "") {
  return {{"name", name},
          {"type", type},
          {"format", format},
          {"description", description},
          {"priority", priority}};
}

json columns_of(Resource resource) {
  const json name = column("Name", kNameDoc, 0, "string", "name");
  const json age = column("Age", kAgeDoc);
  switch (resource) {
    case Resource::Pods:
      return json::array(
          {name,
           column("Ready", "The aggregate readiness state of this pod for accepting traffic."),
           column("Status", "The aggregate status of the containers in this pod."),
           column("Restarts",
                  "The number of times the containers in this pod have been restarted and when the "
                  "last container in this pod has restarted."),
           age, column("IP", "podIP address allocated to the pod.", 1),
           column("Node", "NodeName indicates in which node this pod is scheduled.", 1),
           column("Nominated Node",
                  "nominatedNodeName is set only when this pod preempts other pods on the node.",
                  1),
           column("Readiness Gates",
                  "If specified, all readiness gates will be evaluated for pod readiness.", 1)});
    case Resource::Nodes:
      return json::array(
          {name, column("Status", "The status of the node"),
           column("Roles", "The roles of the node"), age,
           column("Version", "Kubelet Version reported by the node."),
           column("Internal-IP", "List of addresses reachable to the node.", 1),
           column("External-IP", "List of addresses reachable to the node.", 1),
           column("OS-Image", "OS Image reported by the node from /etc/os-release.", 1),
           column("Kernel-Version", "Kernel Version reported by the node from 'uname -r'.", 1),
           column("Container-Runtime",
                  "ContainerRuntime Version reported by the node through runtime remote API.", 1)});
    case Resource::ConfigMaps:
      return json::array(
          {name, column("Data", "Data contains the configuration data.", 0, "integer"), age});
    case Resource::Leases:
      return json::array(
          {name,
           column("Holder",
                  "holderIdentity contains the identity of the holder of a current lease."),
           age});
    case Resource::ResourceSlices:
    case Resource::ResourceClaims:
    case Resource::ResourceClaimTemplates:
    case Resource::DeviceClasses:
    case Resource::PodDisruptionBudgets:
    case Resource::Events:
      break;
  }
  return json::array({name, age});
}

const json& field(const json& object, std::string_view key) {
  static const json null_value;
  if (!object.is_object()) return null_value;
  const auto it = object.find(key);
  return it == object.end() ? null_value : *it;
}

std::string text(const json& value, std::string_view fallback = "") {
  return value.is_string() ? value.get<std::string>() : std::string(fallback);
}

bool is_restartable_init_container(const json& container) {
  return text(field(container, "restartPolicy")) == "Always";
}

std::string or_none(std::string value) {
  return value.empty() ? "<none>" : value;
}

// An array field, or an empty array.
const json& list_at(const json& object, std::string_view key) {
  static const json empty = json::array();
  const json& value = field(object, key);
  return value.is_array() ? value : empty;
}

std::int64_t integer(const json& value) {
  return value.is_number_integer() ? value.get<std::int64_t>() : 0;
}

// printPod, as of Kubernetes 1.32 (without the "(Xs ago)" of the last restart, which needs
// lastState timestamps the fake never writes).
json pod_cells(const json& pod) {
  const json& spec = field(pod, "spec");
  const json& status = field(pod, "status");
  const std::string phase = text(field(status, "phase"));
  std::string reason = text(field(status, "reason"), phase);
  for (const json& condition : list_at(status, "conditions")) {
    if (text(field(condition, "type")) == "PodScheduled" &&
        text(field(condition, "reason")) == "SchedulingGated") {
      reason = "SchedulingGated";
    }
  }
  const json& containers = field(spec, "containers");
  const json& init_containers = field(spec, "initContainers");
  std::size_t total = containers.is_array() ? containers.size() : 0;
  std::set<std::string> restartable_inits;
  for (const json& init : list_at(spec, "initContainers")) {
    if (is_restartable_init_container(init)) {
      ++total;
      restartable_inits.insert(text(field(init, "name")));
    }
  }
  std::int64_t restarts = 0;
  std::int64_t restartable_restarts = 0;
  std::size_t ready = 0;
  bool initializing = false;
  const json& init_statuses = field(status, "initContainerStatuses");
  const std::size_t init_count = init_containers.is_array() ? init_containers.size() : 0;
  for (std::size_t i = 0; init_statuses.is_array() && i < init_statuses.size(); ++i) {
    const json& container = init_statuses[i];
    const json& state = field(container, "state");
    restarts += integer(field(container, "restartCount"));
    const bool restartable = restartable_inits.count(text(field(container, "name"))) > 0;
    if (restartable) restartable_restarts += integer(field(container, "restartCount"));
    const json& terminated = field(state, "terminated");
    const json& waiting = field(state, "waiting");
    if (terminated.is_object() && integer(field(terminated, "exitCode")) == 0) continue;
    if (restartable && field(container, "started") == true) {
      if (field(container, "ready") == true) ++ready;
      continue;
    }
    if (terminated.is_object()) {
      const std::string why = text(field(terminated, "reason"));
      if (!why.empty()) {
        reason = "Init:" + why;
      } else if (integer(field(terminated, "signal")) != 0) {
        reason = fmt::format("Init:Signal:{}", integer(field(terminated, "signal")));
      } else {
        reason = fmt::format("Init:ExitCode:{}", integer(field(terminated, "exitCode")));
      }
    } else if (waiting.is_object() && !text(field(waiting, "reason")).empty() &&
               text(field(waiting, "reason")) != "PodInitializing") {
      reason = "Init:" + text(field(waiting, "reason"));
    } else {
      reason = fmt::format("Init:{}/{}", i, init_count);
    }
    initializing = true;
    break;
  }
  bool initialized = false;
  for (const json& condition : list_at(status, "conditions")) {
    if (text(field(condition, "type")) == "Initialized" &&
        text(field(condition, "status")) == "True")
      initialized = true;
  }
  if (!initializing || initialized) {
    restarts = restartable_restarts;
    bool has_running = false;
    const json& statuses = field(status, "containerStatuses");
    for (std::size_t i = statuses.is_array() ? statuses.size() : 0; i-- > 0;) {
      const json& container = statuses[i];
      const json& state = field(container, "state");
      restarts += integer(field(container, "restartCount"));
      const json& terminated = field(state, "terminated");
      const json& waiting = field(state, "waiting");
      if (waiting.is_object() && !text(field(waiting, "reason")).empty()) {
        reason = text(field(waiting, "reason"));
      } else if (terminated.is_object() && !text(field(terminated, "reason")).empty()) {
        reason = text(field(terminated, "reason"));
      } else if (terminated.is_object()) {
        reason = integer(field(terminated, "signal")) != 0
                     ? fmt::format("Signal:{}", integer(field(terminated, "signal")))
                     : fmt::format("ExitCode:{}", integer(field(terminated, "exitCode")));
      } else if (field(container, "ready") == true && field(state, "running").is_object()) {
        has_running = true;
        ++ready;
      }
    }
    if (reason == "Completed" && has_running) {
      bool pod_ready = false;
      for (const json& condition : list_at(status, "conditions")) {
        if (text(field(condition, "type")) == "Ready" && text(field(condition, "status")) == "True")
          pod_ready = true;
      }
      reason = pod_ready ? "Running" : "NotReady";
    }
  }
  const bool deleting = field(field(pod, "metadata"), "deletionTimestamp").is_string();
  if (deleting && text(field(status, "reason")) == "NodeLost") {
    reason = "Unknown";
  } else if (deleting && phase != "Succeeded" && phase != "Failed") {
    reason = "Terminating";
  }

  std::string ip = "<none>";
  if (const json& ips = field(status, "podIPs"); ips.is_array() && !ips.empty()) {
    ip = text(field(ips[0], "ip"), "<none>");
  } else if (!text(field(status, "podIP")).empty()) {
    ip = text(field(status, "podIP"));
  }
  std::string gates = "<none>";
  if (const json& readiness = field(spec, "readinessGates");
      readiness.is_array() && !readiness.empty()) {
    std::size_t true_gates = 0;
    for (const json& gate : readiness) {
      for (const json& condition : list_at(status, "conditions")) {
        if (text(field(condition, "type")) == text(field(gate, "conditionType")) &&
            text(field(condition, "status")) == "True") {
          ++true_gates;
        }
      }
    }
    gates = fmt::format("{}/{}", true_gates, readiness.size());
  }
  return json::array({text(field(field(pod, "metadata"), "name")),
                      fmt::format("{}/{}", ready, total), reason, std::to_string(restarts),
                      age_since(text(field(field(pod, "metadata"), "creationTimestamp"))), ip,
                      or_none(text(field(spec, "nodeName"))),
                      or_none(text(field(status, "nominatedNodeName"))), gates});
}

std::string node_address(const json& node, std::string_view type) {
  for (const json& address : list_at(field(node, "status"), "addresses")) {
    if (text(field(address, "type")) == type) return text(field(address, "address"), "<none>");
  }
  return "<none>";
}

std::string or_unknown(std::string value) {
  return value.empty() ? "<unknown>" : value;
}

// printNode.
json node_cells(const json& node) {
  const json& status = field(node, "status");
  std::vector<std::string> states;
  for (const json& condition : list_at(status, "conditions")) {
    if (text(field(condition, "type")) != "Ready") continue;
    states = {text(field(condition, "status")) == "True" ? "Ready" : "NotReady"};
  }
  if (states.empty()) states.push_back("Unknown");
  if (field(field(node, "spec"), "unschedulable") == true) states.push_back("SchedulingDisabled");
  std::set<std::string> roles;
  static const json kNoLabels = json::object();
  const json& labels = field(field(node, "metadata"), "labels").is_object()
                           ? field(field(node, "metadata"), "labels")
                           : kNoLabels;
  for (const auto& [key, value] : labels.items()) {
    constexpr std::string_view kPrefix = "node-role.kubernetes.io/";
    if (key.starts_with(kPrefix) && key.size() > kPrefix.size())
      roles.insert(key.substr(kPrefix.size()));
    if (key == "kubernetes.io/role" && value.is_string() && !value.get<std::string>().empty())
      roles.insert(value.get<std::string>());
  }
  const json& info = field(status, "nodeInfo");
  return json::array(
      {text(field(field(node, "metadata"), "name")), fmt::format("{}", fmt::join(states, ",")),
       roles.empty() ? std::string("<none>") : fmt::format("{}", fmt::join(roles, ",")),
       age_since(text(field(field(node, "metadata"), "creationTimestamp"))),
       text(field(info, "kubeletVersion")), node_address(node, "InternalIP"),
       node_address(node, "ExternalIP"), or_unknown(text(field(info, "osImage"))),
       or_unknown(text(field(info, "kernelVersion"))),
       or_unknown(text(field(info, "containerRuntimeVersion")))});
}

json cells_of(Resource resource, const json& object) {
  const json& metadata = field(object, "metadata");
  const std::string age = age_since(text(field(metadata, "creationTimestamp")));
  switch (resource) {
    case Resource::Pods:
      return pod_cells(object);
    case Resource::Nodes:
      return node_cells(object);
    case Resource::ConfigMaps: {
      const std::size_t data =
          (field(object, "data").is_object() ? field(object, "data").size() : 0) +
          (field(object, "binaryData").is_object() ? field(object, "binaryData").size() : 0);
      return json::array({text(field(metadata, "name")), data, age});
    }
    case Resource::Leases:
      return json::array({text(field(metadata, "name")),
                          text(field(field(object, "spec"), "holderIdentity")), age});
    case Resource::ResourceSlices:
    case Resource::ResourceClaims:
    case Resource::ResourceClaimTemplates:
    case Resource::DeviceClasses:
    case Resource::PodDisruptionBudgets:
    case Resource::Events:
      break;
  }
  return json::array({text(field(metadata, "name")), age});
}

// podSuccessConditions / podFailedConditions of the printer.
json row_conditions(Resource resource, const json& object) {
  if (resource != Resource::Pods) return nullptr;
  const std::string phase = text(field(field(object, "status"), "phase"));
  if (phase == "Succeeded")
    return json::array({{{"type", "Completed"},
                         {"status", "True"},
                         {"reason", "Succeeded"},
                         {"message", "The pod has completed successfully."}}});
  if (phase == "Failed")
    return json::array({{{"type", "Completed"},
                         {"status", "True"},
                         {"reason", "Failed"},
                         {"message", "The pod failed."}}});
  return nullptr;
}

std::string_view trim(std::string_view value) {
  while (!value.empty() && (value.front() == ' ' || value.front() == '\t')) value.remove_prefix(1);
  while (!value.empty() && (value.back() == ' ' || value.back() == '\t')) value.remove_suffix(1);
  return value;
}

}  // namespace

std::optional<TableRequest> table_request(std::string_view accept,
                                          std::string_view include_object) {
  while (!accept.empty()) {
    const auto comma = accept.find(',');
    std::string_view media = accept.substr(0, comma);
    accept = comma == std::string_view::npos ? std::string_view() : accept.substr(comma + 1);
    const auto semicolon = media.find(';');
    const std::string_view type = trim(media.substr(0, semicolon));
    std::string as, version, group;
    for (std::string_view params =
             semicolon == std::string_view::npos ? "" : media.substr(semicolon + 1);
         !params.empty();) {
      const auto next = params.find(';');
      const std::string_view param = trim(params.substr(0, next));
      params = next == std::string_view::npos ? std::string_view() : params.substr(next + 1);
      const auto equals = param.find('=');
      if (equals == std::string_view::npos) continue;
      const std::string_view key = param.substr(0, equals);
      const std::string value(param.substr(equals + 1));
      if (key == "as") as = value;
      if (key == "v") version = value;
      if (key == "g") group = value;
    }
    if (type != "application/json" && type != "*/*" && type != "application/*")
      continue;                           // e.g. protobuf
    if (as.empty()) return std::nullopt;  // plain JSON comes first
    if (as == "Table" && group == "meta.k8s.io" && (version == "v1" || version == "v1beta1")) {
      TableRequest request;
      request.version = version;
      request.include_object = include_object.empty() ? "Metadata" : std::string(include_object);
      return request;
    }
  }
  return std::nullopt;
}

std::string table_content_type(const TableRequest& request) {
  return fmt::format("application/json;as=Table;v={};g=meta.k8s.io", request.version);
}

json make_table(Resource resource, const std::vector<const json*>& objects,
                const TableRequest& request, json list_metadata) {
  json rows = json::array();
  for (const json* object : objects) {
    json row = {{"cells", cells_of(resource, *object)}};
    if (json conditions = row_conditions(resource, *object); !conditions.is_null())
      row["conditions"] = std::move(conditions);
    if (request.include_object == "Object") {
      row["object"] = *object;
    } else if (request.include_object != "None") {
      row["object"] = {{"kind", "PartialObjectMetadata"},
                       {"apiVersion", "meta.k8s.io/" + request.version},
                       {"metadata", field(*object, "metadata")}};
    }
    rows.push_back(std::move(row));
  }
  return {{"kind", "Table"},
          {"apiVersion", "meta.k8s.io/" + request.version},
          {"metadata", std::move(list_metadata)},
          {"columnDefinitions", columns_of(resource)},
          {"rows", std::move(rows)}};
}

std::string age_since(std::string_view rfc3339) {
  std::tm parsed{};
  const std::string copy(rfc3339);
  const char* end = strptime(copy.c_str(), "%Y-%m-%dT%H:%M:%S", &parsed);
  if (end == nullptr) return "<unknown>";
  const auto created = std::chrono::system_clock::from_time_t(timegm(&parsed));
  const std::int64_t seconds =
      std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now() - created)
          .count();
  // duration.HumanDuration.
  if (seconds < -1) return "<invalid>";
  if (seconds < 0) return "0s";
  if (seconds < 120) return fmt::format("{}s", seconds);
  const std::int64_t minutes = seconds / 60;
  if (minutes < 10)
    return seconds % 60 == 0 ? fmt::format("{}m", minutes)
                             : fmt::format("{}m{}s", minutes, seconds % 60);
  if (minutes < 180) return fmt::format("{}m", minutes);
  const std::int64_t hours = seconds / 3600;
  if (hours < 8)
    return minutes % 60 == 0 ? fmt::format("{}h", hours)
                             : fmt::format("{}h{}m", hours, minutes % 60);
  if (hours < 48) return fmt::format("{}h", hours);
  if (hours < 24 * 8)
    return hours % 24 == 0 ? fmt::format("{}d", hours / 24)
                           : fmt::format("{}d{}h", hours / 24, hours % 24);
  if (hours < 24 * 365 * 2) return fmt::format("{}d", hours / 24);
  if (hours < 24 * 365 * 8) {
    const std::int64_t days = hours / 24 % 365;
    return days == 0 ? fmt::format("{}y", hours / 24 / 365)
                     : fmt::format("{}y{}d", hours / 24 / 365, days);
  }
  return fmt::format("{}y", hours / 24 / 365);
}

}  // namespace gpushare::testing::fakeapi
