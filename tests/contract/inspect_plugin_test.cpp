// kubectl-inspect-gpushare, run in-process through its CLI entry point, against a real extender
// (--extender) and against the fake API server (kubeconfig). The tables are checked exactly.

#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <sstream>

#include "contract/extender_fixture.h"
#include "gpushare/extender/standalone_cluster.h"
#include "gpushare/inspect/cli.h"
#include "gpushare/inspect/render.h"
#include "gpushare/inspect/sources.h"
#include "gpushare/inspect/view.h"
#include "support/fake_apiserver.h"

namespace gpushare::testing {
namespace {

struct CliRun {
  int code = -1;
  std::string out;
  std::string err;
};

CliRun run(const std::vector<std::string>& args, std::map<std::string, std::string> env = {}) {
  std::ostringstream out;
  std::ostringstream err;
  CliRun r;
  r.code = inspect::run_cli(args, out, err, [env](std::string_view name) -> std::optional<std::string> {
    auto it = env.find(std::string(name));
    return it == env.end() ? std::nullopt : std::optional<std::string>(it->second);
  });
  r.out = out.str();
  r.err = err.str();
  return r;
}

Json sample_cluster() {
  return extender::read_cluster_file(std::string(GPUSHARE_SOURCE_DIR) + "/deploy/samples/cluster.yaml");
}

// The rule line under a table: as wide as the table's widest line.
std::string rule(const std::string& table) {
  std::size_t widest = 0;
  std::istringstream lines(table);
  for (std::string line; std::getline(lines, line);) widest = std::max(widest, line.size());
  return std::string(widest, '-') + "\n";
}

std::string selector_of_last_pod_list(const FakeApiServer& api) {
  std::string selector = "(none)";
  for (const auto& request : api.requests()) {
    if (request.verb == Verb::List && request.resource == Resource::Pods) {
      auto it = request.params.find("fieldSelector");
      selector = it == request.params.end() ? "" : it->second;
    }
  }
  return selector;
}

std::string url(const ExtenderUnderTest& extender) { return "http://127.0.0.1:" + std::to_string(extender.port()); }

// The summary of deploy/samples/cluster.yaml, whichever source it is read from.
const std::string kSampleTable =
    "NAME        IPADDRESS     GPU0(Allocated/Total)  GPU1(Allocated/Total)  GPU2(Allocated/Total)  "
    "GPU3(Allocated/Total)  GPU4(Allocated/Total)  GPU5(Allocated/Total)  GPU6(Allocated/Total)  "
    "GPU7(Allocated/Total)  GPU Memory(GiB)\n"
    "gpu-node-a  192.168.0.11  10/16                  14/16                  0/16                   "
    "0/16                   -                      -                      -                      "
    "-                      24/64\n"
    "gpu-node-b  192.168.0.12  24/32                  0/32                   -                      "
    "-                      -                      -                      -                      "
    "-                      24/64\n"
    "gpu-node-c  192.168.0.13  0/16                   0/16                   8/16                   "
    "0/16(unhealthy)        0/16                   0/16                   0/16                   "
    "0/16                   8/128\n";
const std::string kSampleSummary =
    kSampleTable + rule(kSampleTable) +
    "Allocated/Total GPU Memory In Cluster: 56/256 (21%)\n"
    "\n"
    "(unhealthy): GPU listed in its node's unhealthy-gpu-<node> ConfigMap, takes no new pods: gpu-node-c/GPU3\n";

// -d gpu-node-c; `status` is what the source knows of notebook-0 (Bound from the extender,
// the pod's phase from the API server).
std::string sample_details_node_c(const std::string& status) {
  const std::string table =
      "NAME        NAMESPACE  GPU0(Allocated)  GPU1(Allocated)  GPU2(Allocated)  GPU3(Allocated,unhealthy)  "
      "GPU4(Allocated)  GPU5(Allocated)  GPU6(Allocated)  GPU7(Allocated)  STATUS\n"
      "notebook-0  research   0                0                8                0                          "
      "0                0                0                0                " +
      status + "\n";
  return "\n"
         "NAME:       gpu-node-c\n"
         "IPADDRESS:  192.168.0.13\n"
         "MODEL:      Tesla-T4\n"
         "UNHEALTHY:  GPU3 (take no new pods)\n"
         "\n" +
         table +
         "Allocated:  8 (6%)\n"
         "Total:      128\n" +
         rule(table) +
         "\n"
         "Allocated/Total GPU Memory In Cluster: 8/128 (6%)\n"
         "\n"
         "(unhealthy): GPU listed in its node's unhealthy-gpu-<node> ConfigMap, takes no new pods: gpu-node-c/GPU3\n";
}

// ---------------------------------------------------------------------------------------------
// --extender: the extender's /inspect

TEST(InspectPlugin, SummaryFromTheExtenderMatchesTheOriginalLayout) {
  ExtenderUnderTest extender(sample_cluster());
  const CliRun r = run({"--extender", url(extender)});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, kSampleSummary);
  EXPECT_EQ(r.err, "");
}

TEST(InspectPlugin, DetailsForOneNodeFromTheExtender) {
  ExtenderUnderTest extender(sample_cluster());
  const CliRun r = run({"-d", "gpu-node-c", "--extender", url(extender) + "/gpushare-scheduler"});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, sample_details_node_c("Bound"));
}

