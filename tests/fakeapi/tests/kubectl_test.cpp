// The real kubectl against the fake: discovery, list, annotate, patch (merge, strategic,
// json), watch, create (protobuf included), apply with server-side validation, server-side
// tables and graceful delete. Skipped when kubectl is not on PATH.
//
// kubectl only sends a bearer token over TLS (clientcmd ignores credentials for http://), so
// these tests run the fake with TLS and token auth, the way a real cluster is reached.

#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <sstream>

#include "fakeapi/fake_apiserver.h"
#include "test_helpers.h"

namespace gpushare::testing {
namespace {

using namespace fakeapi_test;
using namespace std::chrono_literals;

constexpr const char* kToken = "kubectl-token";

std::vector<Json> json_values(std::string_view text) {
  JsonValueSplitter splitter;
  return splitter.feed(text);
}

class KubectlTest : public ::testing::Test {
 protected:
  void SetUp() override {
    kubectl_ = find_on_path("kubectl");
    if (kubectl_.empty()) GTEST_SKIP() << "kubectl is not on PATH";
    FakeApiServer::Options options;
    options.tls = true;
    options.accepted_tokens = std::set<std::string>{kToken};
    server_.emplace(options);
    server_->write_kubeconfig(dir_.path() / "kubeconfig", kToken, "default");

    Json p1 = make_pod("ns1", "p1", "n1", "Running");
    p1["metadata"]["annotations"] = {{"a", "1"}};
    p1["spec"]["containers"].push_back({{"name", "sidecar"}, {"image", "envoy"}});
    server_->create(Resource::Pods, p1);
    server_->create(Resource::Pods, make_pod("ns2", "p2"));
    server_->create(Resource::Nodes, make_node("n1"));
  }

  std::vector<std::string> command(const std::vector<std::string>& args,
                                   const std::string& kubeconfig = "kubeconfig") const {
    std::vector<std::string> argv = {
        kubectl_, "--kubeconfig=" + (dir_.path() / kubeconfig).string(),
        "--cache-dir=" + (dir_.path() / "cache").string(), "--request-timeout=30s"};
    argv.insert(argv.end(), args.begin(), args.end());
    return argv;
  }

  RunResult kubectl(const std::vector<std::string>& args) const {
    RunResult result = run_process(command(args));
    EXPECT_TRUE(result.exit_code.has_value()) << "kubectl timed out";
    return result;
  }

  Json pod(std::string_view ns, std::string_view name) const {
    return server_->get(Resource::Pods, ns, name).value();
  }

  FakeApiServer& server() { return *server_; }

