// PATCH (strategic, merge, JSON patch), PUT, the status subresource, leases and graceful
// pod deletion (protocol-reference §3 and §6 items 8, 9).

#include <gtest/gtest.h>

#include "fakeapi/fake_apiserver.h"
#include "test_helpers.h"

namespace gpushare::testing {
namespace {

using namespace fakeapi_test;

constexpr const char* kPodPath = "/api/v1/namespaces/ns/pods/p1";
constexpr const char* kStrategic = "application/strategic-merge-patch+json";
constexpr const char* kMerge = "application/merge-patch+json";
constexpr const char* kJsonPatch = "application/json-patch+json";

class WritesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Json pod = make_pod("ns", "p1", "n1", "Running");
    pod["metadata"]["annotations"] = {{"a", "1"}, {"b", "2"}};
    pod["spec"]["containers"].push_back({{"name", "sidecar"}, {"image", "envoy"}});
    created = server.create(Resource::Pods, pod);
  }
  std::string rv_of(const Json& object) { return object["metadata"]["resourceVersion"]; }
  FakeApiServer server;
  ApiClient client{server};
  Json created;
};

TEST_F(WritesTest, StrategicAndMergePatchMergeMapsAndNullDeletes) {
  for (const char* type : {kStrategic, kMerge}) {
    SCOPED_TRACE(type);
    const Reply reply =
        client.patch(kPodPath, R"({"metadata":{"annotations":{"a":null,"c":"3"}}})", type);
    ASSERT_EQ(reply.status, 200) << reply.body;
    EXPECT_EQ(reply.json["kind"], "Pod");
    EXPECT_EQ(reply.json["metadata"]["annotations"], Json({{"b", "2"}, {"c", "3"}}));
    client.patch(kPodPath, R"({"metadata":{"annotations":{"a":"1","c":null}}})", type);
  }
}

TEST_F(WritesTest, StrategicPatchMergesListsByKeyWhereMergePatchReplaces) {
  const Reply strategic = client.patch(
      kPodPath, R"({"spec":{"containers":[{"name":"main","image":"busybox:2"}]}})", kStrategic);
  ASSERT_EQ(strategic.status, 200) << strategic.body;
  ASSERT_EQ(strategic.json["spec"]["containers"].size(), 2u);
  EXPECT_EQ(strategic.json["spec"]["containers"][0]["image"], "busybox:2");
  EXPECT_EQ(strategic.json["spec"]["containers"][1]["name"], "sidecar");

  // A merge patch replaces the list, which here would drop a container: not allowed for pods.
  const Reply merge =
      client.patch(kPodPath, R"({"spec":{"containers":[{"name":"main","image":"x"}]}})", kMerge);
  EXPECT_EQ(merge.status, 422);

  // Finalizers merge as a set; tolerations have no merge key, so the list is replaced.
  server.mutate(Resource::Pods, "ns", "p1", [](Json& pod) {
    pod["metadata"]["finalizers"] = {"a/b"};
    pod["spec"]["tolerations"] = Json::array({{{"key", "old"}, {"operator", "Exists"}}});
  });
  const Reply lists = client.patch(
      kPodPath,
      R"({"metadata":{"finalizers":["x/y","a/b"]},"spec":{"tolerations":[{"key":"k","operator":"Exists"}]}})",
      kStrategic);
  ASSERT_EQ(lists.status, 200) << lists.body;
  EXPECT_EQ(lists.json["metadata"]["finalizers"], Json({"a/b", "x/y"}));
  EXPECT_EQ(lists.json["spec"]["tolerations"],
            Json::array({{{"key", "k"}, {"operator", "Exists"}}}));
}

