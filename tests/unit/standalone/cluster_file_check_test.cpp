// Standalone mode refuses a cluster file with mistakes, naming the file, the line and the
// mistake, instead of serving what it could make of it.

#include "gpushare/standalone/cluster_file_check.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "gpushare/standalone/standalone_cluster.h"

namespace gpushare::testing {
namespace {

namespace fs = std::filesystem;
using Json = kube::Json;

const fs::path kSample = fs::path(GPUSHARE_SOURCE_DIR) / "deploy/samples/cluster.yaml";

// A small cluster file; `extra` is appended to its items (YAML, indented as an item).
std::string cluster_yaml(const std::string& extra) {
  return "apiVersion: v1\n"                                                           // 1
         "kind: List\n"                                                               // 2
         "items:\n"                                                                   // 3
         "- apiVersion: v1\n"                                                         // 4
         "  kind: Node\n"                                                             // 5
         "  metadata: {name: n1}\n"                                                   // 6
         "  status:\n"                                                                // 7
         "    capacity: {aliyun.com/gpu-mem: \"32\", aliyun.com/gpu-count: \"2\"}\n"  // 8
         "- apiVersion: v1\n"                                                         // 9
         "  kind: Pod\n"                                                              // 10
         "  metadata: {name: p1, namespace: default, uid: u1}\n"                      // 11
         "  spec:\n"                                                                  // 12
         "    nodeName: n1\n"                                                         // 13
         "    containers:\n"                                                          // 14
         "    - name: main\n"                                                         // 15
         "      resources: {limits: {aliyun.com/gpu-mem: \"4\"}}\n"                   // 16
         "  status: {phase: Running}\n" +                                             // 17
         extra;                                                                       // 18...
}

class ClusterFile : public ::testing::Test {
 protected:
  void TearDown() override {
    std::error_code ec;
    fs::remove(path_, ec);
  }
  // What loading `text` throws ("" when it loads).
  std::string refusal(const std::string& text) {
    std::ofstream(path_) << text;
    try {
      standalone::load_cluster_file(path_, kube::ResourceNames{});
      return "";
    } catch (const std::runtime_error& e) {
      return e.what();
    }
  }
  const fs::path path_ =
      fs::temp_directory_path() / ("gpushare-cluster-" + std::to_string(::getpid()) + ".yaml");
  std::string file() const { return path_.string(); }
};

TEST_F(ClusterFile, TheSampleAndACorrectFileLoad) {
  EXPECT_NO_THROW(standalone::load_cluster_file(kSample, kube::ResourceNames{}));
  EXPECT_EQ(refusal(cluster_yaml("")), "");
}

TEST_F(ClusterFile, AMisspeltKeyIsRefusedWithItsLine) {
  std::string text = cluster_yaml("");
  text.replace(text.find("    nodeName: n1"), 16, "    nodname: n1");
  const std::string error = refusal(text);
  EXPECT_NE(
      error.find(file() +
                 ":13: Pod default/p1 spec: unknown key \"nodname\" (did you mean \"nodeName\"?)"),
      std::string::npos)
      << error;
  EXPECT_NE(error.find("1 mistake; not serving it"), std::string::npos) << error;
}

TEST_F(ClusterFile, ANodeNameNamingNoNodeIsRefused) {
  std::string text = cluster_yaml("");
  text.replace(text.find("    nodeName: n1"), 16, "    nodeName: n9");
  const std::string error = refusal(text);
  EXPECT_NE(
      error.find(file() + ":13: Pod default/p1: spec.nodeName \"n9\" names no Node of this file"),
      std::string::npos)
      << error;
}

// An unhealthy-gpu ConfigMap as a cluster_yaml() item: four lines, `data` on the last.
std::string configmap_yaml(const std::string& name, const std::string& ns,
                           const std::string& data) {
  return "- apiVersion: v1\n"
         "  kind: ConfigMap\n"
         "  metadata: {name: " +
         name + ", namespace: " + ns +
         "}\n"
         "  data: " +
         data + "\n";
}

TEST_F(ClusterFile, AMisspeltUnhealthyGpuConfigMapKeyIsRefused) {
  const std::string error =
      refusal(cluster_yaml(configmap_yaml("unhealthy-gpu-n1", "kube-system", "{gpu: \"1\"}")));
  EXPECT_NE(
      error.find(
          file() +
          ":21: ConfigMap kube-system/unhealthy-gpu-n1: data key \"gpu\" (value \"1\") is not "
          "read, only \"gpus\" is; GPUs of node n1 marked unhealthy: none"),
      std::string::npos)
      << error;
}

TEST_F(ClusterFile, OtherUnhealthyGpuConfigMapMistakesAreRefused) {
  const std::string error =
      refusal(cluster_yaml(configmap_yaml("unhealthy-gpu-n1", "kube-system", "{gpus: \"0,one\"}") +
                           configmap_yaml("unhealthy-gpu-n7", "default", "{gpus: \"0\"}")));
  EXPECT_NE(error.find(
                file() +
                ":21: ConfigMap kube-system/unhealthy-gpu-n1: data.gpus entry \"one\" is not a GPU "
                "index and is ignored; GPUs of node n1 marked unhealthy: 0"),
            std::string::npos)
      << error;
  EXPECT_NE(
      error.find(file() +
                 ":24: ConfigMap default/unhealthy-gpu-n7: an unhealthy-gpu ConfigMap must be in "
                 "namespace kube-system"),
      std::string::npos)
      << error;
  EXPECT_NE(
      error.find(file() + ":24: ConfigMap default/unhealthy-gpu-n7: node \"n7\" (from the name "
                          "unhealthy-gpu-<node>) is no Node of this file"),
      std::string::npos)
      << error;
  EXPECT_NE(error.find("3 mistakes"), std::string::npos) << error;
}

TEST_F(ClusterFile, MisspeltResourceAnnotationAndKindAreRefused) {
  std::string text = cluster_yaml(
      "- apiVersion: v1\n"                              // 18
      "  kind: Pdo\n"                                   // 19
      "  metadata: {name: p2, namespace: default}\n");  // 20
  text.replace(text.find("{limits: {aliyun.com/gpu-mem"), 28, "{limits: {aliyun.com/gpu-men");
  text.replace(text.find("uid: u1}"), 8, "uid: u1, annotations: {ALIYUN_COM_GPU_MEM_IDEX: \"0\"}}");
  const std::string error = refusal(text);
  EXPECT_NE(
      error.find(
          file() +
          ":16: Pod default/p1 container main resources.limits: \"aliyun.com/gpu-men\" is not "
          "read (did you mean \"aliyun.com/gpu-mem\"?)"),
      std::string::npos)
      << error;
  EXPECT_NE(error.find(
                file() +
                ":11: Pod default/p1 annotations: \"ALIYUN_COM_GPU_MEM_IDEX\" is not read (did you "
                "mean \"ALIYUN_COM_GPU_MEM_IDX\"?)"),
            std::string::npos)
      << error;
  EXPECT_NE(error.find(file() + ":19: item kind \"Pdo\" (did you mean \"Pod\"?)"),
            std::string::npos)
      << error;
}

TEST_F(ClusterFile, JsonFilesGetLineNumbersToo) {
  const std::string text = R"({"apiVersion": "v1", "kind": "List", "items": [
  {"kind": "Node", "metadata": {"name": "n1"}},
  {"kind": "Pod", "metadata": {"name": "p", "namespace": "ns", "uid": "u"},
   "spec": {"nodeName": "n2", "containers": []}}
]})";
  const std::string error = refusal(text);
  EXPECT_NE(error.find(file() + ":4: Pod ns/p: spec.nodeName \"n2\" names no Node of this file"),
            std::string::npos)
      << error;
}

