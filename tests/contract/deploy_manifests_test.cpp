// deploy/: every manifest parses, and what the manifests promise is what the server serves:
// the scheduler configurations' URLs and verbs are POSTed to a real in-process extender, the
// probes' paths are fetched from it, the ports line up from kube-scheduler's urlPrefix through
// the Service to the container and the extender's own default, and RBAC covers (exactly) what
// the extender does with the API.

#include <gtest/gtest.h>
#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "cmd/extender/options.h"
#include "contract/extender_fixture.h"
#include "gpushare/kube/annotations.h"
#include "gpushare/metrics/metric_registry.h"
#include "gpushare/standalone/standalone_cluster.h"
#include "gpushare/sync/leader_metrics.h"
#include "gpushare/sync/sync_metrics.h"

namespace gpushare::testing {
namespace {

namespace fs = std::filesystem;

const fs::path kRoot = fs::path(GPUSHARE_SOURCE_DIR);
const fs::path kDeploy = kRoot / "deploy";

// YAML -> JSON keeping YAML's plain-scalar typing for the values we compare (ints, booleans).
Json to_json(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Null:
    case YAML::NodeType::Undefined:
      return nullptr;
    case YAML::NodeType::Sequence: {
      Json array = Json::array();
      for (const auto& item : node) array.push_back(to_json(item));
      return array;
    }
    case YAML::NodeType::Map: {
      Json object = Json::object();
      for (const auto& item : node) object[item.first.as<std::string>()] = to_json(item.second);
      return object;
    }
    case YAML::NodeType::Scalar: {
      const std::string text = node.Scalar();
      if (node.Tag() == "!") return text;  // quoted
      if (text == "true") return true;
      if (text == "false") return false;
      if (text == "null" || text == "~") return nullptr;
      if (!text.empty() && text.find_first_not_of("0123456789") == std::string::npos &&
          text.size() < 18) {
        return std::stoll(text);
      }
      return text;
    }
  }
  return nullptr;
}

struct Doc {
  fs::path file;
  Json object;
};

std::vector<Doc> load(const fs::path& file) {
  std::vector<Doc> docs;
  for (const YAML::Node& node : YAML::LoadAllFromFile(file.string()))
    docs.push_back({file, to_json(node)});
  return docs;
}

std::vector<fs::path> yaml_files(const fs::path& dir) {
  std::vector<fs::path> files;
  for (const auto& entry : fs::recursive_directory_iterator(dir)) {
    if (entry.is_regular_file() && entry.path().extension() == ".yaml")
      files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  return files;
}

std::vector<Doc> docs_under(const fs::path& dir) {
  std::vector<Doc> docs;
  for (const auto& file : yaml_files(dir)) {
    auto more = load(file);
    docs.insert(docs.end(), more.begin(), more.end());
  }
  return docs;
}

std::vector<Doc> of_kind(const std::vector<Doc>& docs, std::string_view kind) {
  std::vector<Doc> out;
  for (const auto& d : docs) {
    if (d.object.is_object() && d.object.value("kind", "") == kind) out.push_back(d);
  }
  return out;
}

// By value: callers often pass a temporary list of documents.
Json find_named(const std::vector<Doc>& docs, std::string_view kind, std::string_view name) {
  for (const auto& d : docs) {
    if (d.object.value("kind", "") == kind && d.object["metadata"].value("name", "") == name)
      return d.object;
  }
  ADD_FAILURE() << "no " << kind << " named " << name;
  return Json::object();
}

struct Url {
  std::string scheme;
  std::string host;
  int port = -1;
  std::string path;
};

Url parse_url(const std::string& text) {
  Url url;
  const auto scheme_end = text.find("://");
  if (scheme_end == std::string::npos) return url;
  url.scheme = text.substr(0, scheme_end);
  const auto rest = text.substr(scheme_end + 3);
  const auto slash = rest.find('/');
  const std::string authority = rest.substr(0, slash);
  url.path = slash == std::string::npos ? "" : rest.substr(slash);
  const auto colon = authority.rfind(':');
  url.host = authority.substr(0, colon);
  if (colon != std::string::npos) url.port = std::stoi(authority.substr(colon + 1));
  return url;
}

// kube-scheduler's URL for a verb: strings.TrimRight(urlPrefix, "/") + "/" + verb.
std::string verb_path(const Url& url, const std::string& verb) {
  std::string path = url.path;
  while (!path.empty() && path.back() == '/') path.pop_back();
  return path + "/" + verb;
}

// Every scheduler configuration shipped: the control-plane ones (three API versions) and the
// second scheduler's.
std::vector<Doc> scheduler_configs() {
  auto docs = docs_under(kDeploy / "scheduler");
  auto more = docs_under(kDeploy / "overlays" / "second-scheduler");
  docs.insert(docs.end(), more.begin(), more.end());
  return of_kind(docs, "KubeSchedulerConfiguration");
}

// The shipped layout: one extender, two entries with the same urlPrefix. The first binds GPU
// pods (filter, bind, preempt; managedResources), the second scores every pod (prioritize
// only, no managedResources, ignorable).
struct ExtenderEntries {
  Json binding;
  Json scoring;
};

ExtenderEntries extender_entries(const Json& config) {
  const Json* extenders = config.contains("extenders") ? &config["extenders"] : nullptr;
  if (extenders == nullptr || !extenders->is_array() || extenders->size() != 2) {
    ADD_FAILURE() << "want two extender entries";
    return {};
  }
  return {(*extenders)[0], (*extenders)[1]};
}

Json sample_cluster() {
  return standalone::read_cluster_file(kDeploy / "samples" / "cluster.yaml");
}

Json sample_pod(const Json& cluster, const std::string& name) {
  for (const auto& item : cluster["items"]) {
    if (item["kind"] == "Pod" && item["metadata"]["name"] == name) return item;
  }
  return nullptr;
}

const Json& container(const Json& workload) {
  return workload["spec"]["template"]["spec"]["containers"][0];
}

std::optional<int> container_port(const Json& workload, const Json& port_ref) {
  const Json& c = container(workload);
  if (!c.contains("ports")) return std::nullopt;
  for (const auto& p : c["ports"]) {
    if ((port_ref.is_string() && p.value("name", "") == port_ref.get<std::string>()) ||
        (port_ref.is_number_integer() && p["containerPort"] == port_ref)) {
      return p["containerPort"].get<int>();
    }
  }
  return std::nullopt;
}

// ---------------------------------------------------------------------------------------------

TEST(DeployManifests, EveryYamlFileParsesIntoKubernetesObjects) {
  const auto files = yaml_files(kDeploy);
  ASSERT_GE(files.size(), 15u);
  for (const auto& file : files) {
    SCOPED_TRACE(file.string());
    std::vector<Doc> docs;
    ASSERT_NO_THROW(docs = load(file));
    ASSERT_FALSE(docs.empty());
    std::set<std::string> seen;
    for (const auto& doc : docs) {
      ASSERT_TRUE(doc.object.is_object());
      if (doc.object.contains("groups")) {  // a Prometheus rule file (deploy/monitoring)
        for (const auto& group : doc.object["groups"]) {
          EXPECT_TRUE(group.contains("name"));
          for (const auto& rule : group["rules"]) {
            EXPECT_TRUE(rule.contains("expr"));
            EXPECT_TRUE(rule.contains("alert") || rule.contains("record"));
          }
        }
        continue;
      }
      ASSERT_TRUE(doc.object.contains("apiVersion") && doc.object["apiVersion"].is_string());
      ASSERT_TRUE(doc.object.contains("kind") && doc.object["kind"].is_string());
      const std::string kind = doc.object["kind"];
      if (kind == "Kustomization" || kind == "Component" || kind == "KubeSchedulerConfiguration" ||
          kind == "List") {
        continue;
      }
      ASSERT_TRUE(doc.object.contains("metadata") && doc.object["metadata"].contains("name"))
          << kind;
      const std::string key = kind + "/" + doc.object["metadata"].value("namespace", "") + "/" +
                              doc.object["metadata"].value("name", "");
      EXPECT_TRUE(seen.insert(key).second) << "duplicate " << key;
    }
  }
}

TEST(DeployManifests, KustomizationsReferenceFilesThatExist) {
  auto kustomizations = of_kind(docs_under(kDeploy), "Kustomization");
  ASSERT_GE(kustomizations.size(), 7u);
  const auto components = of_kind(docs_under(kDeploy), "Component");
  ASSERT_EQ(components.size(), 4u);
  kustomizations.insert(kustomizations.end(), components.begin(), components.end());
  for (const auto& k : kustomizations) {
    SCOPED_TRACE(k.file.string());
    const fs::path dir = k.file.parent_path();
    for (const auto& resource : k.object.value("resources", Json::array())) {
      const fs::path path = dir / resource.get<std::string>();
      EXPECT_TRUE(fs::is_regular_file(path) || fs::is_regular_file(path / "kustomization.yaml"))
          << path;
    }
    for (const auto& component : k.object.value("components", Json::array())) {
      EXPECT_TRUE(fs::is_regular_file(dir / component.get<std::string>() / "kustomization.yaml"))
          << component;
    }
    for (const auto& patch : k.object.value("patches", Json::array())) {
      if (patch.contains("path")) {
        EXPECT_TRUE(fs::is_regular_file(dir / patch["path"].get<std::string>()));
      }
    }
    for (const auto& generator : k.object.value("configMapGenerator", Json::array())) {
      for (const auto& file : generator["files"])
        EXPECT_TRUE(fs::is_regular_file(dir / file.get<std::string>()));
    }
  }
}

TEST(DeployManifests, SchedulerConfigsDeclareTheExtenderAsTheProductNeedsIt) {
  const auto configs = scheduler_configs();
  std::set<std::string> versions;
  for (const auto& doc : configs) versions.insert(doc.object["apiVersion"]);
  EXPECT_EQ(versions, (std::set<std::string>{"kubescheduler.config.k8s.io/v1",
                                             "kubescheduler.config.k8s.io/v1beta2",
                                             "kubescheduler.config.k8s.io/v1beta3"}));
  ASSERT_EQ(configs.size(), 4u);
  for (const auto& doc : configs) {
    SCOPED_TRACE(doc.file.string());
    const auto [e, scoring] = extender_entries(doc.object);
    EXPECT_EQ(e.value("filterVerb", ""), "filter");
    EXPECT_FALSE(e.contains("prioritizeVerb")) << "GPU pods would be scored twice";
    EXPECT_EQ(e.value("bindVerb", ""), "bind");
    EXPECT_EQ(e.value("preemptVerb", ""), "preempt");
    EXPECT_EQ(e["nodeCacheCapable"], true);
    EXPECT_EQ(e["enableHTTPS"], false);
    EXPECT_EQ(e["ignorable"], false);
    EXPECT_EQ(e.value("httpTimeout", ""), "5s");
    EXPECT_EQ(e["managedResources"],
              Json::parse(R"([{"name":")" + std::string(kube::kDefaultResourceName) +
                          R"(","ignoredByScheduler":false}])"));
    const Url url = parse_url(e.value("urlPrefix", ""));
    EXPECT_EQ(url.scheme, "http");
    EXPECT_EQ(url.path, "/gpushare-scheduler");

    // The scoring entry: the same extender, every pod, prioritize only, skippable.
    EXPECT_EQ(scoring.value("urlPrefix", ""), e.value("urlPrefix", ""));
    EXPECT_EQ(scoring.value("prioritizeVerb", ""), "prioritize");
    for (const char* verb : {"filterVerb", "bindVerb", "preemptVerb"})
      EXPECT_FALSE(scoring.contains(verb)) << verb;
    EXPECT_FALSE(scoring.contains("managedResources")) << "it must see pods without GPU memory too";
    ASSERT_TRUE(scoring.contains("weight") && scoring["weight"].is_number_integer());
    EXPECT_GT(scoring["weight"].get<int>(), 0)
        << "kube-scheduler rejects a prioritizeVerb without a positive weight";
    EXPECT_EQ(scoring["ignorable"], true);
    EXPECT_EQ(scoring["nodeCacheCapable"], true);
    EXPECT_EQ(scoring.value("httpTimeout", ""), "5s");
  }
  // The three control-plane files differ only in apiVersion and comments.
  const Json reference = of_kind(load(kDeploy / "scheduler" / "kube-scheduler-config.yaml"),
                                 "KubeSchedulerConfiguration")
                             .at(0)
                             .object;
  for (const char* other :
       {"kube-scheduler-config-v1beta2.yaml", "kube-scheduler-config-v1beta3.yaml"}) {
    Json config = load(kDeploy / "scheduler" / other).at(0).object;
    config["apiVersion"] = reference["apiVersion"];
    EXPECT_EQ(config, reference) << other;
  }
}

