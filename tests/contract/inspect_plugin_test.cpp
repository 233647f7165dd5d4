// kubectl-inspect-gpushare, run in-process through its CLI entry point, against a real extender
// (--extender) and against the fake API server (kubeconfig). The tables are checked exactly.

#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <optional>
#include <sstream>

#include "cmd/inspect/cli.h"
#include "cmd/inspect/sources.h"
#include "contract/extender_fixture.h"
#include "fakeapi/fake_apiserver.h"
#include "gpushare/inspect/render.h"
#include "gpushare/inspect/tabwriter.h"
#include "gpushare/inspect/view.h"
#include "gpushare/standalone/standalone_cluster.h"

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
  r.code = cmd::inspect::run_cli(
      args, out, err, [env](std::string_view name) -> std::optional<std::string> {
        auto it = env.find(std::string(name));
        return it == env.end() ? std::nullopt : std::optional<std::string>(it->second);
      });
  r.out = out.str();
  r.err = err.str();
  return r;
}

Json sample_cluster() {
  return standalone::read_cluster_file(std::string(GPUSHARE_SOURCE_DIR) +
                                       "/deploy/samples/cluster.yaml");
}

std::string dashes(std::size_t n) {
  return std::string(n, '-') + "\n";
}

// The last line of `out`, without its newline (what `tail -1` gives a script).
std::string last_line(const std::string& out) {
  const std::string body = out.substr(0, out.size() - 1);
  return body.substr(body.rfind('\n') + 1);
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

std::string url(const ExtenderUnderTest& extender) {
  return "http://127.0.0.1:" + std::to_string(extender.port());
}

// The goldens below are what Aliyun's plugin prints for the same cluster: its format strings
// (cmd/inspect/display.go of AliyunContainerService/gpushare-device-plugin) through Go's
// tabwriter (minwidth 0, padding 2, ' '): columns as wide as their widest cell plus two in each
// block of lines that share them, the last cell of a line unpadded, a rule as long as the first
// node's unaligned row plus 20 (summary) or its unaligned pod rows plus 10 (details), and the
// cluster total last, with the padding its trailing tab gives it.

// The summary of deploy/samples/cluster.yaml, whichever source it is read from: GPUs a node
// lacks read 0/0; the unhealthy GPU3 of gpu-node-c is not marked (the original has no such mark).
const std::string kSampleSummary =
    "NAME        IPADDRESS     GPU0(Allocated/Total)  GPU1(Allocated/Total)  GPU2(Allocated/Total) "
    " "
    "GPU3(Allocated/Total)  GPU4(Allocated/Total)  GPU5(Allocated/Total)  GPU6(Allocated/Total)  "
    "GPU7(Allocated/Total)  GPU Memory(GiB)\n"
    "gpu-node-a  192.168.0.11  10/16                  14/16                  0/16                  "
    " "
    "0/16                   0/0                    0/0                    0/0                    "
    "0/0                    24/64\n"
    "gpu-node-b  192.168.0.12  24/32                  0/32                   0/0                   "
    " "
    "0/0                    0/0                    0/0                    0/0                    "
    "0/0                    24/64\n"
    "gpu-node-c  192.168.0.13  0/16                   0/16                   8/16                  "
    " "
    "0/16                   0/16                   0/16                   0/16                   "
    "0/16                   8/128\n" +
    dashes(88) +  // "gpu-node-a\t192.168.0.11\t10/16\t...\t24/64\n" is 68 bytes
    "Allocated/Total GPU Memory In Cluster:\n"
    "56/256 (21%)  \n";
// What the tables do not show, on stderr.
const std::string kSampleNotes =
    "note: GPU3 of node gpu-node-c is unhealthy (listed in its unhealthy-gpu-gpu-node-c "
    "ConfigMap): it takes no "
    "new pods\n";

// -d gpu-node-c: the original's layout, and the pod's phase in the cell the original leaves empty.
const std::string kSampleDetailsNodeC =
    "\n"
    "NAME:       gpu-node-c\n"
    "IPADDRESS:  192.168.0.13\n"
    "\n"
    "NAME         NAMESPACE  GPU0(Allocated)  GPU1(Allocated)  GPU2(Allocated)  GPU3(Allocated)  "
    "GPU4(Allocated)  GPU5(Allocated)  GPU6(Allocated)  GPU7(Allocated)  STATUS\n"
    "notebook-0   research   0                0                8                0                "
    "0                0                0                0                Running\n"
    "Allocated :  8 (6%)     \n"
    "Total :      128        \n" +
    dashes(47) +  // "notebook-0\tresearch\t0\t...\t0\t\n" is 37 bytes
    "\n"
    "\n"
    "Allocated/Total GPU Memory In Cluster:  8/128 (6%)  \n";

// ---------------------------------------------------------------------------------------------
// --extender: the extender's /inspect

TEST(InspectPlugin, SummaryFromTheExtenderMatchesTheOriginalLayout) {
  ExtenderUnderTest extender(sample_cluster());
  const CliRun r = run({"--extender", url(extender)});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, kSampleSummary);
  EXPECT_EQ(r.err, kSampleNotes);
  EXPECT_EQ(last_line(r.out), "56/256 (21%)  ");  // what `| tail -1` reads
}