  std::string kubectl_;
  TempDir dir_;
  std::optional<FakeApiServer> server_;
};

TEST_F(KubectlTest, GetPodsInAllNamespacesAsJson) {
  const RunResult result = kubectl({"get", "pods", "-A", "-o", "json"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const Json list = Json::parse(result.out);
  ASSERT_EQ(list["items"].size(), 2u);
  EXPECT_EQ(list["items"][0]["metadata"]["name"], "p1");
  EXPECT_EQ(list["items"][0]["metadata"]["namespace"], "ns1");
  EXPECT_EQ(list["items"][0]["spec"]["nodeName"], "n1");
  EXPECT_EQ(list["items"][1]["metadata"]["name"], "p2");
  EXPECT_EQ(list["items"][1]["status"]["phase"], "Pending");

  // kubectl discovered the API, then listed pods in pages of 500 with the token.
  EXPECT_GE(server().request_count(Verb::Discovery), 1u);
  bool listed = false;
  for (const RequestRecord& record : server().requests()) {
    EXPECT_EQ(record.authorization, std::string("Bearer ") + kToken) << record.path;
    if (record.verb == Verb::List && record.path == "/api/v1/pods") {
      listed = true;
      EXPECT_EQ(record.params.at("limit"), "500");
    }
  }
  EXPECT_TRUE(listed);
}

TEST_F(KubectlTest, WrongTokenIsRefused) {
  server().write_kubeconfig(dir_.path() / "bad-kubeconfig", "not-the-token");
  const RunResult result = run_process(command({"get", "pods", "-A"}, "bad-kubeconfig"));
  ASSERT_TRUE(result.exit_code);
  EXPECT_NE(*result.exit_code, 0);
  EXPECT_NE(result.err.find("You must be logged in to the server"), std::string::npos)
      << result.err;
}

TEST_F(KubectlTest, TokenRotationTakesEffect) {
  server().set_accepted_tokens({"rotated"});
  EXPECT_NE(kubectl({"get", "nodes"}).exit_code, 0);
  server().write_kubeconfig(dir_.path() / "kubeconfig", "rotated");
  const RunResult result = kubectl({"get", "nodes", "-o", "json"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(Json::parse(result.out)["items"][0]["metadata"]["name"], "n1");
}

TEST_F(KubectlTest, AnnotateAddsAndRemovesAnnotations) {
  RunResult result = kubectl({"annotate", "pod", "p1", "-n", "ns1", "ALIYUN_COM_GPU_MEM_IDX=1"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_NE(result.out.find("pod/p1 annotated"), std::string::npos);
  EXPECT_EQ(pod("ns1", "p1")["metadata"]["annotations"],
            Json({{"a", "1"}, {"ALIYUN_COM_GPU_MEM_IDX", "1"}}));
  const std::vector<RequestRecord> records = server().requests();
  ASSERT_FALSE(records.empty());
  EXPECT_EQ(records.back().verb, Verb::Patch);
  EXPECT_EQ(records.back().content_type, "application/merge-patch+json");

  result = kubectl({"annotate", "pod", "p1", "-n", "ns1", "a-"});  // "key-" removes (null)
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(pod("ns1", "p1")["metadata"]["annotations"], Json({{"ALIYUN_COM_GPU_MEM_IDX", "1"}}));
}

TEST_F(KubectlTest, MergePatchDeletesWithNull) {
  const RunResult result = kubectl({"patch", "pod", "p1", "-n", "ns1", "--type", "merge", "-p",
                                    R"({"metadata":{"annotations":{"a":null,"b":"2"}}})"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(pod("ns1", "p1")["metadata"]["annotations"], Json({{"b", "2"}}));
  EXPECT_EQ(server().requests().back().content_type, "application/merge-patch+json");
}

TEST_F(KubectlTest, DefaultStrategicPatchMergesContainersByName) {
  const RunResult result =
      kubectl({"patch", "pod", "p1", "-n", "ns1", "-p",
               R"({"spec":{"containers":[{"name":"main","image":"busybox:2"}]}})"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(server().requests().back().content_type, "application/strategic-merge-patch+json");
  const Json containers = pod("ns1", "p1")["spec"]["containers"];
  ASSERT_EQ(containers.size(), 2u);
  EXPECT_EQ(containers[0]["image"], "busybox:2");
  EXPECT_EQ(containers[1]["name"], "sidecar");
}

TEST_F(KubectlTest, PatchThatMovesABoundPodIsRejected) {
  const RunResult result =
      kubectl({"patch", "pod", "p1", "-n", "ns1", "-p", R"({"spec":{"nodeName":"n2"}})"});
  ASSERT_TRUE(result.exit_code);
  EXPECT_NE(*result.exit_code, 0);
  EXPECT_NE(result.err.find("is invalid"), std::string::npos) << result.err;
  EXPECT_EQ(pod("ns1", "p1")["spec"]["nodeName"], "n1");
}

TEST_F(KubectlTest, JsonPatch) {
  const RunResult result =
      kubectl({"patch", "pod", "p1", "-n", "ns1", "--type", "json", "-p",
               R"([{"op":"add","path":"/metadata/labels","value":{"app":"gpu"}}])"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(pod("ns1", "p1")["metadata"]["labels"], Json({{"app", "gpu"}}));
  EXPECT_EQ(server().requests().back().content_type, "application/json-patch+json");
}

TEST_F(KubectlTest, CreateFromAFileSendsJson) {
  // `kubectl create -f` goes through the dynamic client, which sends JSON.
  const auto manifest = dir_.path() / "cm.json";
  std::ofstream(manifest)
      << make_configmap("kube-system", "unhealthy-gpu-n1", {{"gpus", "0,2"}}).dump();
  const RunResult result = kubectl({"create", "-f", manifest.string()});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const auto cm = server().get(Resource::ConfigMaps, "kube-system", "unhealthy-gpu-n1");
  ASSERT_TRUE(cm);
  EXPECT_EQ((*cm)["data"]["gpus"], "0,2");
  EXPECT_EQ(server().requests().back().content_type, "application/json");
}

TEST_F(KubectlTest, CreateConfigmapSendsProtobufWhichIsRead) {
  // The typed `kubectl create configmap` sends protobuf, and client-go does not fall back to JSON
  // for it: the fake reads it, as a real server does.
  const RunResult result = kubectl({"create", "configmap", "unhealthy-gpu-n1", "-n", "kube-system",
                                    "--from-literal=gpus=0,2", "--from-literal=note=a b"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_NE(result.out.find("configmap/unhealthy-gpu-n1 created"), std::string::npos) << result.out;
  const auto cm = server().get(Resource::ConfigMaps, "kube-system", "unhealthy-gpu-n1");
  ASSERT_TRUE(cm);
  EXPECT_EQ((*cm)["data"], Json({{"gpus", "0,2"}, {"note", "a b"}}));
  // Nothing but what kubectl set: no empty strings or zeros for the fields it left unset.
  EXPECT_FALSE((*cm)["metadata"].contains("generateName")) << cm->dump();
  EXPECT_FALSE((*cm)["metadata"].contains("generation")) << cm->dump();
  bool protobuf = false;
  for (const RequestRecord& record : server().requests()) {
    if (record.verb == Verb::Create)
      protobuf = record.content_type == "application/vnd.kubernetes.protobuf";
  }
  EXPECT_TRUE(protobuf);
  // And it reads back as kubectl wrote it.
  const RunResult get = kubectl(
      {"get", "configmap", "unhealthy-gpu-n1", "-n", "kube-system", "-o", "jsonpath={.data.gpus}"});
  ASSERT_EQ(get.exit_code, 0) << get.err;
  EXPECT_EQ(get.out, "0,2");
}

TEST_F(KubectlTest, ApplyIsValidatedByTheServer) {
  // kubectl's default --validate=strict: the fake's OpenAPI v3 says it takes fieldValidation, so
  // kubectl leaves the check to it; a misspelt field is refused with the real server's message.
  const auto good = dir_.path() / "pod.yaml";
  std::ofstream(good)
      << "apiVersion: v1\nkind: Pod\nmetadata:\n  name: gpu-pod\n  namespace: ns1\nspec:\n"
         "  containers:\n  - name: app\n    image: busybox\n    resources:\n      limits:\n"
         "        aliyun.com/gpu-mem: 4\n";
  RunResult result = kubectl({"apply", "-f", good.string()});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_NE(result.out.find("pod/gpu-pod created"), std::string::npos) << result.out;
  ASSERT_TRUE(server().get(Resource::Pods, "ns1", "gpu-pod"));
  std::string validation;
  for (const RequestRecord& record : server().requests()) {
    if (record.verb == Verb::Create && record.params.count("fieldValidation"))
      validation = record.params.at("fieldValidation");
  }
  EXPECT_EQ(validation, "Strict");

  const auto typo = dir_.path() / "typo.yaml";
  std::ofstream(typo)
      << "apiVersion: v1\nkind: Pod\nmetadata:\n  name: typo\n  namespace: ns1\nspec:\n"
         "  containers:\n  - name: app\n    image: busybox\n    resourcs:\n      limits:\n"
         "        aliyun.com/gpu-mem: 4\n";
  result = kubectl({"apply", "-f", typo.string()});
  ASSERT_TRUE(result.exit_code);
  EXPECT_NE(*result.exit_code, 0);
  EXPECT_NE(result.err.find("strict decoding error: unknown field \"spec.containers[0].resourcs\""),
            std::string::npos)
      << result.err;
  EXPECT_FALSE(server().get(Resource::Pods, "ns1", "typo"));

  // --validate=warn: created, with the server's warning.
  result = kubectl({"apply", "--validate=warn", "-f", typo.string()});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_NE(result.err.find("Warning: unknown field \"spec.containers[0].resourcs\""),
            std::string::npos)
      << result.err;

  // A second apply computes a patch (a pod's spec is immutable: a label); validated too.
  std::string text;
  {
    std::ifstream in(good);
    text.assign(std::istreambuf_iterator<char>(in), {});
  }
  const std::string ns_line = "  namespace: ns1\n";
  const auto with_label =
      text.replace(text.find(ns_line), ns_line.size(), ns_line + "  labels:\n    team: ml\n");
  std::ofstream(good, std::ios::trunc) << with_label;
  result = kubectl({"apply", "-f", good.string()});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(pod("ns1", "gpu-pod")["metadata"]["labels"]["team"], "ml");
  EXPECT_EQ(server().requests().back().params.at("fieldValidation"), "Strict");
}

TEST_F(KubectlTest, GetPrintsTheServersTable) {
  server().mutate(Resource::Pods, "ns1", "p1", [](Json& pod) {
    pod["status"]["podIP"] = "10.1.2.3";
    pod["status"]["containerStatuses"] =
        Json::array({{{"name", "main"},
                      {"ready", true},
                      {"restartCount", 2},
                      {"state", {{"running", Json::object()}}}},
                     {{"name", "sidecar"},
                      {"ready", false},
                      {"restartCount", 1},
                      {"state", {{"waiting", {{"reason", "CrashLoopBackOff"}}}}}}});
  });
  RunResult result = kubectl({"get", "pods", "-A"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  std::istringstream lines(result.out);
  std::string header, first, second;
  std::getline(lines, header);
  std::getline(lines, first);
  std::getline(lines, second);
  auto words = [](const std::string& line) {
    std::istringstream in(line);
    std::vector<std::string> out;
    for (std::string word; in >> word;) out.push_back(word);
    return out;
  };
  EXPECT_EQ(words(header),
            (std::vector<std::string>{"NAMESPACE", "NAME", "READY", "STATUS", "RESTARTS", "AGE"}));
  const auto p1 = words(first);
  ASSERT_EQ(p1.size(), 6u) << result.out;
  EXPECT_EQ((std::vector<std::string>(p1.begin(), p1.end() - 1)),
            (std::vector<std::string>{"ns1", "p1", "1/2", "CrashLoopBackOff", "3"}));
  EXPECT_EQ(words(second).at(3), "Pending") << result.out;

  result = kubectl({"get", "pods", "-n", "ns1", "-o", "wide"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_NE(result.out.find("IP"), std::string::npos);
  EXPECT_NE(result.out.find("NOMINATED NODE"), std::string::npos) << result.out;
  EXPECT_NE(result.out.find("10.1.2.3"), std::string::npos) << result.out;

  server().mutate(Resource::Nodes, "", "n1", [](Json& node) {
    node["metadata"]["labels"]["node-role.kubernetes.io/gpu"] = "";
    node["spec"]["unschedulable"] = true;
    node["status"]["conditions"] = Json::array({{{"type", "Ready"}, {"status", "True"}}});
    node["status"]["nodeInfo"] = {{"kubeletVersion", "v1.32.4"}};
  });
  result = kubectl({"get", "nodes"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  std::istringstream node_lines(result.out);
  std::getline(node_lines, header);
  std::getline(node_lines, first);
  EXPECT_EQ(words(header), (std::vector<std::string>{"NAME", "STATUS", "ROLES", "AGE", "VERSION"}));
  const auto n1 = words(first);
  ASSERT_EQ(n1.size(), 5u) << result.out;
  EXPECT_EQ(n1[1], "Ready,SchedulingDisabled");
  EXPECT_EQ(n1[2], "gpu");
  EXPECT_EQ(n1[4], "v1.32.4");
}

TEST_F(KubectlTest, WatchWithoutAnOutputFormatPrintsTableRows) {
  Subprocess watch(command({"get", "pods", "-n", "ns1", "-w"}));
  ASSERT_TRUE(watch.wait_for_stdout(
      [](std::string_view out) { return out.find("READY") != std::string_view::npos; }, 30s))
      << watch.stderr_text();
  ASSERT_TRUE(server().wait_for_request_count(Verb::Watch, Resource::Pods, 1, 30s));
  server().mutate(Resource::Pods, "ns1", "p1",
                  [](Json& pod) { pod["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"; });
  ASSERT_TRUE(watch.wait_for_stdout(
      [](std::string_view out) { return out.find("Terminating") != std::string_view::npos; }, 30s))
      << watch.stdout_text() << watch.stderr_text();
  watch.kill();
  watch.wait_exit(10s);
  watch.join_readers();
  EXPECT_EQ(watch.stdout_text().find("READY"), watch.stdout_text().rfind("READY")) << "one header";
}

TEST_F(KubectlTest, WatchPrintsChangesAsTheyHappen) {
  Subprocess watch(command({"get", "pods", "-n", "ns1", "-w", "-o", "json"}));
  // The initial list comes first...
  ASSERT_TRUE(watch.wait_for_stdout(
      [](std::string_view out) { return out.find("\"p1\"") != std::string_view::npos; }, 30s))
      << watch.stderr_text();
  ASSERT_TRUE(server().wait_for_request_count(Verb::Watch, Resource::Pods, 1, 30s));
  // ...then each change the watch delivers.
  server().mutate(Resource::Pods, "ns1", "p1",
                  [](Json& pod) { pod["metadata"]["annotations"]["watched"] = "yes"; });
  // kubectl writes an object in several pieces: wait for the whole second one.
  ASSERT_TRUE(
      watch.wait_for_stdout([](std::string_view out) { return json_values(out).size() >= 2; }, 30s))
      << watch.stderr_text();
  watch.kill();
  watch.wait_exit(10s);
  watch.join_readers();

  const std::vector<Json> printed = json_values(watch.stdout_text());
  ASSERT_GE(printed.size(), 2u) << watch.stdout_text();
  EXPECT_EQ(printed.front()["metadata"]["name"], "p1");
  EXPECT_FALSE(printed.front()["metadata"]["annotations"].contains("watched"));
  EXPECT_EQ(printed.back()["metadata"]["annotations"]["watched"], "yes");

  // It watched from the list's resourceVersion, not from scratch.
  for (const RequestRecord& record : server().requests()) {
    if (record.verb == Verb::Watch) {
      EXPECT_EQ(record.path, "/api/v1/namespaces/ns1/pods");
      EXPECT_FALSE(record.params.at("resourceVersion").empty());
      EXPECT_NE(record.params.at("resourceVersion"), "0");
    }
  }
}

TEST_F(KubectlTest, WatchEventsSurviveSplitChunks) {
  server().set_watch_framing(WatchFraming::SplitAndCoalesce);
  Subprocess watch(command({"get", "pods", "-A", "-w", "-o", "json", "--output-watch-events"}));
  ASSERT_TRUE(server().wait_for_request_count(Verb::Watch, Resource::Pods, 1, 30s))
      << watch.stderr_text();
  server().create(Resource::Pods, make_pod("ns1", "p3"));
  server().remove(Resource::Pods, "ns2", "p2");
  ASSERT_TRUE(watch.wait_for_stdout(
      [](std::string_view out) {
        const std::vector<Json> events = json_values(out);
        return !events.empty() && events.back()["type"] == "DELETED";
      },
      30s))
      << watch.stderr_text();
  watch.kill();
  watch.wait_exit(10s);
  watch.join_readers();

  std::vector<std::string> seen;
  for (const Json& event : json_values(watch.stdout_text())) {
    seen.push_back(event["type"].get<std::string>() + " " +
                   event["object"]["metadata"]["name"].get<std::string>());
  }
  EXPECT_EQ(seen, (std::vector<std::string>{"ADDED p1", "ADDED p2", "ADDED p3", "DELETED p2"}));
}

TEST_F(KubectlTest, DeleteWaitsForGracefulDeletionToFinish) {
  Subprocess deletion(command({"delete", "pod", "p1", "-n", "ns1"}));
  // The pod is marked first, and kubectl waits (by watching) until it is gone.
  const auto deadline = std::chrono::steady_clock::now() + 30s;
  while (!pod("ns1", "p1")["metadata"].contains("deletionTimestamp") &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(20ms);
  }
  ASSERT_TRUE(pod("ns1", "p1")["metadata"].contains("deletionTimestamp")) << deletion.stderr_text();
  EXPECT_EQ(pod("ns1", "p1")["metadata"]["deletionGracePeriodSeconds"], 30);
  EXPECT_FALSE(deletion.wait_exit(300ms).has_value()) << "kubectl returned before the pod was gone";
  ASSERT_TRUE(server().wait_for_request_count(Verb::Watch, Resource::Pods, 1, 30s));
  server().finalize_pod_deletion("ns1", "p1");
  EXPECT_EQ(deletion.wait_exit(30s), 0) << deletion.stderr_text();
  deletion.join_readers();
  EXPECT_NE(deletion.stdout_text().find("pod \"p1\" deleted"), std::string::npos)
      << deletion.stdout_text();
}

TEST(KubectlPlainHttp, WorksWithoutAuthentication) {
  const std::string kubectl = find_on_path("kubectl");
  if (kubectl.empty()) GTEST_SKIP() << "kubectl is not on PATH";
  FakeApiServer server;
  server.create(Resource::Nodes, make_node("gpu-node"));
  TempDir dir;
  server.write_kubeconfig(dir.path() / "kubeconfig");
  const RunResult result =
      run_process({kubectl, "--kubeconfig=" + (dir.path() / "kubeconfig").string(),
                   "--cache-dir=" + (dir.path() / "cache").string(), "get", "nodes", "-o", "json"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(Json::parse(result.out)["items"][0]["metadata"]["name"], "gpu-node");
}

}  // namespace
}  // namespace gpushare::testing
