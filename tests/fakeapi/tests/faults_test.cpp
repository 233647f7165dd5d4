// Fault injection on lists, watches and other requests, and connection-level faults.

#include <gtest/gtest.h>

#include "fakeapi/fake_apiserver.h"
#include "test_helpers.h"

namespace gpushare::testing {
namespace {

using namespace fakeapi_test;

TEST(Faults, NextListsFailThenRecover) {
  FakeApiServer server;
  server.create(Resource::Pods, make_pod("ns", "p1"));
  server.fail_next(Verb::List, 2, 500);
  ApiClient client(server);
  for (int i = 0; i < 2; ++i) {
    const Reply failed = client.get("/api/v1/pods");
    EXPECT_EQ(failed.status, 500);
    EXPECT_EQ(failed.json["kind"], "Status");
    EXPECT_EQ(failed.json["reason"], "InternalError");
  }
  EXPECT_EQ(client.get("/api/v1/pods").status, 200);
  EXPECT_EQ(server.request_count(Verb::List, Resource::Pods), 3u);
}

TEST(Faults, TooManyRequestsCarriesRetryAfter) {
  FakeApiServer server;
  server.fail_next(Verb::List, 1, 429, 3);
  const Reply reply = ApiClient(server).get("/api/v1/nodes");
  EXPECT_EQ(reply.status, 429);
  EXPECT_EQ(reply.json["reason"], "TooManyRequests");
  EXPECT_EQ(reply.json["details"]["retryAfterSeconds"], 3);
  auto header = reply.headers.find("Retry-After");
  ASSERT_NE(header, reply.headers.end());
  EXPECT_EQ(header->second, "3");
}

TEST(Faults, FaultsCanTargetOneResource) {
  FakeApiServer server;
  RequestFault fault;
  fault.verb = Verb::List;
  fault.resource = Resource::Pods;
  fault.status = 503;
  server.inject_fault(fault);
  ApiClient client(server);
  EXPECT_EQ(client.get("/api/v1/nodes").status, 200);  // not a pod list
  EXPECT_EQ(client.get("/api/v1/pods").status, 503);
  EXPECT_EQ(client.get("/api/v1/pods").status, 200);
}

TEST(Faults, WatchCanFailWithAnHttpStatus) {
  FakeApiServer server;
  RequestFault fault;
  fault.verb = Verb::Watch;
  fault.status = 410;
  server.inject_fault(fault);
  WatchStream failed(server.port(), "/api/v1/pods?watch=1&resourceVersion=1");
  EXPECT_EQ(failed.status(), 410);
  EXPECT_EQ(server.open_watch_count(), 0u);
  WatchStream next(server.port(), "/api/v1/pods?watch=1");
  EXPECT_EQ(next.status(), 200);
  server.clear_faults();
}

TEST(Faults, ClearFaultsRemovesPendingOnes) {
  FakeApiServer server;
  server.fail_next(Verb::Get, 5, 500);
  server.clear_faults();
  server.create(Resource::Nodes, make_node("n1"));
  EXPECT_EQ(ApiClient(server).get("/api/v1/nodes/n1").status, 200);
}

TEST(Faults, DroppedConnectionGivesTheClientNoResponse) {
  FakeApiServer server;
  RequestFault fault;
  fault.verb = Verb::List;
  fault.drop_connection = true;
  server.inject_fault(fault);
  RawHttpConnection connection(server.port());
  connection.send_request("GET", "/api/v1/pods");
  EXPECT_FALSE(connection.read_head());
  EXPECT_EQ(ApiClient(server).get("/api/v1/pods").status, 200);
}

TEST(Faults, DelayedListTimesTheClientOut) {
  FakeApiServer server;
  RequestFault fault;
  fault.verb = Verb::List;
  fault.status = 0;
  fault.delay = std::chrono::milliseconds(2000);
  server.inject_fault(fault);
  ApiClient client(server);
  client.set_read_timeout(std::chrono::milliseconds(200));
  EXPECT_EQ(client.get("/api/v1/pods").status, 0);
  EXPECT_EQ(client.get("/api/v1/pods").status, 200);
}

TEST(Faults, DelayedCreateAppliesAfterTheDelay) {
  FakeApiServer server;
  RequestFault fault;
  fault.verb = Verb::Create;
  fault.resource = Resource::ConfigMaps;
  fault.status = 0;
  fault.delay = std::chrono::milliseconds(300);
  server.inject_fault(fault);
  const Reply reply = ApiClient(server).post("/api/v1/namespaces/kube-system/configmaps",
                                             make_configmap("kube-system", "cm"));
  EXPECT_EQ(reply.status, 201);
  EXPECT_TRUE(server.get(Resource::ConfigMaps, "kube-system", "cm"));
}

TEST(Faults, ApplyFirstPatchIsALateSuccess) {
  FakeApiServer server;
  server.create(Resource::Pods, make_pod("ns", "p1"));
  RequestFault fault;
  fault.verb = Verb::Patch;
  fault.status = 504;
  fault.apply_first = true;
  server.inject_fault(fault);
  const Reply reply = ApiClient(server).patch("/api/v1/namespaces/ns/pods/p1",
                                              R"({"metadata":{"annotations":{"k":"v"}}})",
                                              "application/merge-patch+json");
  EXPECT_EQ(reply.status, 504);
  EXPECT_EQ(reply.json["reason"], "Timeout");
  EXPECT_EQ(server.get(Resource::Pods, "ns", "p1")->at("metadata")["annotations"]["k"], "v");
}

TEST(Faults, DropAllConnectionsResetsIdleKeepAliveConnections) {
  FakeApiServer server;
  RawHttpConnection connection(server.port());
  connection.send_request("GET", "/api/v1/pods");
  const auto head = connection.read_head();
  ASSERT_TRUE(head);
  ASSERT_TRUE(connection.read_body(*head));
  EXPECT_EQ(server.open_connection_count(), 1u);
  server.drop_all_connections();
  EXPECT_TRUE(connection.closed_by_peer());
}

TEST(Faults, StoppingDuringADelayedRequestDoesNotHang) {
  std::optional<FakeApiServer> server(std::in_place);
  RequestFault fault;
  fault.verb = Verb::List;
  fault.delay = std::chrono::hours(1);
  server->inject_fault(fault);
  RawHttpConnection connection(server->port());
  connection.send_request("GET", "/api/v1/pods");
  ASSERT_TRUE(server->wait_for_request_count(Verb::List, std::nullopt, 1, kSoon));
  server.reset();
  EXPECT_TRUE(connection.closed_by_peer());
}

}  // namespace
}  // namespace gpushare::testing