// The heart of it: kube-scheduler's four calls, built from each shipped configuration exactly
// as kube-scheduler builds them, answered 200 by a real server.
TEST(DeployManifests, EveryConfiguredVerbIsServed) {
  const Json cluster = sample_cluster();
  const Json pod = sample_pod(cluster, "demo-pending");
  ASSERT_TRUE(pod.is_object());
  for (const auto& doc : scheduler_configs()) {
    SCOPED_TRACE(doc.file.string());
    ExtenderUnderTest extender(cluster);
    const auto [e, scoring] = extender_entries(doc.object);
    const Url url = parse_url(e["urlPrefix"]);
    auto post = [&](const std::string& verb, const Json& body) {
      auto result = extender.client().Post(verb_path(url, verb), body.dump(), "application/json");
      EXPECT_TRUE(result) << verb;
      if (!result) return std::pair<int, Json>{-1, nullptr};
      return std::pair<int, Json>{result->status, Json::parse(result->body, nullptr, false)};
    };
    ASSERT_TRUE(e["nodeCacheCapable"].get<bool>());  // so kube-scheduler sends NodeNames
    const Json args = {{"Pod", pod},
                       {"Nodes", nullptr},
                       {"NodeNames", {"gpu-node-a", "gpu-node-b", "cpu-node-a"}}};

    auto [filter_status, filtered] = post(e["filterVerb"], args);
    EXPECT_EQ(filter_status, 200);
    EXPECT_EQ(filtered["NodeNames"], Json::parse(R"(["gpu-node-a","gpu-node-b"])"));
    // A node without GPUs: failed either way (preemption cannot help it).
    EXPECT_TRUE(filtered["FailedNodes"].contains("cpu-node-a") ||
                filtered["FailedAndUnresolvableNodes"].contains("cpu-node-a"))
        << filtered.dump();

    auto [prioritize_status, scores] = post(scoring["prioritizeVerb"], args);
    EXPECT_EQ(prioritize_status, 200);
    EXPECT_TRUE(scores.is_array());
    EXPECT_EQ(scores.size(), 3u);
    // The scoring entry also gets pods without GPU memory: scored, not refused.
    const Json plain = {
        {"Pod",
         {{"metadata", {{"name", "web"}, {"namespace", "default"}, {"uid", "u-web"}}},
          {"spec",
           {{"containers", {{{"name", "c"}, {"resources", {{"requests", {{"cpu", "1"}}}}}}}}}}}},
        {"NodeNames", {"gpu-node-a", "gpu-node-b", "cpu-node-a"}}};
    auto [plain_status, plain_scores] = post(scoring["prioritizeVerb"], plain);
    EXPECT_EQ(plain_status, 200);
    EXPECT_EQ(plain_scores.size(), 3u);

    const Json preempt = {{"Pod", pod},
                          {"NodeNameToVictims", nullptr},
                          {"NodeNameToMetaVictims",
                           {{"gpu-node-a",
                             {{"Pods", {{{"UID", "3f1c2a9e-0000-4000-8000-000000000001"}}}},
                              {"NumPDBViolations", 0}}}}}};
    auto [preempt_status, victims] = post(e["preemptVerb"], preempt);
    EXPECT_EQ(preempt_status, 200);
    EXPECT_TRUE(victims.contains("NodeNameToMetaVictims"));

    auto [bind_status, bound] =
        post(e["bindVerb"], Json{{"PodName", "demo-pending"},
                                 {"PodNamespace", "default"},
                                 {"PodUID", "3f1c2a9e-0000-4000-8000-000000000010"},
                                 {"Node", "gpu-node-a"}});
    EXPECT_EQ(bind_status, 200);
    EXPECT_EQ(bound.value("Error", ""), "");
  }
}