TEST_F(WritesTest, StrategicPatchDirectives) {
  Json node = make_node("n1");
  node["spec"]["taints"] = Json::array(
      {{{"key", "a"}, {"effect", "NoSchedule"}}, {{"key", "b"}, {"effect", "NoSchedule"}}});
  server.create(Resource::Nodes, node);
  const Reply reply = client.patch(
      "/api/v1/nodes/n1",
      R"({"spec":{"taints":[{"key":"a","$patch":"delete"},{"key":"c","effect":"NoExecute"}],"$setElementOrder/taints":[{"key":"b"},{"key":"c"}]}})",
      kStrategic);
  ASSERT_EQ(reply.status, 200) << reply.body;
  EXPECT_EQ(reply.json["spec"]["taints"], Json::array({{{"key", "b"}, {"effect", "NoSchedule"}},
                                                       {{"key", "c"}, {"effect", "NoExecute"}}}));
  EXPECT_FALSE(reply.json["spec"].contains("$setElementOrder/taints"));
}

TEST_F(WritesTest, JsonPatchWithEscapedKeys) {
  const Reply reply = client.patch(
      kPodPath,
      R"([{"op":"add","path":"/metadata/annotations/aliyun.com~1gpu-mem","value":"4"},{"op":"remove","path":"/metadata/annotations/a"}])",
      kJsonPatch);
  ASSERT_EQ(reply.status, 200) << reply.body;
  EXPECT_EQ(reply.json["metadata"]["annotations"], Json({{"aliyun.com/gpu-mem", "4"}, {"b", "2"}}));

  const Reply failed_test = client.patch(
      kPodPath, R"([{"op":"test","path":"/metadata/annotations/b","value":"nope"}])", kJsonPatch);
  EXPECT_EQ(failed_test.status, 422);
  EXPECT_EQ(client.patch(kPodPath, R"({"not":"a list"})", kJsonPatch).status, 400);
  EXPECT_EQ(client.patch(kPodPath, "{not json", kMerge).status, 400);
}

TEST_F(WritesTest, OtherPatchTypesAre415) {
  for (const char* type : {"application/json", "application/apply-patch+yaml", "text/plain"}) {
    const Reply reply = client.patch(kPodPath, R"({"metadata":{}})", type);
    EXPECT_EQ(reply.status, 415) << type;
    EXPECT_EQ(reply.json["reason"], "UnsupportedMediaType");
  }
}

TEST_F(WritesTest, StaleResourceVersionInAPatchIs409) {
  const std::string stale = rv_of(created);
  server.mutate(Resource::Pods, "ns", "p1",
                [](Json& pod) { pod["metadata"]["labels"]["x"] = "y"; });
  const Reply reply = client.patch(
      kPodPath, R"({"metadata":{"resourceVersion":")" + stale + R"(","annotations":{"k":"v"}}})",
      kStrategic);
  EXPECT_EQ(reply.status, 409);
  EXPECT_EQ(reply.json["reason"], "Conflict");
  EXPECT_EQ(reply.json["details"], Json({{"name", "p1"}, {"kind", "pods"}}));
  EXPECT_EQ(
      reply.json["message"],
      "Operation cannot be fulfilled on pods \"p1\": the object has been modified; please apply "
      "your changes to the latest version and try again");
  const std::string current = server.resource_version();
  EXPECT_EQ(
      client
          .patch(kPodPath,
                 R"({"metadata":{"resourceVersion":")" + current + R"(","annotations":{"k":"v"}}})",
                 kStrategic)
          .status,
      200);
}

TEST_F(WritesTest, ChangingTheNodeOfABoundPodIs422) {
  const Reply reply = client.patch(kPodPath, R"({"spec":{"nodeName":"n2"}})", kStrategic);
  EXPECT_EQ(reply.status, 422);
  EXPECT_EQ(reply.json["reason"], "Invalid");
  EXPECT_EQ(reply.json["details"]["kind"], "Pod");
  EXPECT_EQ(reply.json["details"]["causes"][0]["field"], "spec");
  EXPECT_EQ(reply.json["message"].get<std::string>().rfind(
                "Pod \"p1\" is invalid: spec: Forbidden: pod updates may not change fields", 0),
            0u);
  EXPECT_EQ(server.get(Resource::Pods, "ns", "p1")->at("spec")["nodeName"], "n1");
}

