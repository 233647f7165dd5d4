// POST pods/{name}/binding and the legacy bindings collection (protocol-reference §3).

#include <gtest/gtest.h>

#include "fakeapi/fake_apiserver.h"
#include "test_helpers.h"

namespace gpushare::testing {
namespace {

using namespace fakeapi_test;

Json binding_for(std::string_view name, std::string_view node, std::string_view uid = {},
                 Json annotations = Json::object()) {
  Json binding = {{"apiVersion", "v1"},
                  {"kind", "Binding"},
                  {"metadata", {{"name", name}, {"namespace", "ns"}}},
                  {"target", {{"apiVersion", "v1"}, {"kind", "Node"}, {"name", node}}}};
  if (!uid.empty()) binding["metadata"]["uid"] = uid;
  if (!annotations.empty()) binding["metadata"]["annotations"] = std::move(annotations);
  return binding;
}

class BindingTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Json pod = make_pod("ns", "p1");
    pod["metadata"]["annotations"] = {{"keep", "me"}, {"ALIYUN_COM_GPU_MEM_IDX", "stale"}};
    pod["status"]["nominatedNodeName"] = "n1";
    pod["status"]["conditions"] =
        Json::array({{{"type", "PodScheduled"}, {"status", "False"}, {"reason", "Unschedulable"}}});
    uid = server.create(Resource::Pods, pod)["metadata"]["uid"];
  }
  Reply bind(const Json& binding, std::string_view name = "p1") {
    return client.post("/api/v1/namespaces/ns/pods/" + std::string(name) + "/binding", binding);
  }
  FakeApiServer server;
  ApiClient client{server};
  std::string uid;
};

TEST_F(BindingTest, AppliesNodeAnnotationsAndConditionInOneModified) {
  WatchStream watch(server.port(),
                    "/api/v1/pods?watch=1&resourceVersion=" + server.resource_version());
  const Reply reply = bind(binding_for(
      "p1", "n1", uid, {{"ALIYUN_COM_GPU_MEM_IDX", "0"}, {"ALIYUN_COM_GPU_MEM_POD", "4"}}));
  ASSERT_EQ(reply.status, 201) << reply.body;
  EXPECT_EQ(reply.json, Json({{"kind", "Status"},
                              {"apiVersion", "v1"},
                              {"metadata", Json::object()},
                              {"status", "Success"},
                              {"code", 201}}));

  auto event = watch.next_event();
  ASSERT_TRUE(event);
  EXPECT_EQ((*event)["type"], "MODIFIED");
  const Json& pod = (*event)["object"];
  EXPECT_EQ(pod["spec"]["nodeName"], "n1");
  EXPECT_EQ(
      pod["metadata"]["annotations"],
      Json({{"keep", "me"}, {"ALIYUN_COM_GPU_MEM_IDX", "0"}, {"ALIYUN_COM_GPU_MEM_POD", "4"}}));
  ASSERT_EQ(pod["status"]["conditions"].size(), 1u);
  EXPECT_EQ(pod["status"]["conditions"][0]["type"], "PodScheduled");
  EXPECT_EQ(pod["status"]["conditions"][0]["status"], "True");
  EXPECT_FALSE(pod["status"]["conditions"][0].contains("reason"));
  EXPECT_FALSE(pod["status"].contains("nominatedNodeName"));
  EXPECT_TRUE(watch.stays_quiet(std::chrono::milliseconds(200)))
      << "more than one event for one binding";
  EXPECT_EQ(server.get(Resource::Pods, "ns", "p1")->at("spec")["nodeName"], "n1");
  EXPECT_EQ(server.request_count(Verb::Bind, Resource::Pods), 1u);
}

TEST_F(BindingTest, WithoutUidItStillBinds) {
  EXPECT_EQ(bind(binding_for("p1", "n1")).status, 201);
}