TEST(DeployManifests, PortsLineUpFromTheSchedulerToTheExtendersDefault) {
  const auto base = docs_under(kDeploy / "base");
  const Json deployment = find_named(base, "Deployment", "gpushare-schd-extender");
  const Json node_port = find_named(base, "Service", "gpushare-schd-extender");
  const Json internal = find_named(base, "Service", "gpushare-schd-extender-internal");

  // The container listens where the extender listens by default (39999, the Go original's).
  const int server_default = cmd::extender::Options{}.listen_port();
  EXPECT_EQ(server_default, 39999);
  EXPECT_EQ(container_port(deployment, "http"), server_default);
  const auto parsed =
      cmd::extender::parse_options(container(deployment)["args"].get<std::vector<std::string>>(),
                                   [](const char* name) -> std::optional<std::string> {
                                     const std::string n = name;
                                     if (n == "KUBERNETES_SERVICE_HOST") return "10.0.0.1";
                                     if (n == "KUBERNETES_SERVICE_PORT") return "443";
                                     return std::nullopt;
                                   });
  ASSERT_EQ(parsed.action, cmd::extender::ParsedOptions::Action::kRun) << parsed.message;
  EXPECT_EQ(parsed.options.source, cmd::extender::ClusterSource::kInCluster);
  EXPECT_EQ(parsed.options.listen_port(), server_default);

  for (const Json* service : {&node_port, &internal}) {
    const Json& port = (*service)["spec"]["ports"][0];
    EXPECT_EQ(container_port(deployment, port["targetPort"]), server_default);
    EXPECT_EQ(port["port"], server_default);
    // The Service selects the Deployment's pods.
    for (const auto& [key, value] : (*service)["spec"]["selector"].items()) {
      EXPECT_EQ(deployment["spec"]["template"]["metadata"]["labels"][key], value) << key;
    }
  }
  EXPECT_EQ(node_port["spec"]["type"], "NodePort");
  EXPECT_EQ(node_port["spec"]["ports"][0]["nodePort"], 32766);  // like the original
  EXPECT_EQ(internal["spec"]["type"], "ClusterIP");

  // Control-plane configurations: the NodePort on the scheduler's own node.
  for (const auto& doc : of_kind(docs_under(kDeploy / "scheduler"), "KubeSchedulerConfiguration")) {
    const Url url = parse_url(extender_entries(doc.object).binding["urlPrefix"]);
    EXPECT_EQ(url.host, "127.0.0.1") << doc.file;
    EXPECT_EQ(url.port, node_port["spec"]["ports"][0]["nodePort"]) << doc.file;
  }
  // Second scheduler: the ClusterIP Service's DNS name and port.
  const auto second =
      of_kind(docs_under(kDeploy / "overlays" / "second-scheduler"), "KubeSchedulerConfiguration");
  ASSERT_EQ(second.size(), 1u);
  const Url url = parse_url(extender_entries(second[0].object).binding["urlPrefix"]);
  EXPECT_EQ(url.host, internal["metadata"]["name"].get<std::string>() + "." +
                          internal["metadata"]["namespace"].get<std::string>() + ".svc");
  EXPECT_EQ(url.port, internal["spec"]["ports"][0]["port"]);
}