TEST(ClusterFileCheck, KeysFarFromAnyKnownOneAreOnlyWarnedAbout) {
  // A field of a newer Kubernetes must not stop the extender; a near miss must.
  const Json list = Json::parse(R"({"kind": "List", "items": [
      {"kind": "Node", "metadata": {"name": "n1"}, "spec": {"someFutureField": true}},
      {"kind": "Node", "metadata": {"name": "n2", "lables": {}}}]})");
  const auto problems = standalone::check_cluster_list(list, kube::ResourceNames{});
  ASSERT_EQ(problems.size(), 2u);
  EXPECT_FALSE(problems[0].fatal);
  EXPECT_EQ(problems[0].path, (std::vector<std::string>{"items", "0", "spec", "someFutureField"}));
  EXPECT_TRUE(problems[1].fatal);
  EXPECT_EQ(problems[1].message,
            "Node n2 metadata: unknown key \"lables\" (did you mean \"labels\"?)");
}

TEST(ClusterFileCheck, LineOfFollowsKeysAndIndices) {
  const std::string text = "a:\n  b:\n  - x\n  - y: 1\n    z: 2\n";
  EXPECT_EQ(standalone::line_of(text, {"a", "b", "1", "z"}), 5);
  EXPECT_EQ(standalone::line_of(text, {"a", "b", "0"}), 3);
  EXPECT_EQ(standalone::line_of(text, {"a", "missing"}), 1);  // the deepest part found
  EXPECT_EQ(standalone::line_of("{unclosed", {"a"}), 0);
}

}  // namespace
}  // namespace gpushare::testing