TEST(InspectPlugin, DetailsForOneNodeFromTheExtenderShowThePhase) {
  ExtenderUnderTest extender(sample_cluster());
  const CliRun r = run({"-d", "gpu-node-c", "--extender", url(extender) + "/gpushare-scheduler"});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, kSampleDetailsNodeC);
  EXPECT_EQ(r.err, kSampleNotes);
}

TEST(InspectPlugin, MarksStayOffTheTablesAndGoToStderr) {
  Json n1 = node_object("n1", 2, 32);
  n1["spec"] = {{"unschedulable", true}};
  Json unhealthy = {{"apiVersion", "v1"}, {"kind", "ConfigMap"}, {"data", {{"gpus", "0"}}}};
  unhealthy["metadata"] = {{"name", "unhealthy-gpu-n2"}, {"namespace", "kube-system"}};
  const Json cluster =
      cluster_list({n1, node_object("n2", 1, 16), unhealthy, pod_object("p1", "uid-p1", 4, "n1", 0),
                    pod_object("starting", "uid-starting", 2, "n1", 1, "Pending"),
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
  // The node name as it is, 0/0 for n2's missing GPU1, PENDING(Allocated) for the pod without a
  // GPU index (empty for n2, padded as the original pads an empty cell).
  EXPECT_EQ(
      r.out,
      "NAME  IPADDRESS  GPU0(Allocated/Total)  GPU1(Allocated/Total)  PENDING(Allocated)  GPU "
      "Memory(GiB)\n"
      "n1    unknown    4/16                   2/16                   6                   12/32\n"
      "n2    unknown    5/16                   0/0                                        5/16\n" +
          dashes(49) +  // "n1\tunknown\t4/16\t2/16\t6\t12/32\n" is 29 bytes
          "Allocated/Total GPU Memory In Cluster:\n"
          "17/48 (35%)  \n");
  EXPECT_EQ(
      r.err,
      "note: node n1 is cordoned: it takes no new pods\n"
      "note: GPU0 of node n2 is unhealthy (listed in its unhealthy-gpu-n2 ConfigMap): it takes no "
      "new pods\n"
      "note: PENDING(Allocated) is memory of pods bound without a GPU index (no "
      "ALIYUN_COM_GPU_MEM_IDX)\n"
      "note: pod default/starting on n1 GPU1 holds GPU memory but is not running yet (Pending)\n"
      "note: pod default/assumed-pod on n2 GPU0 holds GPU memory but is not running yet "
      "(Assumed)\n");

  const CliRun d = run({"-d", "n1", "--extender", url(extender)});
  EXPECT_EQ(d.code, 0) << d.err;
  EXPECT_EQ(
      d.out,
      "\n"
      "NAME:       n1\n"
      "IPADDRESS:  unknown\n"
      "\n"
      "NAME         NAMESPACE  GPU0(Allocated)  GPU1(Allocated)  Pending(Allocated)  STATUS\n"
      "p1           default    4                0                0                   Running\n"
      "starting     default    0                2                0                   Pending\n"
      "unindexed    default    0                0                6                   Running\n"
      "Allocated :  12 (37%)   \n"
      "Total :      32         \n" +
          dashes(77) +  // three unaligned rows of 18, 24 and 25 bytes, plus 10
          "\n"
          "\n"
          "Allocated/Total GPU Memory In Cluster:  12/32 (37%)  \n");
  EXPECT_EQ(d.err, "note: node n1 is cordoned: it takes no new pods\n");
}

TEST(InspectPlugin, PercentagesTruncateAsTheOriginalsFloatingPointDoes) {
  // int64(float64(29) / float64(100) * 100) is 28 in Go: 0.29 * 100 = 28.999999999999996.
  inspect::ClusterView view;
  inspect::NodeView node;
  node.name = "n";
  node.total = 100;
  node.used = 29;
  node.gpus.push_back({0, 100, 29, true, {}, "", {}});
  view.nodes.push_back(node);
  EXPECT_EQ(last_line(inspect::render_summary(view, "MiB")), "29/100 (28%)  ");
  EXPECT_EQ(last_line(inspect::render_details(view)),
            "Allocated/Total GPU Memory In Cluster:  29/100 (28%)  ");
}

TEST(InspectPlugin, NoGpuNodesGiveTheOriginalsEmptyTable) {
  const inspect::ClusterView view;
  EXPECT_EQ(
      inspect::render_summary(view, "GiB"),
      "NAME  IPADDRESS  GPU Memory(GiB)\n\nAllocated/Total GPU Memory In Cluster:\n0/0 (0%)  \n");
  EXPECT_EQ(inspect::render_details(view),
            "\n\nAllocated/Total GPU Memory In Cluster:  0/0 (0%)  \n");
}

TEST(InspectPlugin, ConfigurationWarningsOfTheExtenderGoToStderr) {
  Json document =
      Json::parse(R"({"nodes":[],"configWarnings":[{"object":"kube-system/unhealthy-gpu-n1",
      "kind":"unknown_key","key":"gpu","value":"0","message":"ConfigMap kube-system/unhealthy-gpu-n1: oops"}]})");
  const auto view = inspect::cluster_view(document);
  EXPECT_EQ(inspect::render_notes(view, false),
            "warning: ConfigMap kube-system/unhealthy-gpu-n1: oops\n");
}