TEST(DeployManifests, ProbesUseThePathsTheServerServes) {
  const Json deployment =
      find_named(docs_under(kDeploy / "base"), "Deployment", "gpushare-schd-extender");
  const Json& c = container(deployment);
  EXPECT_EQ(c["livenessProbe"]["httpGet"]["path"], "/healthz");
  EXPECT_EQ(c["readinessProbe"]["httpGet"]["path"], "/readyz");
  ExtenderUnderTest extender(sample_cluster());
  for (const char* probe : {"livenessProbe", "readinessProbe"}) {
    const Json& get = c[probe]["httpGet"];
    EXPECT_EQ(container_port(deployment, get["port"]), 39999) << probe;
    auto result = extender.client().Get(get["path"].get<std::string>());
    ASSERT_TRUE(result) << probe;
    EXPECT_EQ(result->status, 200) << probe;
  }
  // The scrape annotations name the served /metrics on the container's port.
  const Json& annotations = deployment["spec"]["template"]["metadata"]["annotations"];
  EXPECT_EQ(annotations["prometheus.io/port"], "39999");
  auto metrics = extender.client().Get(annotations["prometheus.io/path"].get<std::string>());
  ASSERT_TRUE(metrics);
  EXPECT_EQ(metrics->status, 200);
  EXPECT_NE(metrics->body.find("gpushare_requests_total"), std::string::npos);
}

TEST(DeployManifests, OurWorkloadsRunUnprivilegedWithResourceBounds) {
  auto docs = docs_under(kDeploy / "base");
  auto more = docs_under(kDeploy / "overlays");
  docs.insert(docs.end(), more.begin(), more.end());
  const auto deployments = of_kind(docs, "Deployment");
  ASSERT_EQ(deployments.size(), 2u);  // the extender and the second scheduler
  for (const auto& d : deployments) {
    SCOPED_TRACE(d.object["metadata"]["name"].get<std::string>());
    const Json& pod = d.object["spec"]["template"]["spec"];
    EXPECT_EQ(pod["securityContext"]["runAsNonRoot"], true);
    EXPECT_NE(pod["securityContext"].value("runAsUser", 0), 0);
    EXPECT_FALSE(pod.value("hostNetwork", false));
    for (const auto& c : pod["containers"]) {
      const Json& sc = c["securityContext"];
      EXPECT_EQ(sc["readOnlyRootFilesystem"], true);
      EXPECT_EQ(sc["allowPrivilegeEscalation"], false);
      EXPECT_EQ(sc["capabilities"]["drop"], Json::array({"ALL"}));
      EXPECT_FALSE(sc["capabilities"].contains("add"));
      for (const char* bound : {"requests", "limits"}) {
        EXPECT_TRUE(c["resources"][bound].contains("cpu")) << bound;
        EXPECT_TRUE(c["resources"][bound].contains("memory")) << bound;
      }
    }
  }
  // The image's user is the one the manifests run as.
  std::ifstream dockerfile(kRoot / "Dockerfile");
  std::stringstream text;
  text << dockerfile.rdbuf();
  EXPECT_NE(text.str().find("\nUSER 65532:65532\n"), std::string::npos);
  EXPECT_NE(text.str().find("\nEXPOSE 39999\n"), std::string::npos);
  EXPECT_NE(text.str().find("FROM debian:bookworm AS build"), std::string::npos);
  EXPECT_NE(text.str().find("scripts/install-deps.sh"), std::string::npos);
}

using Permissions = std::set<std::pair<std::string, std::string>>;  // (resource, verb)

Permissions permissions_of(const Json& role) {
  Permissions out;
  for (const auto& rule : role["rules"]) {
    for (const auto& group : rule["apiGroups"]) EXPECT_NE(group, "*");
    for (const auto& resource : rule["resources"]) {
      for (const auto& verb : rule["verbs"])
        out.emplace(resource.get<std::string>(), verb.get<std::string>());
    }
  }
  return out;
}

TEST(DeployManifests, RbacCoversWhatTheExtenderDoesAndNoMore) {
  const auto base = docs_under(kDeploy / "base");
  const Json deployment = find_named(base, "Deployment", "gpushare-schd-extender");
  const std::string account = deployment["spec"]["template"]["spec"]["serviceAccountName"];
  const std::string ns = deployment["metadata"]["namespace"];
  const Json sa = find_named(base, "ServiceAccount", account);
  EXPECT_EQ(sa["metadata"]["namespace"], ns);

  auto bound_to_account = [&](const Json& binding) {
    for (const auto& s : binding["subjects"]) {
      if (s["kind"] == "ServiceAccount" && s["name"] == account && s["namespace"] == ns)
        return true;
    }
    return false;
  };
  Permissions cluster_wide;
  std::map<std::string, Permissions> namespaced;  // namespace -> permissions
  for (const auto& b : of_kind(base, "ClusterRoleBinding")) {
    if (!bound_to_account(b.object)) continue;
    for (const auto& p : permissions_of(
             find_named(base, "ClusterRole", b.object["roleRef"]["name"].get<std::string>()))) {
      cluster_wide.insert(p);
    }
  }
  for (const auto& b : of_kind(base, "RoleBinding")) {
    if (!bound_to_account(b.object)) continue;
    const Json role = find_named(base, "Role", b.object["roleRef"]["name"].get<std::string>());
    EXPECT_EQ(role["metadata"]["namespace"], b.object["metadata"]["namespace"]);
    for (const auto& p : permissions_of(role))
      namespaced[b.object["metadata"]["namespace"]].insert(p);
  }
  // The list/watch of nodes and pods, the GET before a bind, patch-bind's PATCH, the Binding.
  // With DRA, the list/watch of resource.k8s.io's four kinds.
  const Permissions want_cluster{{"nodes", "get"},
                                 {"nodes", "list"},
                                 {"nodes", "watch"},
                                 {"pods", "get"},
                                 {"pods", "list"},
                                 {"pods", "watch"},
                                 {"pods", "patch"},
                                 {"pods/binding", "create"},
                                 {"resourceslices", "list"},
                                 {"resourceslices", "watch"},
                                 {"resourceclaims", "list"},
                                 {"resourceclaims", "watch"},
                                 {"resourceclaimtemplates", "list"},
                                 {"resourceclaimtemplates", "watch"},
                                 {"deviceclasses", "list"},
                                 {"deviceclasses", "watch"}};
  EXPECT_EQ(cluster_wide, want_cluster);
  // unhealthy-gpu-<node> ConfigMaps, watched in the default --unhealthy-configmap-namespace
  // only, and the --leader-elect Lease in the default --leader-elect-resource-namespace (both
  // kube-system).
  const cmd::extender::Options defaults;
  ASSERT_EQ(defaults.leader_elect_resource_namespace,
            std::string(kube::kDefaultUnhealthyNamespace));
  const std::map<std::string, Permissions> want_namespaced{
      {std::string(kube::kDefaultUnhealthyNamespace),
       {{"configmaps", "get"},
        {"configmaps", "list"},
        {"configmaps", "watch"},
        {"leases", "create"},
        {"leases", "get"},
        {"leases", "update"}}}};
  EXPECT_EQ(namespaced, want_namespaced);
  EXPECT_EQ(defaults.names.unhealthy_namespace, kube::kDefaultUnhealthyNamespace);
  // get/update are limited to the Lease the extender uses by default.
  const Json lease_role = find_named(base, "Role", "gpushare-schd-extender-leader-election");
  for (const auto& rule : lease_role["rules"]) {
    if (rule["verbs"].get<std::vector<std::string>>() == std::vector<std::string>{"create"})
      continue;
    EXPECT_EQ(rule["resourceNames"], Json::array({defaults.leader_elect_resource_name})) << rule;
    EXPECT_EQ(rule["apiGroups"], Json::array({"coordination.k8s.io"}));
  }
}

