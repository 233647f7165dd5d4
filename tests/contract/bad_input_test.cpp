// Bad input: every case gets a non-200 status and an Error, the server stays up, and the model
// is unchanged.

#include <gtest/gtest.h>

#include "contract/extender_fixture.h"

namespace gpushare::testing {
namespace {

class BadInput : public ::testing::Test {
 protected:
  void SetUp() override { before_ = extender.inspect(); }
  void TearDown() override {
    EXPECT_EQ(extender.inspect(), before_) << "model changed on bad input";
    EXPECT_EQ(extender.client().Get("/healthz")->status, 200);
  }
  void expect_rejected(const std::string& verb, const std::string& body,
                       const std::string& fragment) {
    const auto [status, reply] = extender.post(verb, body);
    EXPECT_EQ(status, 400) << verb << " " << body.substr(0, 200);
    ASSERT_TRUE(reply.is_object()) << body.substr(0, 200);
    const std::string error = reply.value("Error", "");
    EXPECT_NE(error.find(fragment), std::string::npos) << "error was: " << error;
  }

  ExtenderUnderTest extender{cluster_list({node_object("n1", 2, 32), pod_object("p", "uid-p", 4)}),
                             "binpack", 64 * 1024};
  Json before_;
};

TEST_F(BadInput, MalformedJson) {
  for (const char* verb : {"filter", "prioritize", "bind", "preempt"}) {
    expect_rejected(verb, "{\"Pod\": ", "not valid JSON");
    expect_rejected(verb, "", "empty request body");
    expect_rejected(verb, "[1,2]", "must be a JSON object");
    expect_rejected(verb, "\"text\"", "must be a JSON object");
  }
}

TEST_F(BadInput, FilterReplyKeepsItsShapeOnError) {
  const auto [status, reply] = extender.post("filter", std::string("{nope"));
  EXPECT_EQ(status, 400);
  for (const char* key :
       {"Nodes", "NodeNames", "FailedNodes", "FailedAndUnresolvableNodes", "Error"}) {
    EXPECT_TRUE(reply.contains(key)) << key;
  }
}

TEST_F(BadInput, WrongTypes) {
  const Json pod = pod_object("p", "uid-p", 4);
  expect_rejected("filter", Json{{"Pod", pod}, {"NodeNames", "n1"}}.dump(),
                  "NodeNames must be an array");
  expect_rejected("filter", Json{{"Pod", pod}, {"NodeNames", {1, 2}}}.dump(),
                  "NodeNames must hold strings");
  expect_rejected("filter", Json{{"Pod", "p"}, {"NodeNames", {"n1"}}}.dump(),
                  "Pod must be an object");
  expect_rejected("filter", Json{{"Pod", pod}, {"Nodes", {{"items", "x"}}}}.dump(),
                  "Nodes.items must be an array");
  expect_rejected("filter", Json{{"Pod", pod}, {"Nodes", {{"items", {1}}}}}.dump(), "Node objects");
  expect_rejected("bind", Json{{"PodName", 7}, {"PodNamespace", "default"}, {"Node", "n1"}}.dump(),
                  "PodName must be a string");
  expect_rejected("preempt", Json{{"Pod", pod}, {"NodeNameToMetaVictims", {{"n1", 3}}}}.dump(),
                  "must be objects");
}

TEST_F(BadInput, MissingFields) {
  expect_rejected("filter", Json{{"NodeNames", {"n1"}}}.dump(), "missing Pod");
  expect_rejected("prioritize", Json{{"Pod", pod_object("p", "u", 1)}}.dump(),
                  "neither NodeNames nor Nodes");
  expect_rejected("bind", Json{{"PodNamespace", "default"}, {"Node", "n1"}}.dump(),
                  "missing PodName");
  expect_rejected("bind", Json{{"PodName", "p"}, {"Node", "n1"}}.dump(), "missing PodNamespace");
  expect_rejected("bind", Json{{"PodName", "p"}, {"PodNamespace", "default"}}.dump(),
                  "missing Node");
  expect_rejected("preempt", Json{{"Pod", pod_object("p", "u", 1)}}.dump(),
                  "neither NodeNameToMetaVictims");
  Json no_metadata = pod_object("p", "u", 1);
  no_metadata.erase("metadata");
  expect_rejected("filter", Json{{"Pod", no_metadata}, {"NodeNames", {"n1"}}}.dump(),
                  "no metadata");
}

TEST_F(BadInput, AbsurdQuantities) {
  for (const char* quantity : {"-4", "1e40", "99999999999999999999", "12XB", "0.5", ""}) {
    Json pod = pod_object("p", "u", 1);
    pod["spec"]["containers"][0]["resources"]["limits"]["aliyun.com/gpu-mem"] = quantity;
    expect_rejected("filter", Json{{"Pod", pod}, {"NodeNames", {"n1"}}}.dump(),
                    "aliyun.com/gpu-mem");
  }
  Json pod = pod_object("p", "u", 1);
  pod["spec"]["containers"][0]["resources"]["limits"]["aliyun.com/gpu-mem"] = Json::object();
  expect_rejected("prioritize", Json{{"Pod", pod}, {"NodeNames", {"n1"}}}.dump(),
                  "must be a quantity");
}

TEST_F(BadInput, OversizedBody) {
  std::string huge = "{\"Pod\":{},\"NodeNames\":[\"" + std::string(100 * 1024, 'x') + "\"]}";
  auto result = extender.client().Post("/gpushare-scheduler/filter", huge, "application/json");
  ASSERT_TRUE(result);
  EXPECT_EQ(result->status, 413);
  EXPECT_NE(result->body.find("too large"), std::string::npos);
}

TEST_F(BadInput, UnknownEndpointAndMethod) {
  auto result = extender.client().Post("/gpushare-scheduler/explode", "{}", "application/json");
  EXPECT_EQ(result->status, 404);
  EXPECT_NE(result->body.find("no such endpoint"), std::string::npos);
  EXPECT_EQ(extender.client().Get("/gpushare-scheduler/filter")->status, 404);
  EXPECT_EQ(extender.client().Get("/gpushare-scheduler/inspect/ghost")->status, 404);
}

}  // namespace
}  // namespace gpushare::testing