// DRA holders in the tables: an /inspect document as the extender serves it, with a claim on
// two GPUs (count 2), a claim reserved for no pod, and a device-plugin pod on a GPU that a
// claim shares (the view does not assume they never meet).
TEST(InspectPlugin, DraClaimsAreCountedAndListedBesideDevicePluginPods) {
  const Json document = Json::parse(R"({"nodes":[{"name":"dra-1","address":"10.0.0.5",
    "totalGPU":80,"usedGPU":55,"devs":[
      {"id":0,"totalGPU":40,"usedGPU":35,"healthy":true,"draDevice":"dra-1/gpu-0",
       "pods":[{"name":"legacy","namespace":"ops","uid":"u1","usedGPU":5,"phase":"Running"}],
       "draClaims":[{"claim":"ml/train-gpus","pod":"ml/train","usedGPU":20,"shareID":"a"},
                    {"claim":"ml/idle","pod":"","usedGPU":10,"shareID":"b"}]},
      {"id":1,"totalGPU":40,"usedGPU":20,"healthy":true,"draDevice":"dra-1/gpu-1","pods":[],
       "draClaims":[{"claim":"ml/train-gpus","pod":"ml/train","usedGPU":20,"shareID":"c"}]}]}]})");
  const auto view = inspect::cluster_view(document);
  ASSERT_EQ(view.nodes.size(), 1u);
  EXPECT_EQ(view.nodes[0].dra_used(), 50);
  // The summary's figures are the GPUs' own, DRA-held memory included.
  EXPECT_EQ(inspect::render_summary(view, "GiB"),
            "NAME   IPADDRESS  GPU0(Allocated/Total)  GPU1(Allocated/Total)  GPU Memory(GiB)\n"
            "dra-1  10.0.0.5   35/40                  20/40                  55/80\n" +
                dashes(53) +  // "dra-1\t10.0.0.5\t35/40\t20/40\t55/80\n" is 33 bytes
                "Allocated/Total GPU Memory In Cluster:\n"
                "55/80 (68%)  \n");
  EXPECT_EQ(inspect::render_notes(view, false),
            "note: Allocated includes GPU memory held by DRA ResourceClaims: 50 on 1 node (-d "
            "lists each claim and its pod)\n");
  // -d: one row per claim, its memory on each GPU, after the device-plugin pods; the rows add up
  // to Allocated.
  EXPECT_EQ(inspect::render_details(view),
            "\n"
            "NAME:       dra-1\n"
            "IPADDRESS:  10.0.0.5\n"
            "\n"
            "NAME         NAMESPACE  GPU0(Allocated)  GPU1(Allocated)  STATUS\n"
            "legacy       ops        5                0                Running\n"
            "-            ml         10               0                DRA claim idle\n"
            "train        ml         20               20               DRA claim train-gpus\n"
            "Allocated :  55 (68%)   \n"
            "Total :      80         \n" +
                dashes(53) +  // rows of 16, 11 and 16 bytes without STATUS, plus 10
                "\n"
                "\n"
                "Allocated/Total GPU Memory In Cluster:  55/80 (68%)  \n");
  EXPECT_EQ(inspect::render_notes(view, true),
            "note: node dra-1: GPUs published through DRA (pool/device): GPU0 dra-1/gpu-0, GPU1 "
            "dra-1/gpu-1\n");
}