TEST_F(BindingTest, MissingPodIs404) {
  const Reply reply = bind(binding_for("ghost", "n1"), "ghost");
  EXPECT_EQ(reply.status, 404);
  EXPECT_EQ(reply.json["reason"], "NotFound");
  EXPECT_EQ(reply.json["message"], "pods \"ghost\" not found");
}

TEST_F(BindingTest, AlreadyBoundIs409OnPodsBinding) {
  ASSERT_EQ(bind(binding_for("p1", "n0")).status, 201);
  const Reply reply = bind(binding_for("p1", "n1"));
  EXPECT_EQ(reply.status, 409);
  EXPECT_EQ(reply.json["reason"], "Conflict");
  EXPECT_EQ(reply.json["details"], Json({{"name", "p1"}, {"kind", "pods/binding"}}));
  EXPECT_EQ(reply.json["message"],
            "Operation cannot be fulfilled on pods/binding \"p1\": pod p1 is already assigned to "
            "node \"n0\"");
}

TEST_F(BindingTest, TerminatingPodIs409) {
  server.mutate(Resource::Pods, "ns", "p1",
                [](Json& pod) { pod["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"; });
  const Reply reply = bind(binding_for("p1", "n1"));
  EXPECT_EQ(reply.status, 409);
  EXPECT_EQ(reply.json["details"]["kind"], "pods/binding");
  EXPECT_EQ(reply.json["message"],
            "Operation cannot be fulfilled on pods/binding \"p1\": pod p1 is being deleted, cannot "
            "be assigned to a host");
}

TEST_F(BindingTest, SchedulingGatedPodIs409) {
  server.mutate(Resource::Pods, "ns", "p1", [](Json& pod) {
    pod["spec"]["schedulingGates"] = Json::array({{{"name", "wait"}}});
  });
  const Reply reply = bind(binding_for("p1", "n1"));
  EXPECT_EQ(reply.status, 409);
  EXPECT_EQ(reply.json["message"],
            "Operation cannot be fulfilled on pods/binding \"p1\": pod p1 has non-empty "
            ".spec.schedulingGates");
}

TEST_F(BindingTest, UidMismatchIs409OnPods) {
  const Reply reply = bind(binding_for("p1", "n1", "00000000-0000-4000-8000-000000000000"));
  EXPECT_EQ(reply.status, 409);
  EXPECT_EQ(reply.json["details"], Json({{"name", "p1"}, {"kind", "pods"}}));
  EXPECT_EQ(
      reply.json["message"],
      "Operation cannot be fulfilled on pods \"p1\": Precondition failed: UID in precondition: "
      "00000000-0000-4000-8000-000000000000, UID in object meta: " +
          uid);
  EXPECT_FALSE(server.get(Resource::Pods, "ns", "p1")->at("spec").contains("nodeName"));
}

TEST_F(BindingTest, RecreatedPodRejectsAStaleUid) {
  server.remove(Resource::Pods, "ns", "p1");
  const std::string new_uid =
      server.create(Resource::Pods, make_pod("ns", "p1"))["metadata"]["uid"];
  EXPECT_NE(new_uid, uid);
  EXPECT_EQ(bind(binding_for("p1", "n1", uid)).status, 409);
  EXPECT_EQ(bind(binding_for("p1", "n1", new_uid)).status, 201);
}

TEST_F(BindingTest, NameAndNamespaceMismatchesAre400) {
  const Reply name = bind(binding_for("p2", "n1"), "p1");
  EXPECT_EQ(name.status, 400);
  EXPECT_EQ(name.json["message"], "name in URL does not match name in Binding object");
  Json other_ns = binding_for("p1", "n1");
  other_ns["metadata"]["namespace"] = "elsewhere";
  const Reply ns = bind(other_ns);
  EXPECT_EQ(ns.status, 400);
  EXPECT_EQ(
      ns.json["message"],
      "the namespace of the provided object does not match the namespace sent on the request");
  Json no_ns = binding_for("p1", "n1");
  no_ns["metadata"].erase("namespace");  // an empty namespace is filled in
  EXPECT_EQ(bind(no_ns).status, 201);
}

TEST_F(BindingTest, InvalidTargetIs500WithoutReason) {
  const Reply empty = bind(binding_for("p1", ""));
  EXPECT_EQ(empty.status, 500);
  EXPECT_FALSE(empty.json.contains("reason"));
  EXPECT_EQ(empty.json["message"], "target.name: Required value");
  Json wrong_kind = binding_for("p1", "n1");
  wrong_kind["target"]["kind"] = "Pod";
  EXPECT_EQ(bind(wrong_kind).status, 500);
  EXPECT_FALSE(server.get(Resource::Pods, "ns", "p1")->at("spec").contains("nodeName"));
}

TEST_F(BindingTest, LegacyBindingsCollectionTakesTheNameFromTheBody) {
  const Reply reply = client.post("/api/v1/namespaces/ns/bindings", binding_for("p1", "n7", uid));
  ASSERT_EQ(reply.status, 201) << reply.body;
  EXPECT_EQ(server.get(Resource::Pods, "ns", "p1")->at("spec")["nodeName"], "n7");
  EXPECT_EQ(client.post("/api/v1/namespaces/ns/bindings", binding_for("ghost", "n7")).status, 404);
}

// --- Faults --------------------------------------------------------------------------------

TEST_F(BindingTest, InjectedRejectionLeavesThePodAlone) {
  RequestFault fault;
  fault.verb = Verb::Bind;
  fault.status = 409;
  server.inject_fault(fault, 2);
  EXPECT_EQ(bind(binding_for("p1", "n1")).status, 409);
  EXPECT_EQ(bind(binding_for("p1", "n1")).status, 409);
  EXPECT_FALSE(server.get(Resource::Pods, "ns", "p1")->at("spec").contains("nodeName"));
  EXPECT_EQ(bind(binding_for("p1", "n1")).status, 201);  // the fault is used up
}

TEST_F(BindingTest, ApplyThenFailIsALateSuccess) {
  RequestFault fault;
  fault.verb = Verb::Bind;
  fault.status = 500;
  fault.apply_first = true;
  server.inject_fault(fault);
  const Reply reply = bind(binding_for("p1", "n1"));
  EXPECT_EQ(reply.status, 500);
  EXPECT_EQ(reply.json["reason"], "InternalError");
  EXPECT_EQ(server.get(Resource::Pods, "ns", "p1")->at("spec")["nodeName"], "n1");
}

TEST_F(BindingTest, HangingBindingTimesTheClientOutAndAppliesLate) {
  RequestFault fault;
  fault.verb = Verb::Bind;
  fault.status = 0;  // no failure: only the delay
  fault.delay = std::chrono::milliseconds(1500);
  server.inject_fault(fault);
  client.set_read_timeout(std::chrono::milliseconds(200));
  const Reply reply = bind(binding_for("p1", "n1"));
  EXPECT_EQ(reply.status, 0);  // the client gave up
  // The server still applies it once the delay is over.
  WatchStream watch(server.port(), "/api/v1/pods?watch=1&fieldSelector=spec.nodeName%3Dn1");
  auto event = watch.next_event();
  ASSERT_TRUE(event);
  EXPECT_EQ((*event)["object"]["spec"]["nodeName"], "n1");
}

TEST_F(BindingTest, DroppedConnectionAfterApplying) {
  RequestFault fault;
  fault.verb = Verb::Bind;
  fault.apply_first = true;
  fault.drop_connection = true;
  server.inject_fault(fault);
  const Reply reply = bind(binding_for("p1", "n1"));
  EXPECT_EQ(reply.status, 0);
  EXPECT_NE(reply.error, httplib::Error::Success);
  EXPECT_EQ(server.get(Resource::Pods, "ns", "p1")->at("spec")["nodeName"], "n1");
}

}  // namespace
}  // namespace gpushare::testing