// deploy/components/consolidation: what --consolidate needs of the API, and nothing more.
TEST(DeployManifests, TheConsolidationComponentGrantsEvictionsBudgetsAndEvents) {
  const auto docs = docs_under(kDeploy / "components" / "consolidation");
  const Json role = find_named(docs, "ClusterRole", "gpushare-schd-extender-consolidation");
  const Permissions want{{"poddisruptionbudgets", "get"},
                         {"poddisruptionbudgets", "list"},
                         {"poddisruptionbudgets", "watch"},
                         {"pods/eviction", "create"},
                         {"events", "create"}};
  EXPECT_EQ(permissions_of(role), want);
  const Json binding =
      find_named(docs, "ClusterRoleBinding", "gpushare-schd-extender-consolidation");
  EXPECT_EQ(binding["roleRef"]["name"], "gpushare-schd-extender-consolidation");
  EXPECT_EQ(binding["subjects"][0]["name"], "gpushare-schd-extender");
  // The flag it adds parses, and plans without evicting.
  const auto parsed = cmd::extender::parse_options(
      {"--consolidate=plan", "--kubeconfig=/dev/null"},
      [](const char*) -> std::optional<std::string> { return std::nullopt; });
  ASSERT_EQ(parsed.action, cmd::extender::ParsedOptions::Action::kRun) << parsed.message;
  EXPECT_EQ(parsed.options.consolidate, "plan");
}

TEST(DeployManifests, TheExtenderRunsHighlyAvailable) {
  const auto base = docs_under(kDeploy / "base");
  const Json deployment = find_named(base, "Deployment", "gpushare-schd-extender");
  EXPECT_GE(deployment["spec"]["replicas"].get<int>(), 2);
  // A rolling update would wait for a new replica to become ready, which a follower never is.
  EXPECT_EQ(deployment["spec"]["strategy"]["type"], "Recreate");
  const Json& container = deployment["spec"]["template"]["spec"]["containers"][0];
  std::vector<std::string> args = container["args"];
  EXPECT_NE(std::find(args.begin(), args.end(), "--leader-elect"), args.end());
  // The flags parse in a pod (in-cluster), which --leader-elect needs.
  const auto parsed =
      cmd::extender::parse_options(args, [](const char* name) -> std::optional<std::string> {
        const std::string n = name;
        if (n == "KUBERNETES_SERVICE_HOST") return "10.0.0.1";
        if (n == "KUBERNETES_SERVICE_PORT") return "443";
        return std::nullopt;
      });
  ASSERT_EQ(parsed.action, cmd::extender::ParsedOptions::Action::kRun) << parsed.message;
  EXPECT_TRUE(parsed.options.leader_elect);
  // The kubelet's SIGKILL comes after the grace period: binds in flight must finish before it.
  const int grace_seconds =
      deployment["spec"]["template"]["spec"].value("terminationGracePeriodSeconds", 30);
  EXPECT_GT(std::chrono::seconds(grace_seconds), parsed.options.shutdown_grace_period);
}

TEST(DeployManifests, SecondSchedulerIsSelfContained) {
  const auto docs = docs_under(kDeploy / "overlays" / "second-scheduler");
  const Json kustomization = of_kind(docs, "Kustomization").at(0).object;
  const Json deployment = find_named(docs, "Deployment", "gpushare-scheduler");
  const Json config = of_kind(docs, "KubeSchedulerConfiguration").at(0).object;
  const Json& pod = deployment["spec"]["template"]["spec"];

  // Its own name, and a lease that is not the default scheduler's.
  const std::string scheduler_name = config["profiles"][0]["schedulerName"];
  EXPECT_EQ(scheduler_name, "gpushare-scheduler");
  EXPECT_EQ(config["leaderElection"]["leaderElect"], true);
  const std::string lease = config["leaderElection"]["resourceName"];
  EXPECT_NE(lease, "kube-scheduler");

  // --config names the generated ConfigMap's file where the volume is mounted.
  const Json& generator = kustomization["configMapGenerator"][0];
  EXPECT_EQ(pod["volumes"][0]["configMap"]["name"], generator["name"]);
  const std::string mount = pod["containers"][0]["volumeMounts"][0]["mountPath"];
  const std::string file = generator["files"][0];
  const auto command = pod["containers"][0]["command"].get<std::vector<std::string>>();
  EXPECT_NE(std::find(command.begin(), command.end(), "--config=" + mount + "/" + file),
            command.end());

  // RBAC: the built-in scheduler roles, plus its own lease.
  const std::string account = pod["serviceAccountName"];
  std::set<std::string> cluster_roles;
  for (const auto& b : of_kind(docs, "ClusterRoleBinding")) {
    if (b.object["subjects"][0]["name"] == account)
      cluster_roles.insert(b.object["roleRef"]["name"]);
  }
  EXPECT_EQ(cluster_roles,
            (std::set<std::string>{"system:kube-scheduler", "system:volume-scheduler"}));
  const Json lease_role = find_named(docs, "Role", "gpushare-scheduler-leader-election");
  bool can_update_own_lease = false;
  for (const auto& rule : lease_role["rules"]) {
    const auto names = rule.value("resourceNames", Json::array());
    const auto verbs = rule["verbs"];
    if (std::find(names.begin(), names.end(), lease) != names.end() &&
        std::find(verbs.begin(), verbs.end(), "update") != verbs.end()) {
      can_update_own_lease = true;
    }
  }
  EXPECT_TRUE(can_update_own_lease);

  // The sample for this set-up asks for this scheduler.
  const Json sample =
      of_kind(docs_under(kDeploy / "samples" / "binpack-gpushare-scheduler"), "Kustomization")
          .at(0)
          .object;
  EXPECT_NE(sample["patches"][0]["patch"].get<std::string>().find("value: " + scheduler_name),
            std::string::npos);
}

TEST(DeployManifests, Samples) {
  const auto binpack = docs_under(kDeploy / "samples" / "binpack");
  const Json sts = find_named(binpack, "StatefulSet", "binpack-1");
  EXPECT_EQ(sts["spec"]["replicas"], 3);
  EXPECT_EQ(container(sts)["resources"]["limits"][std::string(kube::kDefaultResourceName)], 3);
}