TEST(GoTabwriter, LaysOutBlocksAsGoDoes) {
  // Column widths hold within a block of consecutive lines that have the column; a line without
  // tabs ends every block; the cell after the last tab is not padded, a tab-terminated one is.
  EXPECT_EQ(inspect::go_tabwriter("a\tbbb\tc\naaaa\tb\n--\nx\ty\t\n"),
            "a     bbb  c\n"
            "aaaa  b\n"
            "--\n"
            "x  y  \n");
  // Column 1 spans only the lines that have it: line 3 has column 0 alone.
  EXPECT_EQ(inspect::go_tabwriter("a\tb\tc\nlonger\tbb\t\nz\t\n"),
            "a       b   c\nlonger  bb  \nz       \n");
  // Empty cells are padded; widths count code points.
  EXPECT_EQ(inspect::go_tabwriter("\t\u00e9\u00e9\tx\nabc\t\ty\n"),
            "     \u00e9\u00e9  x\nabc      y\n");
  EXPECT_EQ(inspect::go_tabwriter(""), "");
}

TEST(InspectPlugin, JsonOutputIsTheExtendersDocument) {
  ExtenderUnderTest extender(sample_cluster());
  const CliRun r = run({"-o", "json", "--extender", url(extender)});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(Json::parse(r.out), extender.inspect());
}

TEST(InspectPlugin, ReadsTheGoExtendersSmallerDocument) {
  // The Go extender's /inspect has no address, health, phase or assumed flags: defaults apply.
  const Json go = Json::parse(R"({"nodes":[{"name":"n1","totalGPU":30,"usedGPU":9,"devs":[
      {"id":0,"totalGPU":15,"usedGPU":6,"pods":[{"name":"a","namespace":"ns","usedGPU":6}]},
      {"id":1,"totalGPU":15,"usedGPU":3,"pods":[{"name":"b","namespace":"ns","usedGPU":3}]}]}]})");
  const auto view = inspect::cluster_view(go);
  EXPECT_EQ(inspect::render_summary(view, inspect::guess_unit(view)),
            "NAME  IPADDRESS  GPU0(Allocated/Total)  GPU1(Allocated/Total)  GPU Memory(GiB)\n"
            "n1    unknown    6/15                   3/15                   9/30\n" +
                dashes(46) + "Allocated/Total GPU Memory In Cluster:\n9/30 (30%)  \n");
  // No phase known: the STATUS cell stays empty, as the original's last cell is.
  const std::string details = inspect::render_details(view);
  EXPECT_NE(details.find("\na            ns         6                0                \n"),
            std::string::npos)
      << details;
  EXPECT_EQ(inspect::render_notes(view, false), "");
  EXPECT_THROW(inspect::cluster_view(Json::parse(R"({"Error":"x"})")), inspect::InspectError);
}

TEST(InspectPlugin, UnitIsGuessedFromTheGpuSizeLikeTheOriginal) {
  inspect::ClusterView view;
  view.nodes.push_back({});
  view.nodes[0].gpus.push_back({0, 15109, 0, true, {}, "", {}});
  EXPECT_EQ(inspect::guess_unit(view), "MiB");
  view.nodes[0].gpus[0].total = 16;
  EXPECT_EQ(inspect::guess_unit(view), "GiB");
}