TEST(InspectPlugin, MarksCordonedNodesUnhealthyGpusUnindexedAndAssumedPods) {
  Json n1 = node_object("n1", 2, 32);
  n1["spec"] = {{"unschedulable", true}};
  Json unhealthy = {{"apiVersion", "v1"}, {"kind", "ConfigMap"}, {"data", {{"gpus", "0"}}}};
  unhealthy["metadata"] = {{"name", "unhealthy-gpu-n2"}, {"namespace", "kube-system"}};
  const Json cluster = cluster_list({n1, node_object("n2", 1, 16), unhealthy,
                                     pod_object("p1", "uid-p1", 4, "n1", 0),
                                     pod_object("unindexed", "uid-unindexed", 6, "n1")});
  ExtenderUnderTest extender(cluster);
  // An assumed pod: chosen by a bind the API server has not confirmed yet.
  extender.store().write([](core::ClusterModel& model, core::PlacementPolicy&) {
    core::PodAllocation pod;
    pod.uid = "uid-assumed";
    pod.namespace_name = "default";
    pod.name = "assumed-pod";
    pod.node = "n2";
    pod.gpus = {0};
    pod.per_gpu = 5;
    pod.assumed = true;
    model.add_pod(pod);
  });
  const CliRun r = run({"--extender", url(extender)});
  EXPECT_EQ(r.code, 0) << r.err;
  const std::string summary_table =
      "NAME          IPADDRESS  GPU0(Allocated/Total)  GPU1(Allocated/Total)  PENDING(Allocated)  GPU Memory(GiB)\n"
      "n1(cordoned)  unknown    4/16                   0/16                   6                   10/32\n"
      "n2            unknown    5/16(unhealthy)        -                                          5/16\n";
  const std::string expected =
      summary_table + rule(summary_table) +
      "Allocated/Total GPU Memory In Cluster: 15/48 (31%)\n"
      "\n"
      "(cordoned): node is unschedulable and takes no new pods: n1\n"
      "(unhealthy): GPU listed in its node's unhealthy-gpu-<node> ConfigMap, takes no new pods: n2/GPU0\n"
      "PENDING(Allocated): memory of pods bound without a GPU index (no ALIYUN_COM_GPU_MEM_IDX)\n"
      "Pods holding GPU memory but not running yet: 1\n"
      "  default/assumed-pod on n2 GPU0 (Assumed)\n";
  EXPECT_EQ(r.out, expected);

  const CliRun d = run({"-d", "n1", "--extender", url(extender)});
  EXPECT_EQ(d.code, 0) << d.err;
  const std::string table =
      "NAME       NAMESPACE  GPU0(Allocated)  GPU1(Allocated)  PENDING(Allocated)  STATUS\n"
      "p1         default    4                0                0                   Bound\n"
      "unindexed  default    0                0                6                   Bound\n";
  EXPECT_EQ(d.out, "\nNAME:       n1\nIPADDRESS:  unknown\nMODEL:      Tesla-T4\nSTATUS:     cordoned (takes no new pods)\n\n" +
                       table + "Allocated:  10 (31%)\nTotal:      32\n" + rule(table) +
                       "\nAllocated/Total GPU Memory In Cluster: 10/32 (31%)\n\n"
                       "(cordoned): node is unschedulable and takes no new pods: n1\n"
                       "PENDING(Allocated): memory of pods bound without a GPU index (no ALIYUN_COM_GPU_MEM_IDX)\n");
}