// "--name=value" arguments as a map.
std::map<std::string, std::string> flag_values(const Json& args) {
  std::map<std::string, std::string> out;
  for (const auto& arg : args) {
    const std::string text = arg;
    const auto eq = text.find('=');
    out[text.substr(0, eq)] = eq == std::string::npos ? "" : text.substr(eq + 1);
  }
  return out;
}

// The hostPath a container path is mounted from, or "" when no volume mounts it.
std::string host_path_of(const Json& pod_spec, const std::string& mount_path) {
  for (const auto& mount : pod_spec["containers"][0]["volumeMounts"]) {
    if (mount["mountPath"] != mount_path) continue;
    for (const auto& volume : pod_spec["volumes"]) {
      if (volume["name"] == mount["name"] && volume.contains("hostPath"))
        return volume["hostPath"]["path"];
    }
  }
  return {};
}

// gpushare-device-plugin's DaemonSet: on the labelled nodes, kubelet's socket directories mounted
// where its flags look, its node name from the downward API, the probe on its --listen port, and
// RBAC that is exactly what it does with the API.
TEST(DeployManifests, DevicePluginDaemonSet) {
  const auto docs = docs_under(kDeploy / "device-plugin");
  const Json ds = find_named(docs, "DaemonSet", "gpushare-device-plugin-ds");
  const Json& pod = ds["spec"]["template"]["spec"];
  EXPECT_EQ(ds["metadata"]["namespace"], "kube-system");
  EXPECT_EQ(pod["nodeSelector"]["gpushare"], "true");
  EXPECT_EQ(pod["priorityClassName"], "system-node-critical");
  EXPECT_FALSE(pod.contains("runtimeClassName")) << "the default needs no RuntimeClass";
  // Aliyun's selector, so that applying this over Aliyun's DaemonSet is a rolling update.
  EXPECT_EQ(ds["spec"]["selector"]["matchLabels"],
            Json::parse(R"({"app":"gpushare","component":"gpushare-device-plugin",)"
                        R"("name":"gpushare-device-plugin-ds"})"));
  for (const auto& [key, value] : ds["spec"]["selector"]["matchLabels"].items()) {
    EXPECT_EQ(ds["spec"]["template"]["metadata"]["labels"][key], value);
  }
  // Never two plugins on one node: the old pod goes before the new one starts.
  EXPECT_EQ(ds["spec"]["updateStrategy"]["rollingUpdate"]["maxSurge"], 0);

  const Json& c = container(ds);
  EXPECT_EQ(c["command"], Json::array({"/usr/local/bin/gpushare-device-plugin"}));
  EXPECT_EQ(c["image"], "gpushare-extender") << "the product image (kustomization.yaml)";
  const auto flags = flag_values(c["args"]);
  ASSERT_TRUE(flags.contains("--kubelet-dir"));
  EXPECT_EQ(host_path_of(pod, flags.at("--kubelet-dir")), "/var/lib/kubelet/device-plugins");
  ASSERT_TRUE(flags.contains("--pod-resources-socket"));
  const fs::path socket = flags.at("--pod-resources-socket");
  EXPECT_EQ(socket.filename(), "kubelet.sock");
  EXPECT_EQ(host_path_of(pod, socket.parent_path().string()), "/var/lib/kubelet/pod-resources");

  // Root for kubelet's sockets, nothing more.
  const Json& sc = c["securityContext"];
  EXPECT_FALSE(sc.value("privileged", false));
  EXPECT_EQ(sc["allowPrivilegeEscalation"], false);
  EXPECT_EQ(sc["readOnlyRootFilesystem"], true);
  EXPECT_EQ(sc["capabilities"]["drop"], Json::array({"ALL"}));
  EXPECT_FALSE(sc["capabilities"].contains("add"));
  EXPECT_FALSE(pod.value("hostNetwork", false));
  EXPECT_EQ(c["resources"]["requests"], c["resources"]["limits"]) << "Guaranteed QoS";

  bool node_name = false;
  for (const auto& env : c["env"]) {
    if (env["name"] == "NODE_NAME")
      node_name = env["valueFrom"]["fieldRef"]["fieldPath"] == "spec.nodeName";
  }
  EXPECT_TRUE(node_name) << "--node-name's default comes from the downward API";

  ASSERT_TRUE(flags.contains("--listen"));
  const std::string listen = flags.at("--listen");
  const int port = std::stoi(listen.substr(listen.rfind(':') + 1));
  EXPECT_EQ(container_port(ds, "http"), port);
  EXPECT_EQ(c["livenessProbe"]["httpGet"]["path"], "/healthz");
  EXPECT_EQ(container_port(ds, c["livenessProbe"]["httpGet"]["port"]), port);
  EXPECT_EQ(ds["spec"]["template"]["metadata"]["annotations"]["prometheus.io/port"],
            std::to_string(port));

  // Every flag the DaemonSet passes is in docs/install.md's flags table.
  std::ifstream in(kRoot / "docs" / "install.md");
  std::stringstream install;
  install << in.rdbuf();
  for (const auto& [flag, value] : flags)
    EXPECT_NE(install.str().find("| `" + flag), std::string::npos) << flag;

  // RBAC: what the ServiceAccount may do, through the roles bound to it, exactly.
  const std::string account = pod["serviceAccountName"];
  EXPECT_EQ(find_named(docs, "ServiceAccount", account)["metadata"]["namespace"], "kube-system");
  std::set<std::string> granted;
  auto add_rules = [&](const Json& role, const std::string& scope) {
    for (const auto& rule : role["rules"]) {
      for (const auto& group : rule["apiGroups"])
        for (const auto& resource : rule["resources"])
          for (const auto& verb : rule["verbs"]) {
            granted.insert(scope + " " + group.get<std::string>() + "/" +
                           resource.get<std::string>() + " " + verb.get<std::string>());
          }
    }
  };
  for (const char* binding_kind : {"ClusterRoleBinding", "RoleBinding"}) {
    for (const auto& b : of_kind(docs, binding_kind)) {
      bool bound = false;
      for (const auto& subject : b.object["subjects"]) {
        bound |= subject["kind"] == "ServiceAccount" && subject["name"] == account &&
                 subject["namespace"] == "kube-system";
      }
      if (!bound) continue;
      const std::string role_kind = b.object["roleRef"]["kind"];
      const std::string scope =
          role_kind == "ClusterRole" && std::string(binding_kind) == "ClusterRoleBinding"
              ? "cluster"
              : b.object["metadata"].value("namespace", "");
      add_rules(find_named(docs, role_kind, b.object["roleRef"]["name"].get<std::string>()), scope);
    }
  }
  EXPECT_EQ(granted, (std::set<std::string>{
                         "cluster /pods get", "cluster /pods list", "cluster /pods watch",
                         "cluster /pods patch", "cluster /nodes get", "cluster /nodes/status patch",
                         "cluster /events create", "kube-system /configmaps create",
                         "kube-system /configmaps get", "kube-system /configmaps update"}));
}

