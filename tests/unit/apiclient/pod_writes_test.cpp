#include "gpushare/apiclient/pod_writes.h"

#include <gtest/gtest.h>

#include "test_util.h"

namespace gpushare::apiclient {
namespace {

using testing::TestServer;

struct Seen {
  std::mutex mutex;
  std::vector<std::string> lines;  // "METHOD path content-type"
  std::vector<nlohmann::json> bodies;
  void record(const httplib::Request& req) {
    std::lock_guard lock(mutex);
    lines.push_back(req.method + " " + req.path + " " + req.get_header_value("Content-Type"));
    bodies.push_back(nlohmann::json::parse(req.body));
  }
};

ClusterConfig config_for(const TestServer& server) {
  ClusterConfig config;
  config.server = server.url();
  return config;
}

TEST(BindPod, PostsTheBindingBodyOfTheProtocol) {
  TestServer server;
  Seen seen;
  server.http().Post("/api/v1/namespaces/ns1/pods/p1/binding", [&](const httplib::Request& req,
                                                                   httplib::Response& res) {
    seen.record(req);
    res.status = 201;
    res.set_content(
        R"({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Success","code":201})",
        "application/json");
  });
  server.start();
  ApiClient client(config_for(server), testing::fast_client_options());
  auto result = bind_pod(client, "ns1", "p1", "uid-1", "node-1", {{"ALIYUN_COM_GPU_MEM_IDX", "0"}});
  ASSERT_TRUE(result.ok()) << result.error().describe();
  EXPECT_EQ(result.value()["status"], "Success");

  const auto expected = nlohmann::json::parse(R"({"apiVersion":"v1","kind":"Binding",
    "metadata":{"name":"p1","namespace":"ns1","uid":"uid-1","annotations":{"ALIYUN_COM_GPU_MEM_IDX":"0"}},
    "target":{"apiVersion":"v1","kind":"Node","name":"node-1"}})");
  std::lock_guard lock(seen.mutex);
  ASSERT_EQ(seen.lines.size(), 1u);
  EXPECT_EQ(seen.lines[0], "POST /api/v1/namespaces/ns1/pods/p1/binding application/json");
  EXPECT_EQ(seen.bodies[0], expected);
}

TEST(BindPod, BodyWithoutUidOrAnnotationsOmitsThem) {
  const auto body = binding_body("ns", "p", "", "n", {});
  EXPECT_EQ(body["metadata"], (nlohmann::json{{"name", "p"}, {"namespace", "ns"}}));
}

TEST(BindPod, ConflictIsReturnedNotRetried) {
  TestServer server;
  std::atomic<int> calls{0};
  server.http().Post("/api/v1/namespaces/ns1/pods/p1/binding", [&](const httplib::Request&,
                                                                   httplib::Response& res) {
    ++calls;
    res.status = 409;
    res.set_content(testing::status_body(409, "Conflict",
                                         "Operation cannot be fulfilled on pods/binding \"p1\": "
                                         "pod p1 is already assigned to node \"n0\"",
                                         {{"name", "p1"}, {"kind", "pods/binding"}}),
                    "application/json");
  });
  server.start();
  ApiClient client(config_for(server), testing::fast_client_options());
  auto result = bind_pod(client, "ns1", "p1", "uid-1", "node-1", {});
  ASSERT_FALSE(result.ok());
  EXPECT_TRUE(result.error().is_conflict());
  EXPECT_EQ(result.error().details.kind, "pods/binding");
  EXPECT_EQ(calls.load(), 1);
}

TEST(PatchPodAnnotations, StrategicMergeWithOptionalResourceVersion) {
  TestServer server;
  Seen seen;
  server.http().Patch(
      "/api/v1/namespaces/ns1/pods/p1", [&](const httplib::Request& req, httplib::Response& res) {
        seen.record(req);
        res.set_content(R"({"kind":"Pod","metadata":{"name":"p1","resourceVersion":"8"}})",
                        "application/json");
      });
  server.start();
  ApiClient client(config_for(server), testing::fast_client_options());

  auto first = patch_pod_annotations(
      client, "ns1", "p1",
      std::map<std::string, std::string>{{"ALIYUN_COM_GPU_MEM_IDX", "1"},
                                         {"ALIYUN_COM_GPU_MEM_ASSIGNED", "false"}},
      "7");
  ASSERT_TRUE(first.ok()) << first.error().describe();
  EXPECT_EQ(resource_version_of(first.value()), "8");

  auto second = patch_pod_annotations(
      client, "ns1", "p1",
      std::map<std::string, std::optional<std::string>>{{"ALIYUN_COM_GPU_MEM_IDX", std::nullopt}});
  ASSERT_TRUE(second.ok());

  std::lock_guard lock(seen.mutex);
  ASSERT_EQ(seen.lines.size(), 2u);
  EXPECT_EQ(seen.lines[0],
            "PATCH /api/v1/namespaces/ns1/pods/p1 application/strategic-merge-patch+json");
  EXPECT_EQ(seen.bodies[0], nlohmann::json::parse(R"({"metadata":{"annotations":{
      "ALIYUN_COM_GPU_MEM_IDX":"1","ALIYUN_COM_GPU_MEM_ASSIGNED":"false"},"resourceVersion":"7"}})"));
  EXPECT_EQ(seen.bodies[1], nlohmann::json::parse(
                                R"({"metadata":{"annotations":{"ALIYUN_COM_GPU_MEM_IDX":null}}})"));
}

TEST(PatchPodAnnotations, StaleResourceVersionIsAConflict) {
  TestServer server;
  server.http().Patch("/api/v1/namespaces/ns1/pods/p1", [&](const httplib::Request&,
                                                            httplib::Response& res) {
    res.status = 409;
    res.set_content(testing::status_body(
                        409, "Conflict",
                        "Operation cannot be fulfilled on pods \"p1\": the object has been "
                        "modified; please apply your changes to the latest version and try again",
                        {{"name", "p1"}, {"kind", "pods"}}),
                    "application/json");
  });
  server.start();
  ApiClient client(config_for(server), testing::fast_client_options());
  auto result = patch_pod_annotations(client, "ns1", "p1",
                                      std::map<std::string, std::string>{{"k", "v"}}, "3");
  ASSERT_FALSE(result.ok());
  EXPECT_TRUE(result.error().is_conflict());
}

}  // namespace
}  // namespace gpushare::apiclient