TEST(InspectPlugin, JsonOutputIsTheExtendersDocument) {
  ExtenderUnderTest extender(sample_cluster());
  const CliRun r = run({"-o", "json", "--extender", url(extender)});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(Json::parse(r.out), extender.inspect());
}

TEST(InspectPlugin, ReadsTheGoExtendersSmallerDocument) {
  // The Go extender's /inspect has no address, health or assumed flags: defaults apply.
  const Json go = Json::parse(R"({"nodes":[{"name":"n1","totalGPU":30,"usedGPU":9,"devs":[
      {"id":0,"totalGPU":15,"usedGPU":6,"pods":[{"name":"a","namespace":"ns","usedGPU":6}]},
      {"id":1,"totalGPU":15,"usedGPU":3,"pods":[{"name":"b","namespace":"ns","usedGPU":3}]}]}]})");
  const auto view = inspect::cluster_view(go);
  const std::string table =
      "NAME  IPADDRESS  GPU0(Allocated/Total)  GPU1(Allocated/Total)  GPU Memory(GiB)\n"
      "n1    unknown    6/15                   3/15                   9/30\n";
  EXPECT_EQ(inspect::render_summary(view, inspect::guess_unit(view)),
            table + rule(table) + "Allocated/Total GPU Memory In Cluster: 9/30 (30%)\n");
  EXPECT_THROW(inspect::cluster_view(Json::parse(R"({"Error":"x"})")), inspect::InspectError);
}

TEST(InspectPlugin, UnitIsGuessedFromTheGpuSizeLikeTheOriginal) {
  inspect::ClusterView view;
  view.nodes.push_back({});
  view.nodes[0].gpus.push_back({0, 15109, 0, true, {}});
  EXPECT_EQ(inspect::guess_unit(view), "MiB");
  view.nodes[0].gpus[0].total = 16;
  EXPECT_EQ(inspect::guess_unit(view), "GiB");
}

TEST(InspectPlugin, ExtenderUrlForms) {
  const std::string want = "http://h:1/gpushare-scheduler/inspect";
  EXPECT_EQ(inspect::inspect_url("http://h:1", std::nullopt), want);
  EXPECT_EQ(inspect::inspect_url("http://h:1/", std::nullopt), want);
  EXPECT_EQ(inspect::inspect_url("http://h:1/gpushare-scheduler/", std::nullopt), want);
  EXPECT_EQ(inspect::inspect_url("http://h:1/gpushare-scheduler/inspect", std::nullopt), want);
  EXPECT_EQ(inspect::inspect_url("https://h:1", std::string("n 1")), "https://h:1/gpushare-scheduler/inspect/n%201");
  // Through `kubectl proxy`: the service proxy path stays in front.
  EXPECT_EQ(inspect::inspect_url("http://127.0.0.1:8001/api/v1/namespaces/kube-system/services/"
                                 "gpushare-schd-extender-internal:39999/proxy",
                                 std::nullopt),
            "http://127.0.0.1:8001/api/v1/namespaces/kube-system/services/gpushare-schd-extender-internal:39999/"
            "proxy/gpushare-scheduler/inspect");
  EXPECT_THROW(inspect::inspect_url("h:1", std::nullopt), inspect::InspectError);
}