// Alert rules and dashboards under deploy/ must only name metrics that /metrics serves.
TEST(DeployManifests, MonitoringNamesOnlyServedMetrics) {
  ExtenderUnderTest extender(sample_cluster());
  auto result = extender.client().Get("/metrics");
  ASSERT_TRUE(result);
  std::set<std::string> served;
  auto add_served = [&served](const std::string& exposition) {
    std::istringstream lines(exposition);
    for (std::string line; std::getline(lines, line);) {
      if (!line.starts_with("# TYPE ")) continue;
      std::istringstream words(line.substr(7));
      std::string name;
      std::string type;
      words >> name >> type;
      served.insert(name);
      if (type == "histogram") {
        for (const char* suffix : {"_bucket", "_sum", "_count"}) served.insert(name + suffix);
      }
    }
  };
  add_served(result->body);
  // What the extender's main adds to this fixture's families: the sync's (in both modes) and,
  // on a --leader-elect replica, the leader election's.
  metrics::MetricRegistry more;
  const sync::SyncMetrics sync_metrics(more);
  more.add_collector(sync::leader_election_collector([] { return sync::LeaderElectionState{}; }));
  add_served(more.render());
  ASSERT_TRUE(served.contains("gpushare_requests_total"));
  ASSERT_TRUE(served.contains("gpushare_leader_lost_total"));
  std::size_t checked = 0;
  for (const auto& entry : fs::recursive_directory_iterator(kDeploy)) {
    const auto ext = entry.path().extension();
    if (!entry.is_regular_file() || (ext != ".yaml" && ext != ".json")) continue;
    std::ifstream in(entry.path());
    std::stringstream text;
    text << in.rdbuf();
    const std::string body = text.str();
    for (std::size_t at = body.find("gpushare_"); at != std::string::npos;
         at = body.find("gpushare_", at + 1)) {
      if (at > 0 && (std::isalnum(static_cast<unsigned char>(body[at - 1])) ||
                     body[at - 1] == '_' || body[at - 1] == '-')) {
        continue;  // part of another word
      }
      std::size_t end = at;
      while (end < body.size() &&
             (std::isalnum(static_cast<unsigned char>(body[end])) || body[end] == '_'))
        ++end;
      const std::string name = body.substr(at, end - at);
      EXPECT_TRUE(served.contains(name))
          << entry.path() << " names " << name << ", which /metrics does not serve";
      ++checked;
    }
  }
  std::cout << "checked " << checked << " metric references\n";
}

// `kubectl kustomize` renders each kustomization as a user would apply it (offline; skipped when
// kubectl is not installed).
std::optional<std::string> kustomize(const fs::path& dir) {
  const std::string command = "kubectl kustomize '" + dir.string() + "' 2>&1";
  std::unique_ptr<FILE, int (*)(FILE*)> pipe(::popen(command.c_str(), "r"), ::pclose);
  if (!pipe) return std::nullopt;
  std::string out;
  char buffer[4096];
  while (std::size_t n = std::fread(buffer, 1, sizeof buffer, pipe.get())) out.append(buffer, n);
  const int status = ::pclose(pipe.release());
  if (status != 0) {
    ADD_FAILURE() << "kubectl kustomize " << dir << " failed:\n" << out;
    return std::nullopt;
  }
  return out;
}

// The objects `kubectl kustomize` renders from a kustomization directory.
std::vector<Json> render_objects(const fs::path& dir) {
  std::vector<Json> objects;
  const auto text = kustomize(dir);
  if (!text) return objects;
  for (const YAML::Node& node : YAML::LoadAll(*text)) objects.push_back(to_json(node));
  return objects;
}

TEST(DeployManifests, KustomizeRendersEverySetUp) {
  if (std::system("kubectl version --client >/dev/null 2>&1") != 0)
    GTEST_SKIP() << "kubectl not installed";
  const auto render = render_objects;
  auto count = [](const std::vector<Json>& objects, std::string_view kind) {
    return std::count_if(objects.begin(), objects.end(),
                         [&](const Json& o) { return o.value("kind", "") == kind; });
  };
  const auto control_plane = render(kDeploy / "overlays" / "control-plane");
  EXPECT_EQ(count(control_plane, "Service"), 2);
  EXPECT_EQ(count(control_plane, "Deployment"), 1);
  for (const auto& o : control_plane) {
    if (o.value("kind", "") == "Deployment") {
      // What scripts/build-image.sh tags (tests/release checks the version).
      EXPECT_TRUE(
          container(o)["image"].get<std::string>().starts_with("localhost/gpushare-extender:"))
          << container(o)["image"];
    }
  }

  const auto second = render(kDeploy / "overlays" / "second-scheduler");
  EXPECT_EQ(count(second, "Deployment"), 2);
  std::string generated;
  for (const auto& o : second) {
    const std::string kind = o.value("kind", "");
    if (kind == "Service") {
      EXPECT_EQ(o["spec"]["type"], "ClusterIP") << "the NodePort is removed in this set-up";
    }
    if (kind == "ConfigMap") generated = o["metadata"]["name"];
  }
  EXPECT_TRUE(generated.starts_with("gpushare-scheduler-config-")) << generated;
  for (const auto& o : second) {
    if (o.value("kind", "") == "Deployment" && o["metadata"]["name"] == "gpushare-scheduler") {
      EXPECT_EQ(o["spec"]["template"]["spec"]["volumes"][0]["configMap"]["name"], generated);
    }
  }

  for (const char* dir : {"device-plugin", "samples/binpack"})
    EXPECT_FALSE(render(kDeploy / dir).empty()) << dir;
  const auto sample = render(kDeploy / "samples" / "binpack-gpushare-scheduler");
  for (const auto& o : sample) {
    if (o.value("kind", "") == "StatefulSet") {
      EXPECT_EQ(o["spec"]["template"]["spec"]["schedulerName"], "gpushare-scheduler");
    }
  }
}

// The optional components (deploy/components), as deploy/overlays/hardened and a user's overlay
// combine them: the NetworkPolicy admits the second scheduler's pods, an ipBlock and Prometheus to
// the container's port of the extender's pods; the ServiceMonitor scrapes exactly one Service on
// a port it has, at a path the server serves; mutual TLS gives the extender flags its own parser
// accepts, and HTTPS probes.
std::vector<Json> objects_of_kind(const std::vector<Json>& objects, std::string_view kind) {
  std::vector<Json> out;
  for (const auto& o : objects) {
    if (o.value("kind", "") == kind) out.push_back(o);
  }
  return out;
}

