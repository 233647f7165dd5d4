// OpenAPI v3 documents and field validation of the fake API server (see the header).

#include "fakeapi/fake_apiserver_openapi.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "fakeapi/fake_apiserver_status.h"

namespace gpushare::testing::fakeapi {
namespace {

using nlohmann::json;

// A field tree: an object maps known field names to their subtree; "*" accepts anything; an
// array of one tree is a list whose items follow that tree.
const json kAny = "*";

json object_meta() {
  json meta = json::object();
  for (const char* name :
       {"name", "generateName", "namespace", "selfLink", "uid", "resourceVersion", "generation",
        "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds", "labels",
        "annotations", "ownerReferences", "finalizers", "managedFields"}) {
    meta[name] = kAny;
  }
  return meta;
}

json fields(std::initializer_list<const char*> names) {
  json tree = json::object();
  for (const char* name : names) tree[name] = kAny;
  return tree;
}

json container() {
  json tree = fields({"args",
                      "command",
                      "env",
                      "envFrom",
                      "image",
                      "imagePullPolicy",
                      "lifecycle",
                      "livenessProbe",
                      "name",
                      "ports",
                      "readinessProbe",
                      "resizePolicy",
                      "restartPolicy",
                      "securityContext",
                      "startupProbe",
                      "stdin",
                      "stdinOnce",
                      "terminationMessagePath",
                      "terminationMessagePolicy",
                      "tty",
                      "volumeDevices",
                      "volumeMounts",
                      "workingDir"});
  tree["resources"] = fields({"claims", "limits", "requests"});
  return tree;
}

json pod_spec() {
  json tree = fields({"activeDeadlineSeconds",
                      "affinity",
                      "automountServiceAccountToken",
                      "dnsConfig",
                      "dnsPolicy",
                      "enableServiceLinks",
                      "ephemeralContainers",
                      "hostAliases",
                      "hostIPC",
                      "hostNetwork",
                      "hostPID",
                      "hostUsers",
                      "hostname",
                      "imagePullSecrets",
                      "nodeName",
                      "nodeSelector",
                      "os",
                      "overhead",
                      "preemptionPolicy",
                      "priority",
                      "priorityClassName",
                      "readinessGates",
                      "resourceClaims",
                      "resources",
                      "restartPolicy",
                      "runtimeClassName",
                      "schedulerName",
                      "schedulingGates",
                      "securityContext",
                      "serviceAccount",
                      "serviceAccountName",
                      "setHostnameAsFQDN",
                      "shareProcessNamespace",
                      "subdomain",
                      "terminationGracePeriodSeconds",
                      "tolerations",
                      "topologySpreadConstraints",
                      "volumes"});
  tree["containers"] = json::array({container()});
  tree["initContainers"] = json::array({container()});
  return tree;
}

const json& tree_of(Resource resource) {
  static const json trees = [] {
    json all = json::object();
    const json top = {{"apiVersion", kAny}, {"kind", kAny}, {"metadata", object_meta()}};
    json pod = top;
    pod["spec"] = pod_spec();
    pod["status"] = kAny;
    json node = top;
    node["spec"] = fields({"podCIDR", "podCIDRs", "providerID", "unschedulable", "taints",
                           "configSource", "externalID"});
    node["status"] = kAny;
    json config_map = top;
    config_map.update(fields({"data", "binaryData", "immutable"}));
    json lease = top;
    lease["spec"] = fields({"acquireTime", "holderIdentity", "leaseDurationSeconds",
                            "leaseTransitions", "renewTime", "strategy", "preferredHolder"});
    all["Pod"] = pod;
    all["Node"] = node;
    all["ConfigMap"] = config_map;
    all["Lease"] = lease;
    // resource.k8s.io: spec and status taken as they come.
    json dra = top;
    dra["spec"] = kAny;
    dra["status"] = kAny;
    for (const char* kind : {"ResourceSlice", "ResourceClaim", "ResourceClaimTemplate",
                             "DeviceClass", "PodDisruptionBudget"})
      all[kind] = dra;
    json event = top;
    event.update(fields({"involvedObject", "reason", "message", "source", "firstTimestamp",
                         "lastTimestamp", "count", "type", "eventTime", "series", "action",
                         "related", "reportingComponent", "reportingInstance"}));
    all["Event"] = event;
    return all;
  }();
  return trees.at(std::string(info(resource).kind));
}

void collect_unknown(const json& value, const json& tree, const std::string& path, bool is_patch,
                     std::vector<std::string>& unknown) {
  if (tree == kAny) return;
  if (tree.is_array()) {
    if (!value.is_array()) return;
    for (std::size_t i = 0; i < value.size(); ++i) {
      collect_unknown(value[i], tree[0], fmt::format("{}[{}]", path, i), is_patch, unknown);
    }
    return;
  }
  if (!value.is_object())
    return;  // a type error is not a field-name error; the fake stores it as is
  for (const auto& [key, child] : value.items()) {
    if (is_patch && key.starts_with('$')) continue;  // strategic-merge directives
    const std::string child_path = path.empty() ? key : path + "." + key;
    const auto known = tree.find(key);
    if (known == tree.end()) {
      unknown.push_back(child_path);
      continue;
    }
    collect_unknown(child, *known, child_path, is_patch, unknown);
  }
}

json patch_operation(const ResourceInfo& ri) {
  const json parameters = json::array({
      {{"name", "fieldValidation"},
       {"in", "query"},
       {"description",
        "fieldValidation instructs the server on how to handle objects in the request "
        "(POST/PUT/PATCH) containing "
        "unknown or duplicate fields. Valid values are: Ignore, Warn (the default) and Strict."},
       {"schema", {{"type", "string"}, {"uniqueItems", true}}}},
      {{"name", "fieldManager"},
       {"in", "query"},
       {"schema", {{"type", "string"}, {"uniqueItems", true}}}},
      {{"name", "dryRun"},
       {"in", "query"},
       {"schema", {{"type", "string"}, {"uniqueItems", true}}}},
  });
  return {{"description", fmt::format("partially update the specified {}", ri.kind)},
          {"operationId", fmt::format("patch{}", ri.kind)},
          {"parameters", parameters},
          {"responses", {{"200", {{"description", "OK"}}}}},
          {"x-kubernetes-action", "patch"},
          {"x-kubernetes-group-version-kind",
           {{"group", ri.group}, {"version", ri.version}, {"kind", ri.kind}}}};
}

// The document of one group/version: its resources' item paths with their PATCH operation.
json group_version_document(std::string_view api_version, std::string_view server_version) {
  json paths = json::object();
  for (const Resource resource : kAllResources) {
    const ResourceInfo& ri = info(resource);
    if (ri.api_version != api_version) continue;
    const std::string prefix =
        ri.group.empty() ? "/api/v1" : fmt::format("/apis/{}/{}", ri.group, ri.version);
    const std::string path =
        ri.namespaced ? fmt::format("{}/namespaces/{{namespace}}/{}/{{name}}", prefix, ri.plural)
                      : fmt::format("{}/{}/{{name}}", prefix, ri.plural);
    paths[path] = {{"patch", patch_operation(ri)}};
  }
  return {{"openapi", "3.0.0"},
          {"info", {{"title", "Kubernetes"}, {"version", server_version}}},
          {"paths", std::move(paths)},
          {"components", {{"schemas", json::object()}}}};
}

}  // namespace

std::optional<json> openapi_document(std::string_view path, std::string_view server_version) {
  const auto query = path.find('?');
  path = path.substr(0, query);
  if (path == "/openapi/v3") {
    json paths = json::object();
    for (const char* gv :
         {"api/v1", "apis/coordination.k8s.io/v1", "apis/policy/v1", "apis/resource.k8s.io/v1"}) {
      // The hash lets clients cache a document; the fake's never change.
      paths[gv] = {
          {"serverRelativeURL", fmt::format("/openapi/v3/{}?hash=fake-{}", gv, server_version)}};
    }
    return json{{"paths", std::move(paths)}};
  }
  if (path == "/openapi/v3/api/v1") return group_version_document("v1", server_version);
  if (path == "/openapi/v3/apis/coordination.k8s.io/v1") {
    return group_version_document("coordination.k8s.io/v1", server_version);
  }
  if (path == "/openapi/v3/apis/policy/v1") {
    return group_version_document("policy/v1", server_version);
  }
  if (path == "/openapi/v3/apis/resource.k8s.io/v1") {
    return group_version_document("resource.k8s.io/v1", server_version);
  }
  return std::nullopt;
}

std::vector<std::string> unknown_fields(Resource resource, const json& object, bool is_patch) {
  std::vector<std::string> unknown;
  collect_unknown(object, tree_of(resource), "", is_patch, unknown);
  return unknown;
}

std::vector<std::string> validate_fields(Resource resource, const json& object, bool is_patch,
                                         std::string_view directive) {
  if (directive == "Ignore") return {};
  if (!directive.empty() && directive != "Warn" && directive != "Strict") {
    throw bad_request(
        fmt::format("fieldValidation: unsupported value \"{}\": supported values: \"Ignore\", "
                    "\"Strict\", \"Warn\"",
                    directive));
  }
  const std::vector<std::string> unknown = unknown_fields(resource, object, is_patch);
  if (unknown.empty()) return {};
  std::vector<std::string> messages;
  for (const std::string& field : unknown)
    messages.push_back(fmt::format("unknown field \"{}\"", field));
  if (directive == "Strict") {
    const ResourceInfo& ri = info(resource);
    throw bad_request(
        fmt::format("{} in version \"{}\" cannot be handled as a {}: strict decoding error: {}",
                    ri.kind, ri.version, ri.kind, fmt::join(messages, ", ")));
  }
  return messages;
}

}  // namespace gpushare::testing::fakeapi