TEST_F(WritesTest, MainResourceIgnoresStatusAndTheStatusSubresourceOnlyChangesStatus) {
  const Reply main = client.patch(
      kPodPath, R"({"status":{"phase":"Failed"},"metadata":{"labels":{"l":"1"}}})", kMerge);
  ASSERT_EQ(main.status, 200);
  EXPECT_EQ(main.json["status"]["phase"], "Running");
  EXPECT_EQ(main.json["metadata"]["labels"]["l"], "1");

  const Reply status =
      client.patch(std::string(kPodPath) + "/status",
                   R"({"status":{"phase":"Failed"},"metadata":{"labels":{"l":"2"}}})", kMerge);
  ASSERT_EQ(status.status, 200) << status.body;
  EXPECT_EQ(status.json["status"]["phase"], "Failed");
  EXPECT_EQ(status.json["metadata"]["labels"]["l"], "1");
  EXPECT_EQ(client.get(std::string(kPodPath) + "/status").json["status"]["phase"], "Failed");
}

TEST_F(WritesTest, NoOpPatchWritesNothing) {
  const std::string before = server.resource_version();
  WatchStream watch(server.port(), "/api/v1/pods?watch=1&resourceVersion=" + before);
  const Reply reply =
      client.patch(kPodPath, R"({"metadata":{"annotations":{"a":"1"}}})", kStrategic);
  ASSERT_EQ(reply.status, 200);
  EXPECT_EQ(rv_of(reply.json), rv_of(created));
  EXPECT_EQ(server.resource_version(), before);
  EXPECT_TRUE(watch.stays_quiet(std::chrono::milliseconds(200)));
}

TEST_F(WritesTest, PatchProducesOneModifiedWithTheNewResourceVersion) {
  WatchStream watch(server.port(),
                    "/api/v1/pods?watch=1&resourceVersion=" + server.resource_version());
  const Reply reply = client.patch(
      kPodPath, R"({"metadata":{"annotations":{"ALIYUN_COM_GPU_MEM_IDX":"1"}}})", kStrategic);
  auto event = watch.next_event();
  ASSERT_TRUE(event);
  EXPECT_EQ((*event)["type"], "MODIFIED");
  EXPECT_EQ((*event)["object"]["metadata"]["resourceVersion"],
            reply.json["metadata"]["resourceVersion"]);
  EXPECT_GT(std::stoull(rv_of(reply.json)), std::stoull(rv_of(created)));
}

TEST_F(WritesTest, PodsStoredWithoutDefaultsCanStillBePatched) {
  server.create(Resource::Pods, make_pod("ns", "bare"));
  server.mutate(Resource::Pods, "ns", "bare", [](Json& pod) {  // mutate() applies no defaults
    pod["spec"].erase("restartPolicy");
    pod["spec"].erase("terminationGracePeriodSeconds");
  });
  const Reply reply = client.patch("/api/v1/namespaces/ns/pods/bare",
                                   R"({"metadata":{"labels":{"v":"2"}}})", kMerge);
  EXPECT_EQ(reply.status, 200) << reply.body;
  EXPECT_EQ(reply.json["spec"]["restartPolicy"], "Always");
}

TEST_F(WritesTest, PatchOfMissingObjectIs404AndOtherResourcesPatchToo) {
  EXPECT_EQ(client.patch("/api/v1/namespaces/ns/pods/ghost", "{}", kMerge).status, 404);
  server.create(Resource::ConfigMaps, make_configmap("kube-system", "cm", {{"gpus", "0"}}));
  const Reply cm = client.patch("/api/v1/namespaces/kube-system/configmaps/cm",
                                R"({"data":{"gpus":"0,1"}})", kStrategic);
  EXPECT_EQ(cm.json["data"]["gpus"], "0,1");
  server.create(Resource::Nodes, make_node("n9"));
  const Reply node =
      client.patch("/api/v1/nodes/n9", R"({"metadata":{"labels":{"gpu":"yes"}}})", kMerge);
  EXPECT_EQ(node.json["metadata"]["labels"]["gpu"], "yes");
}

