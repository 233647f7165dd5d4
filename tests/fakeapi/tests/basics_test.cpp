// Lifecycle, discovery, CRUD over HTTP, Status bodies, auth, request log, restart, TLS.

#include <gtest/gtest.h>

#include "fakeapi/fake_apiserver.h"
#include "test_helpers.h"

namespace gpushare::testing {
namespace {

using namespace fakeapi_test;

void expect_failure_status(const Reply& reply, int code, std::string_view reason) {
  EXPECT_EQ(reply.status, code) << reply.body;
  ASSERT_TRUE(reply.json.is_object()) << reply.body;
  EXPECT_EQ(reply.json["kind"], "Status");
  EXPECT_EQ(reply.json["apiVersion"], "v1");
  EXPECT_EQ(reply.json["metadata"], Json::object());
  EXPECT_EQ(reply.json["status"], "Failure");
  EXPECT_EQ(reply.json["code"], code);
  if (reason.empty()) {
    EXPECT_FALSE(reply.json.contains("reason")) << reply.body;
  } else {
    EXPECT_EQ(reply.json["reason"], reason);
  }
}

TEST(FakeApiServerBasics, ListensOnLoopbackWithEphemeralPort) {
  FakeApiServer server;
  EXPECT_GT(server.port(), 0);
  EXPECT_EQ(server.base_url(), "http://127.0.0.1:" + std::to_string(server.port()));
  EXPECT_TRUE(server.is_listening());
  ApiClient client(server);
  EXPECT_EQ(client.get("/healthz").status, 200);
}

TEST(FakeApiServerBasics, ServesDiscoveryForKubectl) {
  FakeApiServer server;
  ApiClient client(server);
  const Reply version = client.get("/version");
  ASSERT_EQ(version.status, 200);
  EXPECT_EQ(version.json["major"], "1");
  EXPECT_EQ(version.json["gitVersion"], "v1.34.0");

  const Reply api = client.get("/api");
  EXPECT_EQ(api.json["kind"], "APIVersions");
  EXPECT_EQ(api.json["versions"], Json({"v1"}));

  const Reply core = client.get("/api/v1");
  ASSERT_EQ(core.json["kind"], "APIResourceList");
  std::set<std::string> names;
  for (const Json& resource : core.json["resources"])
    names.insert(resource["name"].get<std::string>());
  for (const char* expected :
       {"nodes", "pods", "pods/binding", "pods/status", "configmaps", "bindings"}) {
    EXPECT_TRUE(names.count(expected)) << expected;
  }

  const Reply groups = client.get("/apis");
  ASSERT_EQ(groups.json["kind"], "APIGroupList");
  EXPECT_EQ(groups.json["groups"][0]["name"], "coordination.k8s.io");
  EXPECT_EQ(groups.json["groups"][0]["preferredVersion"]["groupVersion"], "coordination.k8s.io/v1");
  const Reply coordination = client.get("/apis/coordination.k8s.io/v1");
  EXPECT_EQ(coordination.json["resources"][0]["name"], "leases");
}

TEST(FakeApiServerBasics, UnknownPathsAndMethodsGetStatusBodies) {
  FakeApiServer server;
  ApiClient client(server);
  expect_failure_status(client.get("/api/v1/secrets"), 404, "NotFound");
  expect_failure_status(client.get("/api/v1/namespaces/default/pods/p1/logs"), 404, "NotFound");
  // A collection cannot be PUT.
  expect_failure_status(client.put("/api/v1/namespaces/default/pods", Json::object()), 405,
                        "MethodNotAllowed");
}

TEST(FakeApiServerBasics, CreateGetDeleteOverHttp) {
  FakeApiServer server;
  ApiClient client(server);
  const Reply created = client.post("/api/v1/namespaces/kube-system/configmaps",
                                    make_configmap("", "unhealthy-gpu-n1", {{"gpus", "0,2"}}));
  ASSERT_EQ(created.status, 201) << created.body;
  EXPECT_EQ(created.json["kind"], "ConfigMap");
  EXPECT_EQ(created.json["metadata"]["namespace"], "kube-system");
  EXPECT_TRUE(created.json["metadata"]["resourceVersion"].is_string());
  EXPECT_EQ(created.json["metadata"]["uid"].get<std::string>().size(), 36u);
  EXPECT_TRUE(created.json["metadata"].contains("creationTimestamp"));

  const Reply fetched = client.get("/api/v1/namespaces/kube-system/configmaps/unhealthy-gpu-n1");
  ASSERT_EQ(fetched.status, 200);
  EXPECT_EQ(fetched.json["data"]["gpus"], "0,2");
  EXPECT_EQ(fetched.json["metadata"]["uid"], created.json["metadata"]["uid"]);

  const Reply duplicate = client.post("/api/v1/namespaces/kube-system/configmaps",
                                      make_configmap("kube-system", "unhealthy-gpu-n1"));
  expect_failure_status(duplicate, 409, "AlreadyExists");
  EXPECT_EQ(duplicate.json["message"], "configmaps \"unhealthy-gpu-n1\" already exists");
  EXPECT_EQ(duplicate.json["details"]["kind"], "configmaps");

  const Reply deleted = client.del("/api/v1/namespaces/kube-system/configmaps/unhealthy-gpu-n1");
  ASSERT_EQ(deleted.status, 200);
  EXPECT_EQ(deleted.json["kind"], "Status");
  EXPECT_EQ(deleted.json["status"], "Success");
  EXPECT_EQ(deleted.json["details"]["uid"], created.json["metadata"]["uid"]);

  const Reply missing = client.get("/api/v1/namespaces/kube-system/configmaps/unhealthy-gpu-n1");
  expect_failure_status(missing, 404, "NotFound");
  EXPECT_EQ(missing.json["message"], "configmaps \"unhealthy-gpu-n1\" not found");
  EXPECT_EQ(missing.json["details"], Json({{"name", "unhealthy-gpu-n1"}, {"kind", "configmaps"}}));
}

TEST(FakeApiServerBasics, CreateValidatesNamespaceNameAndResourceVersion) {
  FakeApiServer server;
  ApiClient client(server);
  expect_failure_status(client.post("/api/v1/namespaces/a/pods", make_pod("b", "p1")), 400,
                        "BadRequest");
  Json nameless = make_pod("a", "");
  nameless["metadata"].erase("name");
  expect_failure_status(client.post("/api/v1/namespaces/a/pods", nameless), 422, "Invalid");
  Json generated = nameless;
  generated["metadata"]["generateName"] = "worker-";
  const Reply with_generated = client.post("/api/v1/namespaces/a/pods", generated);
  ASSERT_EQ(with_generated.status, 201);
  EXPECT_EQ(with_generated.json["metadata"]["name"].get<std::string>().rfind("worker-", 0), 0u);
  Json with_rv = make_pod("a", "p2");
  with_rv["metadata"]["resourceVersion"] = "5";
  expect_failure_status(client.post("/api/v1/namespaces/a/pods", with_rv), 500, "");
}

TEST(FakeApiServerBasics, OneGlobalResourceVersionAcrossResources) {
  FakeApiServer server;
  const Json node = server.create(Resource::Nodes, make_node("n1"));
  const Json pod = server.create(Resource::Pods, make_pod("default", "p1"));
  const Json cm = server.create(Resource::ConfigMaps, make_configmap("kube-system", "c"));
  const Json lease = server.create(Resource::Leases, make_lease("kube-system", "l"));
  const auto rv = [](const Json& object) {
    return std::stoull(object["metadata"]["resourceVersion"].get<std::string>());
  };
  EXPECT_LT(rv(node), rv(pod));
  EXPECT_LT(rv(pod), rv(cm));
  EXPECT_LT(rv(cm), rv(lease));
  EXPECT_EQ(server.resource_version(), lease["metadata"]["resourceVersion"]);
  // Test-side pods get the server's defaults.
  EXPECT_EQ(pod["status"]["phase"], "Pending");
  EXPECT_EQ(pod["spec"]["schedulerName"], "default-scheduler");
  EXPECT_THROW(server.create(Resource::Pods, make_pod("default", "p1")), ApiError);
  EXPECT_THROW(server.remove(Resource::Pods, "default", "nope"), ApiError);
}

TEST(FakeApiServerBasics, BearerTokensAreCheckedAndRotate) {
  FakeApiServer::Options options;
  options.accepted_tokens = std::set<std::string>{"token-1"};
  FakeApiServer server(options);
  const std::string path = "/api/v1/nodes";

  const Reply anonymous = ApiClient(server).get(path);
  expect_failure_status(anonymous, 401, "Unauthorized");
  EXPECT_EQ(anonymous.json["message"], "Unauthorized");
  EXPECT_EQ(ApiClient(server, "wrong").get(path).status, 401);
  EXPECT_EQ(ApiClient(server, "token-1").get(path).status, 200);
  EXPECT_EQ(ApiClient(server).get("/healthz").status, 200);  // health needs no token

  server.set_accepted_tokens({"token-2"});  // the token file was rotated
  EXPECT_EQ(ApiClient(server, "token-1").get(path).status, 401);
  EXPECT_EQ(ApiClient(server, "token-2").get(path).status, 200);

  server.disable_auth();
  EXPECT_EQ(ApiClient(server).get(path).status, 200);
}

TEST(FakeApiServerBasics, CountsAndRecordsRequests) {
  FakeApiServer server;
  server.create(Resource::Pods, make_pod("ns", "p1"));
  ApiClient client(server, "t");
  client.get("/api/v1/pods?fieldSelector=spec.nodeName%3Dn1");
  client.get("/api/v1/namespaces/ns/pods");
  client.get("/api/v1/namespaces/ns/pods/p1");
  client.patch("/api/v1/namespaces/ns/pods/p1", R"({"metadata":{"annotations":{"a":"b"}}})",
               "application/strategic-merge-patch+json");
  EXPECT_EQ(server.request_count(Verb::List), 2u);
  EXPECT_EQ(server.request_count(Verb::List, Resource::Pods), 2u);
  EXPECT_EQ(server.request_count(Verb::List, Resource::Nodes), 0u);
  EXPECT_EQ(server.request_count(Verb::Get, Resource::Pods), 1u);
  EXPECT_EQ(server.request_count(Verb::Patch), 1u);
  const std::vector<RequestRecord> records = server.requests();
  ASSERT_EQ(records.size(), 4u);
  EXPECT_EQ(records[0].params.at("fieldSelector"), "spec.nodeName=n1");
  EXPECT_EQ(records[0].namespace_name, "");
  EXPECT_EQ(records[1].namespace_name, "ns");
  EXPECT_EQ(records[3].content_type, "application/strategic-merge-patch+json");
  EXPECT_EQ(records[3].authorization, "Bearer t");
  EXPECT_EQ(records[3].name, "p1");
  server.clear_request_log();
  EXPECT_EQ(server.request_count(Verb::List), 0u);
  EXPECT_TRUE(server.wait_for_request_count(Verb::List, Resource::Pods, 0, kSoon));
}

TEST(FakeApiServerBasics, StopAndStartListeningOnTheSamePort) {
  FakeApiServer server;
  server.create(Resource::Nodes, make_node("n1"));
  const std::uint16_t port = server.port();
  server.stop_listening();
  EXPECT_FALSE(server.is_listening());
  EXPECT_THROW(RawHttpConnection connection(port), std::runtime_error);  // connection refused
  server.start_listening();
  EXPECT_EQ(server.port(), port);
  EXPECT_EQ(ApiClient(server).get("/api/v1/nodes/n1").status, 200);
}

TEST(FakeApiServerBasics, ListensOnARequestedPort) {
  std::uint16_t free_port = 0;
  {
    FakeApiServer probe;  // borrow a port the kernel just handed out
    free_port = probe.port();
  }
  FakeApiServer::Options options;
  options.port = free_port;
  FakeApiServer server(options);
  EXPECT_EQ(server.port(), free_port);
  EXPECT_EQ(ApiClient(server).get("/healthz").status, 200);
}

TEST(FakeApiServerBasics, RestartKeepsOrDropsState) {
  FakeApiServer server;
  server.create(Resource::Pods, make_pod("ns", "p1"));
  const std::string rv_before = server.resource_version();
  const std::uint16_t port = server.port();

  server.restart(FakeApiServer::StateOnRestart::Keep);
  EXPECT_EQ(server.port(), port);
  EXPECT_EQ(ApiClient(server).get("/api/v1/namespaces/ns/pods/p1").status, 200);

  server.restart(FakeApiServer::StateOnRestart::Drop);
  EXPECT_EQ(server.port(), port);
  EXPECT_EQ(ApiClient(server).get("/api/v1/namespaces/ns/pods/p1").status, 404);
  // The RV keeps counting, and history from before is gone.
  EXPECT_EQ(server.compacted_resource_version(), rv_before);
  WatchStream old_watch(
      port, "/api/v1/pods?watch=1&resourceVersion=" + std::to_string(std::stoull(rv_before) - 1));
  const auto event = old_watch.next_event();
  ASSERT_TRUE(event);
  EXPECT_EQ((*event)["type"], "ERROR");
  EXPECT_EQ((*event)["object"]["code"], 410);
}

TEST(FakeApiServerBasics, DestructionEndsOpenWatchesAndConnections) {
  std::optional<FakeApiServer> server(std::in_place);
  WatchStream watch(server->port(), "/api/v1/pods?watch=true");
  ASSERT_EQ(watch.status(), 200);
  ASSERT_TRUE(server->wait_for_open_watches(1, kSoon));
  RawHttpConnection idle(server->port());  // an idle keep-alive connection
  idle.send_request("GET", "/healthz");
  ASSERT_TRUE(idle.read_head());
  idle.read_body({200, {{"content-length", "2"}}});
  server.reset();  // must not hang on either connection
  EXPECT_FALSE(watch.next_event());
  EXPECT_TRUE(watch.ended_abruptly());
  EXPECT_TRUE(idle.closed_by_peer());
}

TEST(FakeApiServerBasics, ServesTlsWithItsOwnCa) {
  FakeApiServer::Options options;
  options.tls = true;
  FakeApiServer server(options);
  EXPECT_EQ(server.base_url().rfind("https://127.0.0.1:", 0), 0u);
  EXPECT_NE(server.ca_cert_pem().find("BEGIN CERTIFICATE"), std::string::npos);
  server.create(Resource::Nodes, make_node("n1"));
  ApiClient client(server);  // verifies the certificate against ca_cert_path()
  const Reply reply = client.get("/api/v1/nodes");
  ASSERT_EQ(reply.status, 200) << httplib::to_string(reply.error);
  EXPECT_EQ(reply.json["items"][0]["metadata"]["name"], "n1");
}

TEST(FakeApiServerBasics, KubeconfigNamesServerTokenAndCa) {
  FakeApiServer::Options options;
  options.tls = true;
  FakeApiServer server(options);
  TempDir dir;
  server.write_kubeconfig(dir.path() / "config", "secret-token", "kube-system");
  std::ifstream in(dir.path() / "config");
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("server: " + server.base_url()), std::string::npos);
  EXPECT_NE(text.find("token: secret-token"), std::string::npos);
  EXPECT_NE(text.find("certificate-authority-data: "), std::string::npos);
  EXPECT_NE(text.find("namespace: kube-system"), std::string::npos);
}

}  // namespace
}  // namespace gpushare::testing