TEST(InspectPlugin, ExtenderUrlForms) {
  const std::string want = "http://h:1/gpushare-scheduler/inspect";
  EXPECT_EQ(cmd::inspect::inspect_url("http://h:1", std::nullopt), want);
  EXPECT_EQ(cmd::inspect::inspect_url("http://h:1/", std::nullopt), want);
  EXPECT_EQ(cmd::inspect::inspect_url("http://h:1/gpushare-scheduler/", std::nullopt), want);
  EXPECT_EQ(cmd::inspect::inspect_url("http://h:1/gpushare-scheduler/inspect", std::nullopt), want);
  EXPECT_EQ(cmd::inspect::inspect_url("https://h:1", std::string("n 1")),
            "https://h:1/gpushare-scheduler/inspect/n%201");
  // Through `kubectl proxy`: the service proxy path stays in front.
  EXPECT_EQ(
      cmd::inspect::inspect_url("http://127.0.0.1:8001/api/v1/namespaces/kube-system/services/"
                                "gpushare-schd-extender-internal:39999/proxy",
                                std::nullopt),
      "http://127.0.0.1:8001/api/v1/namespaces/kube-system/services/"
      "gpushare-schd-extender-internal:39999/"
      "proxy/gpushare-scheduler/inspect");
  EXPECT_THROW(cmd::inspect::inspect_url("h:1", std::nullopt), inspect::InspectError);
}