TEST_F(WritesTest, PutChecksTheResourceVersionAndTheName) {
  Json pod = created;
  pod["metadata"]["labels"] = {{"v", "1"}};
  const Reply updated = client.put(kPodPath, pod);  // RV matches
  ASSERT_EQ(updated.status, 200) << updated.body;
  EXPECT_GT(std::stoull(rv_of(updated.json)), std::stoull(rv_of(created)));

  pod["metadata"]["labels"] = {{"v", "2"}};
  const Reply stale = client.put(kPodPath, pod);  // still the old RV
  EXPECT_EQ(stale.status, 409);
  EXPECT_EQ(
      stale.json["message"],
      "Operation cannot be fulfilled on pods \"p1\": the object has been modified; please apply "
      "your changes to the latest version and try again");

  pod["metadata"].erase("resourceVersion");  // pods allow unconditional updates
  EXPECT_EQ(client.put(kPodPath, pod).status, 200);
  EXPECT_EQ(server.get(Resource::Pods, "ns", "p1")->at("metadata")["labels"]["v"], "2");

  pod["metadata"]["name"] = "other";
  const Reply renamed = client.put(kPodPath, pod);
  EXPECT_EQ(renamed.status, 400);
  EXPECT_EQ(renamed.json["message"],
            "the name of the object (other) does not match the name on the URL (p1)");
  EXPECT_EQ(client.put("/api/v1/namespaces/ns/pods/ghost", make_pod("ns", "ghost")).status, 404);
}

TEST(Leases, CreateGetAndUpdateWithOptimisticConcurrency) {
  FakeApiServer server;
  ApiClient client(server);
  const std::string collection = "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases";
  const Reply created = client.post(collection, make_lease("", "gpushare-extender", "replica-a"));
  ASSERT_EQ(created.status, 201) << created.body;
  EXPECT_EQ(created.json["apiVersion"], "coordination.k8s.io/v1");
  EXPECT_EQ(client.post(collection, make_lease("kube-system", "gpushare-extender")).json["reason"],
            "AlreadyExists");

  Json lease = client.get(collection + "/gpushare-extender").json;
  lease["spec"]["holderIdentity"] = "replica-b";
  const Reply taken = client.put(collection + "/gpushare-extender", lease);
  ASSERT_EQ(taken.status, 200);
  EXPECT_EQ(taken.json["spec"]["holderIdentity"], "replica-b");

  // The loser of the race still holds the old RV.
  lease["spec"]["holderIdentity"] = "replica-c";
  const Reply lost = client.put(collection + "/gpushare-extender", lease);
  EXPECT_EQ(lost.status, 409);
  EXPECT_EQ(
      lost.json["details"],
      Json({{"name", "gpushare-extender"}, {"group", "coordination.k8s.io"}, {"kind", "leases"}}));
  EXPECT_EQ(
      lost.json["message"].get<std::string>().rfind(
          "Operation cannot be fulfilled on leases.coordination.k8s.io \"gpushare-extender\"", 0),
      0u);

  lease["metadata"].erase("resourceVersion");  // leases need an RV on update
  EXPECT_EQ(client.put(collection + "/gpushare-extender", lease).status, 422);
  const Reply missing = client.get(collection + "/nope");
  EXPECT_EQ(missing.json["message"], "leases.coordination.k8s.io \"nope\" not found");
}

// --- Graceful deletion ---------------------------------------------------------------------

TEST(GracefulDeletion, UnboundPodIsDeletedAtOnce) {
  FakeApiServer server;
  server.create(Resource::Pods, make_pod("ns", "pending"));
  WatchStream watch(server.port(),
                    "/api/v1/pods?watch=1&resourceVersion=" + server.resource_version());
  const Reply reply = ApiClient(server).del("/api/v1/namespaces/ns/pods/pending");
  ASSERT_EQ(reply.status, 200);
  EXPECT_EQ(reply.json["kind"], "Pod");  // the pod registry returns the object
  auto event = watch.next_event();
  EXPECT_EQ((*event)["type"], "DELETED");
  EXPECT_TRUE(watch.stays_quiet(std::chrono::milliseconds(200)));
  EXPECT_FALSE(server.get(Resource::Pods, "ns", "pending"));
}