TEST(InspectPlugin, FailuresAreClearAndExitNonZero) {
  ExtenderUnderTest extender(sample_cluster());
  CliRun r = run({"no-such-node", "--extender", url(extender)});
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(r.out, "");
  EXPECT_NE(r.err.find("node no-such-node is not known to the extender"), std::string::npos) << r.err;

  r = run({"cpu-node-a", "--extender", url(extender)});
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("node cpu-node-a has no aliyun.com/gpu-mem"), std::string::npos) << r.err;

  r = run({"-o", "yaml", "--extender", url(extender)});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--output"), std::string::npos) << r.err;

  r = run({"--extender", "http://127.0.0.1:1"});  // nothing listens on port 1
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("cannot reach the extender at http://127.0.0.1:1/gpushare-scheduler/inspect"),
            std::string::npos)
      << r.err;

  // No kubeconfig anywhere and not in a pod: say what to do.
  r = run({}, {{"HOME", "/nonexistent"}});
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("--extender"), std::string::npos) << r.err;

  r = run({"--help"});
  EXPECT_EQ(r.code, 0);
  EXPECT_NE(r.out.find("--kubeconfig"), std::string::npos);
}

// ---------------------------------------------------------------------------------------------
// Default mode: nodes and pods from the API server

class TempDir {
 public:
  TempDir() {
    path_ = std::filesystem::temp_directory_path() /
            ("gpushare-inspect-" + std::to_string(::getpid()) + "-" + std::to_string(counter_++));
    std::filesystem::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::filesystem::path& path() const { return path_; }

 private:
  static inline int counter_ = 0;
  std::filesystem::path path_;
};

Resource resource_of(const Json& object) {
  const std::string kind = object.at("kind");
  if (kind == "Node") return Resource::Nodes;
  if (kind == "Pod") return Resource::Pods;
  return Resource::ConfigMaps;
}

class ApiModeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const Json cluster = sample_cluster();  // named: a temporary's items would dangle in the loop
    for (const Json& item : cluster["items"]) api_.create(resource_of(item), item);
    kubeconfig_ = dir_.path() / "config";
    api_.write_kubeconfig(kubeconfig_);
  }

  FakeApiServer api_;
  TempDir dir_;
  std::filesystem::path kubeconfig_;
};

TEST_F(ApiModeTest, SummaryEqualsTheExtendersForTheSameCluster) {
  const CliRun r = run({"--kubeconfig", kubeconfig_.string()});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, kSampleSummary);
  EXPECT_EQ(r.err, "");
  // Finished pods are left to the server to filter out, as kube-scheduler does.
  EXPECT_EQ(selector_of_last_pod_list(api_), "status.phase!=Succeeded,status.phase!=Failed");
}

TEST_F(ApiModeTest, KubeconfigFromTheEnvironmentOrTheHomeDirectory) {
  CliRun r = run({}, {{"KUBECONFIG", kubeconfig_.string()}});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, kSampleSummary);

  std::filesystem::create_directories(dir_.path() / ".kube");
  std::filesystem::copy_file(kubeconfig_, dir_.path() / ".kube" / "config");
  r = run({}, {{"HOME", dir_.path().string()}});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, kSampleSummary);
}

TEST_F(ApiModeTest, DetailsForOneNodeShowThePodPhase) {
  const CliRun r = run({"-d", "gpu-node-c", "--kubeconfig", kubeconfig_.string()});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, sample_details_node_c("Running"));
  EXPECT_EQ(selector_of_last_pod_list(api_), "status.phase!=Succeeded,status.phase!=Failed,spec.nodeName=gpu-node-c");
}

TEST_F(ApiModeTest, BoundPodsNotRunningYetAreListed) {
  Json pod = make_pod("default", "warming-up", "gpu-node-b", "Pending");
  pod["spec"]["containers"][0]["resources"] = {{"limits", {{"aliyun.com/gpu-mem", "4"}}}};
  pod["metadata"]["annotations"] = {{"ALIYUN_COM_GPU_MEM_IDX", "1"},
                                    {"ALIYUN_COM_GPU_MEM_POD", "4"},
                                    {"ALIYUN_COM_GPU_MEM_ASSIGNED", "false"}};
  api_.create(Resource::Pods, pod);
  const CliRun r = run({"gpu-node-b", "--kubeconfig", kubeconfig_.string()});
  EXPECT_EQ(r.code, 0) << r.err;
  const std::string table =
      "NAME        IPADDRESS     GPU0(Allocated/Total)  GPU1(Allocated/Total)  GPU Memory(GiB)\n"
      "gpu-node-b  192.168.0.12  24/32                  4/32                   28/64\n";
  EXPECT_EQ(r.out,
            table + rule(table) +
                "Allocated/Total GPU Memory In Cluster: 28/64 (43%)\n"
                "\n"
                "Pods holding GPU memory but not running yet: 1\n"
                "  default/warming-up on gpu-node-b GPU1 (Pending)\n");
}