TEST(InspectPlugin, FailuresAreClearAndExitNonZero) {
  ExtenderUnderTest extender(sample_cluster());
  CliRun r = run({"no-such-node", "--extender", url(extender)});
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(r.out, "");
  EXPECT_NE(r.err.find("node no-such-node is not known to the extender"), std::string::npos)
      << r.err;

  r = run({"cpu-node-a", "--extender", url(extender)});
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("node cpu-node-a has no aliyun.com/gpu-mem"), std::string::npos) << r.err;

  r = run({"-o", "yaml", "--extender", url(extender)});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--output"), std::string::npos) << r.err;

  r = run({"--extender", "http://127.0.0.1:1"});  // nothing listens on port 1
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(
      r.err.find("cannot reach the extender at http://127.0.0.1:1/gpushare-scheduler/inspect"),
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

// The fake API server holding every object of a v1 List, and a kubeconfig for it.
class SeededApiTest : public ::testing::Test {
 protected:
  void seed(const Json& cluster) {
    for (const Json& item : cluster["items"]) {
      const std::string kind = item.at("kind");
      std::optional<Resource> resource;
      for (const Resource known : kAllResources) {
        if (info(known).kind == kind) resource = known;
      }
      ASSERT_TRUE(resource) << kind;
      api_.create(*resource, item);
    }
    kubeconfig_ = dir_.path() / "config";
    api_.write_kubeconfig(kubeconfig_);
  }

  FakeApiServer api_;
  TempDir dir_;
  std::filesystem::path kubeconfig_;
};

class ApiModeTest : public SeededApiTest {
 protected:
  void SetUp() override { seed(sample_cluster()); }
};

TEST_F(ApiModeTest, SummaryEqualsTheExtendersForTheSameCluster) {
  const CliRun r = run({"--kubeconfig", kubeconfig_.string()});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, kSampleSummary);
  EXPECT_EQ(r.err, kSampleNotes);
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
  EXPECT_EQ(r.out, kSampleDetailsNodeC);
  EXPECT_EQ(selector_of_last_pod_list(api_),
            "status.phase!=Succeeded,status.phase!=Failed,spec.nodeName=gpu-node-c");
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
  EXPECT_EQ(
      r.out,
      "NAME        IPADDRESS     GPU0(Allocated/Total)  GPU1(Allocated/Total)  GPU Memory(GiB)\n"
      "gpu-node-b  192.168.0.12  24/32                  4/32                   28/64\n" +
          dashes(61) +
          "Allocated/Total GPU Memory In Cluster:\n"
          "28/64 (43%)  \n");
  EXPECT_EQ(r.err,
            "note: pod default/warming-up on gpu-node-b GPU1 holds GPU memory but is not running "
            "yet (Pending)\n");
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

TEST_F(ApiModeTest, ForbiddenConfigMapsOnlyCostTheHealthNotes) {
  RequestFault fault;
  fault.verb = Verb::List;
  fault.resource = Resource::ConfigMaps;
  fault.status = 403;
  api_.inject_fault(fault, 10);
  const CliRun r = run({"gpu-node-c", "--kubeconfig", kubeconfig_.string()});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find("warning: cannot list ConfigMaps in kube-system"), std::string::npos)
      << r.err;
  EXPECT_EQ(r.err.find("is unhealthy"), std::string::npos)
      << r.err;  // health unknown: no GPU is marked
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

// ---------------------------------------------------------------------------------------------
// API mode on a DRA cluster: deploy/samples/dra-cluster.yaml (two nodes whose GPUs are
// published in ResourceSlices, two claims holding memory, a device-plugin node) and a
// device-plugin pod on that node.

class DraApiModeTest : public SeededApiTest {
 protected:
  void SetUp() override {
    Json pod = make_pod("ops", "legacy", "plugin-node", "Running");
    pod["spec"]["containers"][0]["resources"] = {{"limits", {{"aliyun.com/gpu-mem", "6"}}}};
    pod["metadata"]["annotations"] = {{"ALIYUN_COM_GPU_MEM_IDX", "1"},
                                      {"ALIYUN_COM_GPU_MEM_POD", "6"},
                                      {"ALIYUN_COM_GPU_MEM_ASSIGNED", "true"}};
    api_.create(Resource::Pods, pod);
    seed(standalone::read_cluster_file(std::string(GPUSHARE_SOURCE_DIR) +
                                       "/deploy/samples/dra-cluster.yaml"));
  }
};

TEST_F(DraApiModeTest, SummaryCountsClaimsOnTheirGpus) {
  const CliRun r = run({"--kubeconfig", kubeconfig_.string()});
  EXPECT_EQ(r.code, 0) << r.err;
  // 40Gi devices are 40 units (--dra-memory-unit 1Gi); notebook-gpu holds 30 of dra-node-a's
  // first GPU, serving-gpu 15 of dra-node-b's; legacy 6 of plugin-node's GPU1.
  EXPECT_EQ(r.out,
            "NAME         IPADDRESS  GPU0(Allocated/Total)  GPU1(Allocated/Total)  "
            "GPU2(Allocated/Total)  GPU3(Allocated/Total)  GPU Memory(GiB)\n"
            "dra-node-a   unknown    30/40                  0/40                   0/0        "
            "            0/0                    30/80\n"
            "dra-node-b   unknown    15/40                  0/0                    0/0        "
            "            0/0                    15/40\n"
            "plugin-node  unknown    0/16                   6/16                   0/16       "
            "            0/16                   6/64\n" +
                dashes(64) +  // "dra-node-a\tunknown\t30/40\t0/40\t0/0\t0/0\t30/80\n" is 44 bytes
                "Allocated/Total GPU Memory In Cluster:\n"
                "51/184 (27%)  \n");
  EXPECT_EQ(r.err,
            "note: Allocated includes GPU memory held by DRA ResourceClaims: 45 on 2 nodes (-d "
            "lists each claim and its pod)\n");
}

TEST_F(DraApiModeTest, DetailsListTheClaimAndItsPodForOneNode) {
  const CliRun r = run({"-d", "dra-node-a", "--kubeconfig", kubeconfig_.string()});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out,
            "\n"
            "NAME:       dra-node-a\n"
            "IPADDRESS:  unknown\n"
            "\n"
            "NAME         NAMESPACE  GPU0(Allocated)  GPU1(Allocated)  STATUS\n"
            "notebook     ml         30               0                DRA claim notebook-gpu\n"
            "Allocated :  30 (37%)   \n"
            "Total :      80         \n" +
                dashes(28) +  // "notebook\tml\t30\t0\t\n" is 18 bytes
                "\n"
                "\n"
                "Allocated/Total GPU Memory In Cluster:  30/80 (37%)  \n");
  EXPECT_EQ(r.err,
            "note: node dra-node-a: GPUs published through DRA (pool/device): GPU0 "
            "dra-node-a/gpu-0, GPU1 dra-node-a/gpu-1\n");
  // Only the node's slices of the driver are listed; claims are not selectable by node.
  std::string slice_selector = "(none)";
  for (const auto& request : api_.requests()) {
    if (request.verb == Verb::List && request.resource == Resource::ResourceSlices)
      slice_selector = request.params.at("fieldSelector");
  }
  EXPECT_EQ(slice_selector, "spec.driver=gpu.nvidia.com,spec.nodeName=dra-node-a");
}