TEST(GracefulDeletion, BoundPodIsMarkedFirstAndDeletedWhenFinalised) {
  FakeApiServer server;
  server.create(Resource::Pods, make_pod("ns", "running", "n1", "Running"));
  WatchStream watch(server.port(),
                    "/api/v1/pods?watch=1&resourceVersion=" + server.resource_version());
  ApiClient client(server);
  const Reply reply = client.del("/api/v1/namespaces/ns/pods/running");
  ASSERT_EQ(reply.status, 200);
  EXPECT_TRUE(reply.json["metadata"].contains("deletionTimestamp"));
  EXPECT_EQ(reply.json["metadata"]["deletionGracePeriodSeconds"], 30);

  auto marked = watch.next_event();
  EXPECT_EQ((*marked)["type"], "MODIFIED");
  EXPECT_TRUE((*marked)["object"]["metadata"].contains("deletionTimestamp"));
  EXPECT_EQ(client.get("/api/v1/namespaces/ns/pods/running").status, 200);  // still there
  // Deleting again with a longer grace period changes nothing.
  EXPECT_EQ(client.del("/api/v1/namespaces/ns/pods/running").status, 200);
  EXPECT_TRUE(watch.stays_quiet(std::chrono::milliseconds(200)));

  server.finalize_pod_deletion("ns", "running");
  auto deleted = watch.next_event();
  EXPECT_EQ((*deleted)["type"], "DELETED");
  EXPECT_EQ(client.get("/api/v1/namespaces/ns/pods/running").status, 404);
}

TEST(GracefulDeletion, ZeroGracePeriodDeletesABoundPodAtOnce) {
  FakeApiServer server;
  server.create(Resource::Pods, make_pod("ns", "a", "n1", "Running"));
  server.create(Resource::Pods, make_pod("ns", "b", "n1", "Running"));
  WatchStream watch(server.port(),
                    "/api/v1/pods?watch=1&resourceVersion=" + server.resource_version());
  ApiClient client(server);
  EXPECT_EQ(client.del("/api/v1/namespaces/ns/pods/a?gracePeriodSeconds=0").status, 200);
  EXPECT_EQ((*watch.next_event())["type"], "DELETED");
  EXPECT_EQ(
      client
          .del("/api/v1/namespaces/ns/pods/b", R"({"kind":"DeleteOptions","gracePeriodSeconds":0})")
          .status,
      200);
  EXPECT_EQ((*watch.next_event())["type"], "DELETED");
  EXPECT_TRUE(server.list(Resource::Pods).empty());
}

TEST(GracefulDeletion, PreconditionsAreChecked) {
  FakeApiServer server;
  server.create(Resource::Pods, make_pod("ns", "p"));
  const Reply reply =
      ApiClient(server).del("/api/v1/namespaces/ns/pods/p", R"({"preconditions":{"uid":"other"}})");
  EXPECT_EQ(reply.status, 409);
  EXPECT_NE(reply.json["message"].get<std::string>().find(
                "Precondition failed: UID in precondition: other"),
            std::string::npos);
  EXPECT_TRUE(server.get(Resource::Pods, "ns", "p"));
}

TEST(Seeding, CreateKeepsTheUidTheObjectNamesButAnHttpCreateDoesNot) {
  FakeApiServer server;
  Json seeded = make_pod("ns", "seeded");
  seeded["metadata"]["uid"] = "3f1c2a9e-0000-4000-8000-000000000010";
  EXPECT_EQ(server.create(Resource::Pods, seeded)["metadata"]["uid"],
            "3f1c2a9e-0000-4000-8000-000000000010");
  const Json unnamed = server.create(Resource::Pods, make_pod("ns", "unnamed"));
  EXPECT_EQ(unnamed["metadata"]["uid"].get<std::string>().size(), 36u);

  // Over HTTP the server assigns the UID, as a real one does.
  ApiClient client{server};
  Json posted = make_pod("ns", "posted");
  posted["metadata"]["uid"] = "3f1c2a9e-0000-4000-8000-000000000011";
  const Reply reply = client.post("/api/v1/namespaces/ns/pods", posted);
  ASSERT_EQ(reply.status, 201) << reply.body;
  EXPECT_NE(Json::parse(reply.body)["metadata"]["uid"], "3f1c2a9e-0000-4000-8000-000000000011");
}