bool selects(const Json& match_labels, const Json& labels) {
  for (const auto& [key, value] : match_labels.items()) {
    if (!labels.contains(key) || labels[key] != value) return false;
  }
  return true;
}

// An overlay in a temporary directory: `resources` and `components` relative to deploy/.
fs::path temporary_overlay(const std::string& name, const std::string& resource,
                           const std::vector<std::string>& components) {
  const fs::path dir =
      fs::temp_directory_path() / ("gpushare-overlay-" + name + "-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  std::ofstream out(dir / "kustomization.yaml");
  out << "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n- "
      << fs::relative(kDeploy / resource, dir).string() << "\ncomponents:\n";
  for (const auto& component : components)
    out << "- " << fs::relative(kDeploy / component, dir).string() << "\n";
  return dir;
}

TEST(DeployManifests, KustomizeRendersTheComponents) {
  if (std::system("kubectl version --client >/dev/null 2>&1") != 0)
    GTEST_SKIP() << "kubectl not installed";
  const auto hardened = render_objects(kDeploy / "overlays" / "hardened");
  const auto deployments = objects_of_kind(hardened, "Deployment");
  ASSERT_EQ(deployments.size(), 1u);
  const Json& extender_pod = deployments[0]["spec"]["template"];
  const int port = container_port(deployments[0], "http").value_or(-1);
  ASSERT_EQ(port, 39999);

  const auto policies = objects_of_kind(hardened, "NetworkPolicy");
  ASSERT_EQ(policies.size(), 1u);
  const Json& policy = policies[0]["spec"];
  EXPECT_TRUE(selects(policy["podSelector"]["matchLabels"], extender_pod["metadata"]["labels"]));
  EXPECT_EQ(policy["policyTypes"], Json::array({"Ingress"}));
  const Json second_scheduler = find_named(docs_under(kDeploy / "overlays" / "second-scheduler"),
                                           "Deployment", "gpushare-scheduler");
  bool scheduler_pods = false, control_plane = false, prometheus = false;
  for (const auto& rule : policy["ingress"]) {
    ASSERT_EQ(rule["ports"].size(), 1u);
    EXPECT_EQ(rule["ports"][0]["port"], port) << "only the extender's port";
    for (const auto& from : rule["from"]) {
      if (from.contains("ipBlock")) control_plane = true;
      if (from.contains("namespaceSelector")) {
        prometheus = from["namespaceSelector"]["matchLabels"]["kubernetes.io/metadata.name"] ==
                         "monitoring" &&
                     from["podSelector"]["matchLabels"]["app.kubernetes.io/name"] == "prometheus";
      } else if (from.contains("podSelector")) {
        scheduler_pods = selects(from["podSelector"]["matchLabels"],
                                 second_scheduler["spec"]["template"]["metadata"]["labels"]);
      }
    }
  }
  EXPECT_TRUE(scheduler_pods && control_plane && prometheus);

  const auto monitors = objects_of_kind(hardened, "ServiceMonitor");
  ASSERT_EQ(monitors.size(), 1u);
  const Json& monitor = monitors[0]["spec"];
  std::vector<Json> scraped;
  for (const auto& service : objects_of_kind(hardened, "Service")) {
    if (selects(monitor["selector"]["matchLabels"], service["metadata"]["labels"]))
      scraped.push_back(service);
  }
  ASSERT_EQ(scraped.size(), 1u) << "each replica scraped once";
  EXPECT_EQ(scraped[0]["spec"]["type"], "ClusterIP");
  EXPECT_EQ(scraped[0]["spec"]["ports"][0]["name"], monitor["endpoints"][0]["port"]);
  ExtenderUnderTest extender(sample_cluster());
  auto metrics = extender.client().Get(monitor["endpoints"][0]["path"].get<std::string>());
  ASSERT_TRUE(metrics);
  EXPECT_EQ(metrics->status, 200);

  // Set-up B with both components: the ServiceMonitor's patch finds its Service there too.
  const auto second = render_objects(
      temporary_overlay("second", "overlays/second-scheduler",
                        {"components/network-policy", "components/service-monitor"}));
  EXPECT_EQ(objects_of_kind(second, "NetworkPolicy").size(), 1u);
  EXPECT_EQ(objects_of_kind(second, "ServiceMonitor").size(), 1u);

  // Mutual TLS: the flags the extender would start with, and the files they name are mounted.
  const auto tls =
      render_objects(temporary_overlay("tls", "overlays/control-plane", {"components/mutual-tls"}));
  const auto tls_deployments = objects_of_kind(tls, "Deployment");
  ASSERT_EQ(tls_deployments.size(), 1u);
  const Json& c = container(tls_deployments[0]);
  const auto parsed =
      cmd::extender::parse_options(c["args"].get<std::vector<std::string>>(), [](const char* name) {
        return std::string_view(name).starts_with("KUBERNETES_SERVICE_")
                   ? std::optional<std::string>("1")
                   : std::nullopt;
      });
  ASSERT_EQ(parsed.action, cmd::extender::ParsedOptions::Action::kRun) << parsed.message;
  const std::string mount = c["volumeMounts"][0]["mountPath"];
  EXPECT_EQ(parsed.options.tls_client_ca_file, mount + "/client-ca.crt");
  EXPECT_EQ(parsed.options.tls_cert_file, mount + "/tls.crt");
  EXPECT_EQ(tls_deployments[0]["spec"]["template"]["spec"]["volumes"][0]["secret"]["secretName"],
            "gpushare-extender-tls");
  EXPECT_EQ(c["livenessProbe"]["httpGet"]["scheme"], "HTTPS");
  EXPECT_EQ(c["readinessProbe"]["httpGet"]["scheme"], "HTTPS");
}

// deploy/samples/gpu-mem-quota.yaml: a namespace quota on the shared resource, under the only
// prefix Kubernetes accepts for extended resources.
TEST(DeployManifests, GpuMemoryQuotaSample) {
  const auto docs = load(kDeploy / "samples" / "gpu-mem-quota.yaml");
  ASSERT_EQ(docs.size(), 1u);
  const Json& quota = docs[0].object;
  EXPECT_EQ(quota["apiVersion"], "v1");
  EXPECT_EQ(quota["kind"], "ResourceQuota");
  EXPECT_FALSE(quota["metadata"].contains("namespace")) << "applied with -n NAMESPACE";
  const Json& hard = quota["spec"]["hard"];
  ASSERT_EQ(hard.size(), 1u);
  const std::string key = "requests." + std::string(kube::kDefaultResourceName);
  ASSERT_TRUE(hard.contains(key)) << hard;
  EXPECT_EQ(hard[key], "32");
}

}  // namespace
}  // namespace gpushare::testing