TEST_F(DraApiModeTest, JsonCarriesTheClaimsAsTheExtendersInspectDoes) {
  const CliRun r = run({"-o", "json", "dra-node-b", "--kubeconfig", kubeconfig_.string()});
  ASSERT_EQ(r.code, 0) << r.err;
  const Json doc = Json::parse(r.out);
  ASSERT_EQ(doc["nodes"].size(), 1u);
  const Json& gpu = doc["nodes"][0]["devs"][0];
  EXPECT_EQ(gpu["usedGPU"], 15);
  EXPECT_EQ(gpu["draDevice"], "dra-node-b/gpu-0");
  EXPECT_EQ(gpu["draClaims"], Json::parse(R"([{"claim":"ml/serving-gpu","pod":"ml/serving",
                                               "usedGPU":15,"shareID":"9a7e31"}])"));
}

TEST_F(DraApiModeTest, ADriverOrUnitOtherThanTheExtendersChangesWhatIsShown) {
  // In MiB (the device plugin's --memory-unit=MiB): 40Gi is 40960 units, 30Gi 30720.
  CliRun r = run({"dra-node-a", "--dra-memory-unit", "1Mi", "--kubeconfig", kubeconfig_.string()});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(last_line(r.out), "30720/81920 (37%)  ");
  // Another driver's devices are not GPUs here: the node has none and is not shown.
  r = run(
      {"dra-node-a", "--dra-driver", "other.example.com", "--kubeconfig", kubeconfig_.string()});
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("node dra-node-a has no aliyun.com/gpu-mem"), std::string::npos) << r.err;
  r = run({"--dra-memory-unit", "lots", "--kubeconfig", kubeconfig_.string()});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--dra-memory-unit: \"lots\" is not a positive quantity"), std::string::npos)
      << r.err;
}

TEST_F(DraApiModeTest, ForbiddenDraListsOnlyCostTheDraHolders) {
  RequestFault fault;
  fault.verb = Verb::List;
  fault.resource = Resource::ResourceClaims;
  fault.status = 403;
  api_.inject_fault(fault, 10);
  const CliRun r = run({"--kubeconfig", kubeconfig_.string()});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find("warning: cannot list resource.k8s.io/v1 ResourceSlices and "
                       "ResourceClaims"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("needs list on resourceslices and resourceclaims"), std::string::npos)
      << r.err;
  // The device-plugin node as ever; the DRA nodes have no GPUs to show.
  EXPECT_EQ(r.out.find("dra-node-a"), std::string::npos) << r.out;
  EXPECT_EQ(last_line(r.out), "6/64 (9%)  ");
}

TEST(InspectPluginDra, AServerWithoutDraShowsDevicePluginGpusSilently) {
  FakeApiServerOptions options;
  options.serve_dra = false;
  FakeApiServer api(options);
  Json node = make_node("n1");
  node["status"]["capacity"] = {{"aliyun.com/gpu-mem", "32"}, {"aliyun.com/gpu-count", "2"}};
  node["status"]["allocatable"] = node["status"]["capacity"];
  api.create(Resource::Nodes, node);
  TempDir dir;
  api.write_kubeconfig(dir.path() / "config");
  const CliRun r = run({"--kubeconfig", (dir.path() / "config").string()});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  EXPECT_EQ(last_line(r.out), "0/32 (0%)  ");
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
    pod["metadata"]["annotations"] = {{"ALIYUN_COM_GPU_MEM_IDX", "0"},
                                      {"ALIYUN_COM_GPU_MEM_POD", "1"}};
    api.create(Resource::Pods, pod);
  }
  TempDir dir;
  api.write_kubeconfig(dir.path() / "config");
  const CliRun r = run({"--kubeconfig", (dir.path() / "config").string()});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("GPU Memory(MiB)"), std::string::npos) << r.out;  // 1024 per GPU
  EXPECT_EQ(last_line(r.out), "501/1024 (48%)  ");
  EXPECT_GE(api.request_count(Verb::List, Resource::Pods), 2u);
}

}  // namespace
}  // namespace gpushare::testing