TEST(FieldValidation, StrictRefusesUnknownFieldsWarnAndIgnoreStoreThem) {
  FakeApiServer server;
  ApiClient client{server};
  Json pod = make_pod("ns", "p");
  pod["spec"]["containers"][0]["resourcs"] = {{"limits", {{"aliyun.com/gpu-mem", "4"}}}};
  pod["spec"]["nodeSelectr"] = Json::object();
  pod["metadata"]["labels"] = {{"any-key", "is fine"}};
  pod["status"] = {{"anything", "goes"}};  // not checked below the levels the fake knows
  Reply reply = client.post("/api/v1/namespaces/ns/pods?fieldValidation=Strict", pod);
  EXPECT_EQ(reply.status, 400);
  EXPECT_NE(reply.json.value("message", "")
                .find("Pod in version \"v1\" cannot be handled as a Pod: strict decoding error: "
                      "unknown field "
                      "\"spec.containers[0].resourcs\", unknown field \"spec.nodeSelectr\""),
            std::string::npos)
      << reply.body;
  EXPECT_FALSE(server.get(Resource::Pods, "ns", "p"));
  EXPECT_EQ(client.post("/api/v1/namespaces/ns/pods?fieldValidation=Sometimes", pod).status, 400);
  EXPECT_EQ(client.post("/api/v1/namespaces/ns/pods?fieldValidation=Warn", pod).status, 201);

  // A patch is checked too; strategic-merge directives are not fields.
  const char* path = "/api/v1/namespaces/ns/pods/p?fieldValidation=Strict";
  EXPECT_EQ(client.patch(path, R"({"metadata":{"labelz":{"a":"b"}}})", kMerge).status, 400);
  EXPECT_EQ(
      client
          .patch(
              path,
              R"({"spec":{"$setElementOrder/containers":[{"name":"main"}],"containers":[{"name":"main","image":"x"}]}})",
              kStrategic)
          .status,
      200);
  EXPECT_EQ(client.patch(path, R"([{"op":"add","path":"/metadata/labelz","value":{}}])", kJsonPatch)
                .status,
            200);
}

TEST(OpenApi, TheV3DocumentsListFieldValidationOnEachPatch) {
  FakeApiServer server;
  ApiClient client{server};
  const Reply index = client.get("/openapi/v3");
  ASSERT_EQ(index.status, 200);
  const Json paths = Json::parse(index.body)["paths"];
  ASSERT_TRUE(paths.contains("api/v1"));
  const std::string url = paths["api/v1"]["serverRelativeURL"];
  const Reply core = client.get(url);
  ASSERT_EQ(core.status, 200) << url;
  const Json patch =
      Json::parse(core.body)["paths"]["/api/v1/namespaces/{namespace}/pods/{name}"]["patch"];
  EXPECT_EQ(patch["x-kubernetes-group-version-kind"],
            Json({{"group", ""}, {"version", "v1"}, {"kind", "Pod"}}));
  EXPECT_EQ(patch["parameters"][0]["name"], "fieldValidation");
  EXPECT_EQ(patch["parameters"][0]["in"], "query");
  EXPECT_EQ(
      client
          .get(Json::parse(index.body)["paths"]["apis/coordination.k8s.io/v1"]["serverRelativeURL"])
          .status,
      200);
  EXPECT_EQ(client.get("/openapi/v2").status, 404);
}

}  // namespace
}  // namespace gpushare::testing
