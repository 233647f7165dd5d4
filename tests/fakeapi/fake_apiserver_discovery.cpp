// Discovery documents: enough of /api, /apis and /version for kubectl and client-go's
// legacy (non-aggregated) discovery. Clients asking for aggregated discovery get these
// plain documents and fall back, as they do with older servers.

#include <fmt/format.h>

#include "fakeapi/fake_apiserver_impl.h"
#include "fakeapi/fake_apiserver_openapi.h"

namespace gpushare::testing::fakeapi {
namespace {

using nlohmann::json;

json resource_entry(std::string_view name, std::string_view singular, bool namespaced,
                    std::string_view kind, std::vector<std::string> verbs,
                    std::vector<std::string> short_names = {}) {
  json entry = {{"name", name},
                {"singularName", singular},
                {"namespaced", namespaced},
                {"kind", kind},
                {"verbs", verbs}};
  if (!short_names.empty()) entry["shortNames"] = short_names;
  return entry;
}

const std::vector<std::string> kObjectVerbs = {"create", "delete", "get",  "list",
                                               "patch",  "update", "watch"};

json group_version_entry() {
  return {{"groupVersion", "coordination.k8s.io/v1"}, {"version", "v1"}};
}

json coordination_group() {
  return {{"name", "coordination.k8s.io"},
          {"versions", json::array({group_version_entry()})},
          {"preferredVersion", group_version_entry()}};
}

json policy_group() {
  const json version = {{"groupVersion", "policy/v1"}, {"version", "v1"}};
  return {{"name", "policy"}, {"versions", json::array({version})}, {"preferredVersion", version}};
}

json resource_group() {
  const json version = {{"groupVersion", "resource.k8s.io/v1"}, {"version", "v1"}};
  return {{"name", "resource.k8s.io"},
          {"versions", json::array({version})},
          {"preferredVersion", version}};
}

}  // namespace

std::optional<json> discovery_document(std::string_view path, const FakeApiServerOptions& options,
                                       std::uint16_t port) {
  if (path.starts_with("/openapi/")) return openapi_document(path, options.server_git_version);
  if (path == "/version") {
    // "v1.34.0" -> major 1, minor 34.
    const std::string& version = options.server_git_version;
    const auto dot = version.find('.');
    const auto second_dot = version.find('.', dot + 1);
    const std::string major = version.substr(1, dot - 1);
    const std::string minor = version.substr(dot + 1, second_dot - dot - 1);
    return json{
        {"major", major},           {"minor", minor},
        {"gitVersion", version},    {"gitCommit", "0000000000000000000000000000000000000000"},
        {"gitTreeState", "clean"},  {"buildDate", "2026-01-01T00:00:00Z"},
        {"goVersion", "go1.24.0"},  {"compiler", "gc"},
        {"platform", "linux/amd64"}};
  }
  if (path == "/api") {
    return json{{"kind", "APIVersions"},
                {"versions", {"v1"}},
                {"serverAddressByClientCIDRs",
                 json::array({{{"clientCIDR", "0.0.0.0/0"},
                               {"serverAddress", fmt::format("127.0.0.1:{}", port)}}})}};
  }
  if (path == "/api/v1") {
    json resources = json::array({
        resource_entry("bindings", "binding", true, "Binding", {"create"}),
        resource_entry("configmaps", "configmap", true, "ConfigMap",
                       {"create", "delete", "get", "list", "patch", "update", "watch"}, {"cm"}),
        resource_entry("events", "event", true, "Event", kObjectVerbs, {"ev"}),
        resource_entry("nodes", "node", false, "Node", kObjectVerbs, {"no"}),
        resource_entry("nodes/status", "", false, "Node", {"get", "patch", "update"}),
        resource_entry("pods", "pod", true, "Pod", kObjectVerbs, {"po"}),
        resource_entry("pods/binding", "", true, "Binding", {"create"}),
        resource_entry("pods/eviction", "", true, "Eviction", {"create"}),
        resource_entry("pods/status", "", true, "Pod", {"get", "patch", "update"}),
    });
    resources[5]["categories"] = {"all"};
    return json{{"kind", "APIResourceList"}, {"groupVersion", "v1"}, {"resources", resources}};
  }
  if (path == "/apis") {
    return json{
        {"kind", "APIGroupList"},
        {"apiVersion", "v1"},
        {"groups", options.serve_dra
                       ? json::array({coordination_group(), policy_group(), resource_group()})
                       : json::array({coordination_group(), policy_group()})}};
  }
  if (path == "/apis/coordination.k8s.io") {
    json group = coordination_group();
    group["kind"] = "APIGroup";
    group["apiVersion"] = "v1";
    return group;
  }
  if (options.serve_dra && path == "/apis/resource.k8s.io") {
    json group = resource_group();
    group["kind"] = "APIGroup";
    group["apiVersion"] = "v1";
    return group;
  }
  if (options.serve_dra && path == "/apis/resource.k8s.io/v1") {
    return json{
        {"kind", "APIResourceList"},
        {"apiVersion", "v1"},
        {"groupVersion", "resource.k8s.io/v1"},
        {"resources", json::array({resource_entry("deviceclasses", "deviceclass", false,
                                                  "DeviceClass", kObjectVerbs),
                                   resource_entry("resourceclaims", "resourceclaim", true,
                                                  "ResourceClaim", kObjectVerbs),
                                   resource_entry("resourceclaims/status", "", true,
                                                  "ResourceClaim", {"get", "patch", "update"}),
                                   resource_entry("resourceclaimtemplates", "resourceclaimtemplate",
                                                  true, "ResourceClaimTemplate", kObjectVerbs),
                                   resource_entry("resourceslices", "resourceslice", false,
                                                  "ResourceSlice", kObjectVerbs)})}};
  }
  if (path == "/apis/policy") {
    json group = policy_group();
    group["kind"] = "APIGroup";
    group["apiVersion"] = "v1";
    return group;
  }
  if (path == "/apis/policy/v1") {
    return json{{"kind", "APIResourceList"},
                {"apiVersion", "v1"},
                {"groupVersion", "policy/v1"},
                {"resources",
                 json::array({resource_entry("poddisruptionbudgets", "poddisruptionbudget", true,
                                             "PodDisruptionBudget", kObjectVerbs, {"pdb"}),
                              resource_entry("poddisruptionbudgets/status", "", true,
                                             "PodDisruptionBudget", {"get", "patch", "update"})})}};
  }
  if (path == "/apis/coordination.k8s.io/v1") {
    return json{{"kind", "APIResourceList"},
                {"apiVersion", "v1"},
                {"groupVersion", "coordination.k8s.io/v1"},
                {"resources",
                 json::array({resource_entry("leases", "lease", true, "Lease", kObjectVerbs)})}};
  }
  return std::nullopt;
}

}  // namespace gpushare::testing::fakeapi