TEST_F(ApiModeTest, JsonCarriesPhasesAndTheExtendersShape) {
  const CliRun r = run({"-o", "json", "--kubeconfig", kubeconfig_.string()});
  ASSERT_EQ(r.code, 0) << r.err;
  const Json doc = Json::parse(r.out);
  ASSERT_EQ(doc["nodes"].size(), 4u);  // cpu-node-a is listed with totalGPU 0, as the extender does
  EXPECT_EQ(doc["totalGPU"], 256);
  EXPECT_EQ(doc["usedGPU"], 56);
  const Json& node_a = doc["nodes"][1];
  EXPECT_EQ(node_a["name"], "gpu-node-a");
  EXPECT_EQ(node_a["devs"][0]["pods"][0]["name"], "inference-0");
  EXPECT_EQ(node_a["devs"][0]["pods"][0]["phase"], "Running");
  EXPECT_FALSE(doc.contains("policy"));
}

TEST_F(ApiModeTest, ForbiddenConfigMapsOnlyCostTheHealthColumn) {
  RequestFault fault;
  fault.verb = Verb::List;
  fault.resource = Resource::ConfigMaps;
  fault.status = 403;
  api_.inject_fault(fault, 10);
  const CliRun r = run({"gpu-node-c", "--kubeconfig", kubeconfig_.string()});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find("warning: cannot list ConfigMaps in kube-system"), std::string::npos) << r.err;
  EXPECT_EQ(r.out.find("unhealthy"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("gpu-node-c  192.168.0.13  0/16"), std::string::npos) << r.out;
}

TEST_F(ApiModeTest, ApiErrorsAreReportedWithAHint) {
  RequestFault fault;
  fault.verb = Verb::List;
  fault.resource = Resource::Nodes;
  fault.status = 403;
  api_.inject_fault(fault, 10);
  const CliRun r = run({"--kubeconfig", kubeconfig_.string()});
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(r.out, "");
  EXPECT_NE(r.err.find("403"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("needs get/list on nodes and pods"), std::string::npos) << r.err;

  const CliRun missing = run({"no-such-node", "--kubeconfig", kubeconfig_.string()});
  EXPECT_EQ(missing.code, 1);
  EXPECT_NE(missing.err.find("node no-such-node not found"), std::string::npos) << missing.err;
}

TEST(InspectPluginPaging, EveryPageOfPodsIsCounted) {
  FakeApiServer api;
  Json node = make_node("big");
  node["status"]["capacity"] = {{"aliyun.com/gpu-mem", "1024"}, {"aliyun.com/gpu-count", "1"}};
  node["status"]["allocatable"] = node["status"]["capacity"];
  api.create(Resource::Nodes, node);
  for (int i = 0; i < 501; ++i) {  // one more than a page of 500
    Json pod = make_pod("default", "p" + std::to_string(i), "big", "Running");
    pod["spec"]["containers"][0]["resources"] = {{"limits", {{"aliyun.com/gpu-mem", "1"}}}};
    pod["metadata"]["annotations"] = {{"ALIYUN_COM_GPU_MEM_IDX", "0"}, {"ALIYUN_COM_GPU_MEM_POD", "1"}};
    api.create(Resource::Pods, pod);
  }
  TempDir dir;
  api.write_kubeconfig(dir.path() / "config");
  const CliRun r = run({"--kubeconfig", (dir.path() / "config").string()});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("GPU Memory(MiB)"), std::string::npos) << r.out;  // 1024 per GPU
  EXPECT_NE(r.out.find("Allocated/Total GPU Memory In Cluster: 501/1024 (48%)"), std::string::npos) << r.out;
  EXPECT_GE(api.request_count(Verb::List, Resource::Pods), 2u);
}

}  // namespace
}  // namespace gpushare::testing
