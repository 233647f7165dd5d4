// The wire paths agree with the nlohmann DOM paths they replaced:
//  - decode_extender_args_body(body) (simdjson, the one decoder) == the reference decoder of an
//    nlohmann tree (support/reference_extender_args.h): same arguments, or the same BadInput
//    message, for hand-picked and randomly mutated bodies;
//  - encode_filter_result / encode_priorities write exactly the bytes nlohmann's dump() wrote.

#include <gtest/gtest.h>

#include <random>

#include "contract/extender_fixture.h"
#include "gpushare/wire/filter_reply.h"
#include "gpushare/wire/wire_decode.h"
#include "gpushare/wire/wire_encode.h"
#include "support/reference_extender_args.h"

namespace gpushare::testing {
namespace {

using wire::ExtenderArgs;

template <typename Args>
struct Outcome {
  bool ok = false;
  std::string error;
  Args args;
};

template <typename Fn>
Outcome<decltype(std::declval<Fn>()())> run(Fn fn) {
  Outcome<decltype(std::declval<Fn>()())> outcome;
  try {
    outcome.args = fn();
    outcome.ok = true;
  } catch (const kube::BadInput& e) {
    outcome.error = e.what();
  }
  return outcome;
}

// Compares the two decoders on one body; returns whether it decoded.
bool expect_same_decoding(const std::string& body) {
  const kube::ResourceNames names;
  const auto dom = run([&] { return reference::decode_extender_args(body, names); });
  const auto fast =
      run([&] { return wire::decode_extender_args_body(std::string_view(body), names); });
  EXPECT_EQ(dom.ok, fast.ok) << "body: " << body.substr(0, 300) << "\ndom error: " << dom.error
                             << "\nfast error: " << fast.error;
  if (!dom.ok || !fast.ok) {
    EXPECT_EQ(dom.error, fast.error) << "body: " << body.substr(0, 300);
    return false;
  }
  EXPECT_EQ(dom.args.pod.uid, fast.args.pod.uid);
  EXPECT_EQ(dom.args.pod.name, fast.args.pod.name);
  EXPECT_EQ(dom.args.pod.namespace_name, fast.args.pod.namespace_name);
  EXPECT_EQ(dom.args.pod.request, fast.args.pod.request);
  EXPECT_EQ(dom.args.pod.cpu_milli, fast.args.pod.cpu_milli);
  EXPECT_EQ(dom.args.pod.memory, fast.args.pod.memory);
  EXPECT_EQ(dom.args.pod.node_name, fast.args.pod.node_name);
  EXPECT_EQ(dom.args.pod.phase, fast.args.pod.phase);
  EXPECT_EQ(dom.args.pod.resource_version, fast.args.pod.resource_version);
  EXPECT_EQ(dom.args.pod.terminating, fast.args.pod.terminating);
  EXPECT_EQ(dom.args.pod.gpu_index, fast.args.pod.gpu_index);
  EXPECT_EQ(dom.args.pod.annotated_request, fast.args.pod.annotated_request);
  EXPECT_EQ(dom.args.pod.annotated_device_memory, fast.args.pod.annotated_device_memory);
  EXPECT_EQ(dom.args.pod.assigned, fast.args.pod.assigned);
  EXPECT_EQ(dom.args.pod.assume_time_ns, fast.args.pod.assume_time_ns);
  EXPECT_EQ(dom.args.node_names, fast.args.node_names);
  EXPECT_EQ(dom.args.nodes.has_value(), fast.args.node_texts.has_value());
  EXPECT_EQ(dom.args.offered_names(), fast.args.offered_names());
  if (dom.args.nodes && fast.args.node_texts) {
    EXPECT_EQ(dom.args.nodes->size(), fast.args.node_texts->size());
    for (std::size_t i = 0; i < dom.args.nodes->size() && i < fast.args.node_texts->size(); ++i) {
      EXPECT_EQ((*dom.args.nodes)[i], Json::parse((*fast.args.node_texts)[i].json));
    }
  }
  return true;
}

Json small_node(const std::string& name) {
  return node_object(name, 2, 32);
}

TEST(WireFastPath, DecodesLikeTheDom) {
  const Json pod = pod_object("p", "uid-p", 4);
  auto with_items = [&](Json items) {
    return Json{{"Pod", pod}, {"Nodes", Json{{"items", std::move(items)}}}}.dump();
  };
  const std::vector<std::string> bodies = {
      Json{{"Pod", pod}, {"Nodes", nullptr}, {"NodeNames", {"n1", "n2"}}}.dump(),
      Json{{"pod", pod}, {"nodes", nullptr}, {"nodenames", {"n1"}}}.dump(),
      Json{{"POD", pod}, {"NODENAMES", Json::array()}}.dump(),
      Json{{"Pod", pod},
           {"Nodes", {{"items", {small_node("a"), small_node("b")}}}},
           {"NodeNames", nullptr}}
          .dump(),
      Json{{"Pod", pod}, {"Nodes", {{"items", {small_node("a")}}}}, {"NodeNames", {"x"}}}.dump(),
      Json{{"Pod", pod}, {"Nodes", {{"Items", {small_node("a")}}, {"items", {small_node("b")}}}}}
          .dump(),
      Json{{"Pod", pod}, {"Nodes", Json::object()}}.dump(),
      Json{{"Pod", pod}, {"Nodes", {{"items", nullptr}}}}.dump(),
      with_items(Json::array({Json{{"metadata", Json{{"Name", "m"}}}}})),
      with_items(Json::array(
          {Json{{"Metadata", Json{{"name", "m"}}}, {"metadata", Json{{"name", "n"}}}}})),
      with_items(Json::array(
          {Json{{"METADATA", Json{{"name", "m"}}}, {"Metadata", Json{{"name", "n"}}}}})),
      with_items(Json::array({Json{{"metadata", Json{{"name", 3}}}}})),
      with_items(Json::array({Json{{"metadata", Json{{"name", ""}}}}})),
      with_items(Json::array({Json{{"metadata", nullptr}}})),
      with_items(Json::array({Json{{"metadata", Json::array({1})}}})),
      with_items(Json::array({Json{{"kind", "Node"}}})),
      Json{{"Pod", pod}, {"Nodes", {{"items", {small_node("a"), 7, small_node("b")}}}}}.dump(),
      Json{{"Pod", pod}, {"Nodes", "x"}}.dump(),
      Json{{"Pod", pod}, {"Nodes", {{"items", "x"}}}}.dump(),
      Json{{"Pod", pod}, {"NodeNames", "n1"}}.dump(),
      Json{{"Pod", pod}, {"NodeNames", {"n1", 2}}}.dump(),
      Json{{"Pod", pod}}.dump(),
      Json{{"Pod", nullptr}, {"NodeNames", {"n1"}}}.dump(),
      Json{{"Pod", "p"}, {"NodeNames", {"n1"}}}.dump(),
      Json{{"NodeNames", {"n1"}}}.dump(),
      Json{{"Pod", Json::object()}, {"NodeNames", {"n1"}}}.dump(),
      // Duplicate keys (the DOM keeps the last), escapes, unicode, a BOM, whitespace.
      R"({"Pod":)" + pod.dump() + R"(,"NodeNames":["a"],"NodeNames":["b","c"]})",
      R"({"Pod":)" + pod.dump() + R"(,"nodeNames":["a"],"NodeNAMES":["b"]})",
      R"({"Pod":)" + pod.dump() +
          R"(,"Node\u004eames":["\u00e9t\u00e9","\ud83d\ude00","a\"b\\c\/d\n"]})",
      "\xEF\xBB\xBF"
      R"( { "Pod" : )" +
          pod.dump(2) + " ,\n\t\"NodeNames\" : [ \"n1\" ] } \r\n",
      R"({"Pod":)" + pod.dump() + R"(,"NodeNames":["caf\u00e9","n\u00001"]})",
      R"({"Pod":)" + pod.dump() +
          R"(,"NodeNames":["ok"],"extra":[1,-2.5e3,0.0,true,false,null,{"a":[[]]},1E+2]})",
      R"({"Pod":)" + pod.dump() + R"(,"NodeNames":["ok"],"big":123456789012345678901234567890})",
      // Invalid JSON of many kinds.
      "",
      " ",
      "{",
      "}",
      "[1,2]",
      "\"text\"",
      "null",
      "3",
      "{\"Pod\": ",
      "{nope",
      "{\"a\":1,}",
      "{\"a\" 1}",
      "{\"a\":01}",
      "{\"a\":-}",
      "{\"a\":1.}",
      "{\"a\":.5}",
      "{\"a\":1e}",
      "{\"a\":tru}",
      "{\"a\":nul}",
      "{\"a\":\"\\x\"}",
      "{\"a\":\"\\u12\"}",
      "{\"a\":\"\\ud800\"}",
      "{\"a\":\"\\udc00\"}",
      "{\"a\":\"\\ud800\\u0041\"}",
      "{\"a\":\"tab\there\"}",
      "{\"a\":\"\xC0\xAF\"}",
      "{\"a\":\"\xED\xA0\x80\"}",
      "{\"a\":\"\xF4\x90\x80\x80\"}",
      "{\"a\":\"\xE2\x82\"}",
      "{\"a\":1e400}",
      "{\"a\":-1e309}",
      "{\"a\":1e-400}",
      "{} {}",
      "{}x",
      "\xEF\xBB{}",
      "{\"a\":[1 2]}",
      "{\"a\":[1,]}",
      "{'a':1}",
      "{\"a\":1}/*c*/",
      "{\"Pod\":{\"metadata\":{\"name\":\"p\"}},\"NodeNames\":[\"n\"]",
      "[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]",
  };
  for (const auto& body : bodies) expect_same_decoding(body);
}

// Pods of every odd shape: the fast path reads a pruned copy of the Pod, which must parse the same.
TEST(WireFastPath, DecodesOddPodsLikeTheDom) {
  std::vector<Json> pods;
  const Json base = pod_object("p", "uid-p", 4, "n1", 1);
  pods.push_back(base);
  auto variant = [&](auto edit) {
    Json pod = base;
    edit(pod);
    pods.push_back(pod);
  };
  variant([](Json& p) { p["metadata"]["Name"] = "other"; });
  variant([](Json& p) { p["metadata"]["NAME"] = 5; });
  variant([](Json& p) {
    p["Metadata"] = p["metadata"];
    p["Metadata"]["name"] = "second";
  });
  variant([](Json& p) {
    p["METADATA"] = {{"name", "third"}};
    p.erase("metadata");
  });
  variant([](Json& p) { p["metadata"] = "text"; });
  variant([](Json& p) { p["metadata"]["uid"] = Json::object(); });
  variant([](Json& p) { p["metadata"]["namespace"] = nullptr; });
  variant([](Json& p) { p["metadata"]["deletionTimestamp"] = "2024-06-11T09:14:03Z"; });
  variant([](Json& p) { p["metadata"]["DeletionTimestamp"] = nullptr; });
  variant([](Json& p) {
    p["metadata"]["annotations"] = {{"ALIYUN_COM_GPU_MEM_IDX", "x"},
                                    {"aliyun_com_gpu_mem_idx", "3"}};
  });
  variant([](Json& p) {
    p["metadata"]["annotations"] = {{"ALIYUN_COM_GPU_MEM_POD", 7},
                                    {"ALIYUN_COM_GPU_MEM_ASSIGNED", "true"},
                                    {"ALIYUN_COM_GPU_MEM_ASSUME_TIME", "123"},
                                    {"ALIYUN_COM_GPU_MEM_DEV", "16"}};
  });
  variant([](Json& p) { p["metadata"]["annotations"] = {1, 2}; });
  variant([](Json& p) { p["metadata"]["Annotations"] = {{"ALIYUN_COM_GPU_MEM_IDX", "2"}}; });
  variant([](Json& p) { p["spec"]["NodeName"] = "n2"; });
  variant([](Json& p) { p["spec"]["nodeName"] = 3; });
  variant([](Json& p) { p["spec"]["containers"] = "x"; });
  variant([](Json& p) { p["spec"]["containers"] = {1}; });
  variant([](Json& p) {
    p["spec"]["Containers"] = p["spec"]["containers"];
    p["spec"]["Containers"][0]["resources"]["limits"]["aliyun.com/gpu-mem"] = "9";
  });
  variant([](Json& p) { p["spec"]["containers"].push_back(p["spec"]["containers"][0]); });
  variant([](Json& p) {
    p["spec"]["containers"][0]["resources"] = {{"requests", {{"ALIYUN.COM/GPU-MEM", "6"}}}};
  });
  variant([](Json& p) {
    p["spec"]["containers"][0]["resources"] = {{"Limits", {{"aliyun.com/gpu-mem", "1k"}}}};
  });
  variant([](Json& p) {
    p["spec"]["containers"][0]["resources"] = {{"limits", {{"aliyun.com/gpu-mem", 2.5}}}};
  });
  variant([](Json& p) {
    p["spec"]["containers"][0]["resources"] = {{"limits", {{"aliyun.com/gpu-mem", "-1"}}}};
  });
  variant([](Json& p) { p["spec"]["containers"][0]["resources"] = "none"; });
  variant([](Json& p) { p["spec"]["containers"][0]["name"] = 4; });
  variant([](Json& p) { p["spec"] = nullptr; });
  variant([](Json& p) { p["spec"] = {1, 2}; });
  variant([](Json& p) { p["status"] = {{"Phase", "Succeeded"}}; });
  variant([](Json& p) { p["status"] = {{"phase", false}}; });
  variant([](Json& p) { p["status"] = 1; });
  variant([](Json& p) { p["spec"]["env"] = {{"deep", {{"a", {1, 2, {{"b", nullptr}}}}}}}; });
  // CPU and memory: requests, limits, init containers, sidecars, overhead, and their odd shapes.
  auto resources = [](Json requests, Json limits) {
    Json r = Json::object();
    if (!requests.is_null()) r["requests"] = std::move(requests);
    if (!limits.is_null()) r["limits"] = std::move(limits);
    return r;
  };
  variant([&](Json& p) {
    p["spec"]["containers"][0]["resources"] = resources(
        {{"cpu", "250m"}, {"memory", "1Gi"}}, {{"aliyun.com/gpu-mem", "4"}, {"cpu", "1"}});
  });
  variant([&](Json& p) {
    p["spec"]["containers"][0]["resources"] =
        resources(nullptr, {{"CPU", "2"}, {"Memory", "3Gi"}, {"aliyun.com/gpu-mem", "4"}});
  });
  variant([&](Json& p) {
    p["spec"]["containers"][0]["resources"] =
        resources({{"cpu", "0.1m"}, {"memory", "1.5"}}, nullptr);
  });
  variant([&](Json& p) {
    p["spec"]["containers"][0]["resources"] = resources({{"cpu", "lots"}}, nullptr);
  });
  variant([&](Json& p) {
    p["spec"]["containers"][0]["resources"] = resources({{"memory", 7.5}}, nullptr);
  });
  variant([&](Json& p) {
    p["spec"]["containers"][0]["resources"] = resources({{"cpu", "5e15"}}, nullptr);
    p["spec"]["containers"].push_back(p["spec"]["containers"][0]);
  });
  variant([&](Json& p) {
    p["spec"]["initContainers"] = {
        {{"name", "proxy"},
         {"restartPolicy", "Always"},
         {"image", "envoy"},
         {"resources", resources({{"cpu", "500m"}, {"memory", "256Mi"}}, nullptr)}},
        {{"name", "migrate"},
         {"resources", resources(nullptr, {{"cpu", "2"}, {"memory", "2Gi"}})},
         {"command", {"sh", "-c", "true"}}},
        {{"name", "logs"},
         {"restartPolicy", "Always"},
         {"resources", resources({{"cpu", "250m"}}, nullptr)}},
        {{"name", "seed"},
         {"restartPolicy", "OnFailure"},
         {"resources", resources({{"cpu", "1800m"}, {"memory", "100Mi"}}, nullptr)}}};
    p["spec"]["overhead"] = {{"cpu", "250m"}, {"memory", "120Mi"}};
  });
  variant([&](Json& p) {
    p["spec"]["InitContainers"] = {{{"name", "i"},
                                    {"RestartPolicy", "Always"},
                                    {"Resources", resources({{"cpu", "3"}}, nullptr)}}};
  });
  variant([&](Json& p) {
    p["spec"]["initContainers"] = {{{"name", "i"}, {"restartPolicy", "Always"}}};
    p["spec"]["initcontainers"] = {
        {{"name", "j"}, {"resources", resources({{"cpu", "9"}}, nullptr)}}};
  });
  variant([&](Json& p) { p["spec"]["initContainers"] = {{{"name", "i"}, {"restartPolicy", 3}}}; });
  variant([&](Json& p) {
    p["spec"]["initContainers"] = {
        {{"name", "i"}, {"resources", resources({{"memory", "-1"}}, nullptr)}}};
  });
  variant([](Json& p) { p["spec"]["initContainers"] = "x"; });
  variant([](Json& p) { p["spec"]["initContainers"] = {1, 2}; });
  variant([](Json& p) { p["spec"]["initContainers"] = nullptr; });
  variant([](Json& p) {
    p["spec"]["overhead"] = {{"cpu", "100m"}, {"Memory", "1Mi"}, {"other", {{"x", 1}}}};
  });
  variant([](Json& p) {
    p["spec"]["Overhead"] = {{"cpu", "1"}};
    p["spec"]["overhead"] = {{"cpu", "2"}};
  });
  variant([](Json& p) { p["spec"]["overhead"] = {{"cpu", "-1"}}; });
  variant([](Json& p) { p["spec"]["overhead"] = "none"; });
  variant([](Json& p) { p["spec"]["overhead"] = nullptr; });
  for (const Json& pod : pods) {
    expect_same_decoding(Json{{"Pod", pod}, {"NodeNames", {"n1"}}}.dump());
  }
}

TEST(WireFastPath, DeepNestingIsNotACrash) {
  const std::string deep = std::string(200000, '[') + std::string(200000, ']');
  const Json pod = pod_object("p", "uid-p", 4);
  expect_same_decoding(R"({"Pod":)" + pod.dump() + R"(,"NodeNames":["n"],"x":)" + deep + "}");
}

// Found by fuzz/extender_args_fuzzer: nlohmann stops at a NUL byte, so the DOM path accepted a
// valid body followed by "\0" and anything at all, which the fast path (rightly) rejects.
TEST(WireFastPath, NulByteAfterTheBodyIsRejected) {
  const Json pod = pod_object("p", "uid-p", 4);
  const std::string body = Json{{"Pod", pod}, {"NodeNames", {"n1"}}}.dump();
  EXPECT_TRUE(expect_same_decoding(body));
  EXPECT_FALSE(expect_same_decoding(body + std::string("\0\0junk", 6)));
  EXPECT_FALSE(expect_same_decoding(body + std::string(1, '\0')));
  const std::string bind = R"({"PodName":"p","PodNamespace":"ns","PodUID":"u","Node":"n"})";
  EXPECT_NO_THROW(wire::decode_binding_args(bind));
  EXPECT_THROW(wire::decode_binding_args(bind + std::string("\0}", 2)), kube::BadInput);
}

TEST(WireFastPath, RandomMutationsDecodeLikeTheDom) {
  const Json pod = pod_object("p", "uid-p", 4);
  Json with_cpu = pod;
  with_cpu["spec"]["containers"][0]["resources"]["requests"] = {{"cpu", "1500m"},
                                                                {"memory", "2Gi"}};
  with_cpu["spec"]["initContainers"] = {
      {{"name", "mesh"},
       {"restartPolicy", "Always"},
       {"resources", {{"requests", {{"cpu", "1"}, {"memory", "64Mi"}}}}}},
      {{"name", "init"}, {"resources", {{"limits", {{"cpu", "3"}, {"memory", "1Gi"}}}}}}};
  with_cpu["spec"]["overhead"] = {{"cpu", "100m"}, {"memory", "10Mi"}};
  const std::vector<std::string> seeds = {
      Json{{"Pod", with_cpu}, {"NodeNames", {"n1", "n2"}}}.dump(),
      Json{{"Pod", pod}, {"Nodes", nullptr}, {"NodeNames", {"n1", "n\u00e92", "n3"}}}.dump(),
      Json{{"Pod", pod},
           {"Nodes", {{"items", {small_node("a"), small_node("b")}}}},
           {"NodeNames", nullptr}}
          .dump(),
  };
  static constexpr char kInteresting[] = "{}[]\",:\\/ue0-+.1 \n\x80\xC3\xA9\xED\xF0tfn";
  std::mt19937 rng(20240611);
  int decoded = 0;
  for (int round = 0; round < 4000; ++round) {
    std::string body = seeds[static_cast<std::size_t>(round) % seeds.size()];
    const int edits = 1 + static_cast<int>(rng() % 3);
    for (int e = 0; e < edits && !body.empty(); ++e) {
      const std::size_t at = rng() % body.size();
      const char c = kInteresting[rng() % (sizeof kInteresting - 1)];
      switch (rng() % 4) {
        case 0:
          body[at] = c;
          break;
        case 1:
          body.insert(body.begin() + static_cast<std::ptrdiff_t>(at), c);
          break;
        case 2:
          body.erase(at, 1 + rng() % 4);
          break;
        default:
          body.resize(at);
          break;
      }
    }
    decoded += expect_same_decoding(body);
    if (::testing::Test::HasFailure()) break;
  }
  EXPECT_GT(decoded, 0);  // some mutations stay valid, so both success paths are compared too
}

// The encoders as they were, through nlohmann's DOM.
std::string dom_filter_result(const wire::FilterResult& result) {
  auto string_map = [](const std::map<std::string, std::string>& values) {
    Json object = Json::object();
    for (const auto& [key, value] : values) object[key] = value;
    return object;
  };
  Json body;
  if (result.nodes) {
    body["Nodes"] = {{"apiVersion", "v1"},
                     {"kind", "NodeList"},
                     {"metadata", Json::object()},
                     {"items", *result.nodes}};
  } else {
    body["Nodes"] = nullptr;
  }
  body["NodeNames"] = result.node_names.strings();
  body["FailedNodes"] = string_map(result.failed);
  body["FailedAndUnresolvableNodes"] = string_map(result.failed_unresolvable);
  body["Error"] = result.error;
  return body.dump(-1, ' ', false, Json::error_handler_t::replace);
}

std::string dom_priorities(const wire::HostPriorityList& priorities) {
  Json body = Json::array();
  for (const auto& priority : priorities)
    body.push_back({{"Host", priority.host}, {"Score", priority.score}});
  return body.dump(-1, ' ', false, Json::error_handler_t::replace);
}

TEST(WireFastPath, EncodesByteForByteLikeTheDom) {
  const std::vector<std::string> awkward = {"",
                                            "n1",
                                            "quote\"back\\slash/",
                                            "ctl\x01\x1f\x7f\b\f\n\r\t",
                                            "caf\xC3\xA9 \xF0\x9F\x98\x80",
                                            "bad\xC3",
                                            "bad\xFF\xFEutf8",
                                            "\xED\xA0\x80surrogate",
                                            std::string("nul\0byte", 8)};
  wire::FilterResult result;
  EXPECT_EQ(wire::encode_filter_result(result), dom_filter_result(result));
  wire::HostPriorityList priorities;
  EXPECT_EQ(wire::encode_priorities(priorities), dom_priorities(priorities));
  std::int64_t score = -3;
  for (const auto& text : awkward) {
    result.node_names.push_back(text);
    result.failed[text + "f"] = text;
    result.failed_unresolvable[text + "u"] = "reason " + text;
    result.error = text;
    priorities.push_back(text, score);
    score = score * 7 + 1;
  }
  priorities.push_back("max", INT64_MAX);
  priorities.push_back("min", INT64_MIN);
  EXPECT_EQ(wire::encode_filter_result(result), dom_filter_result(result));
  EXPECT_EQ(wire::encode_priorities(priorities), dom_priorities(priorities));
  result.nodes = std::vector<Json>{small_node("a"), small_node("b\xC3")};
  EXPECT_EQ(wire::encode_filter_result(result), dom_filter_result(result));
}

TEST(WireFastPath, EchoesNodeTextsVerbatim) {
  const Json pod = pod_object("p", "uid-p", 4);
  const Json items = {small_node("a"), small_node("b")};
  const std::string body = Json{{"Pod", pod}, {"Nodes", {{"items", items}}}}.dump(2);
  const ExtenderArgs args = wire::decode_extender_args_body(body, kube::ResourceNames{});
  ASSERT_TRUE(args.node_texts);
  wire::FilterResult result;
  result.node_names = {"a", "b"};
  result.node_texts =
      std::vector<std::string_view>{(*args.node_texts)[0].json, (*args.node_texts)[1].json};
  result.node_source = args.node_source;
  const Json reply = Json::parse(wire::encode_filter_result(result));
  EXPECT_EQ(reply["Nodes"]["items"], items);
  EXPECT_EQ(reply["Nodes"]["kind"], "NodeList");
}

// The reply of a full-Node filter is as large as its request: written whole, it would be one
// more body-sized buffer per filter. FilterReply writes the same bytes from the body's texts,
// copying none of them.
TEST(WireFastPath, AFullNodeReplyIsWrittenFromTheBodyWithoutACopy) {
  std::vector<Json> items;
  for (int i = 0; i < 40; ++i) {
    Json node = small_node("n" + std::to_string(i));
    node["metadata"]["annotations"] = {{"padding", std::string(2000 + i, 'x')}};
    items.push_back(std::move(node));
  }
  const std::string body =
      Json{{"Pod", pod_object("p", "uid-p", 4)}, {"Nodes", {{"items", items}}}}.dump();
  ExtenderArgs args = wire::decode_extender_args_body(body, kube::ResourceNames{});
  ASSERT_TRUE(args.node_texts);
  wire::FilterResult result;
  result.node_texts.emplace();
  for (std::size_t i = 0; i < args.node_texts->size(); i += 2) {  // every other node survives
    result.node_names.push_back((*args.node_texts)[i].name);
    result.node_texts->push_back((*args.node_texts)[i].json);
  }
  result.failed["n1"] = "no GPU with enough free memory";
  result.node_source = args.node_source;
  const std::string whole = wire::encode_filter_result(result);
  args = {};  // the reply alone keeps the body's text
  const wire::FilterReply reply{std::move(result)};
  ASSERT_EQ(reply.size(), whole.size());
  EXPECT_LT(reply.owned_bytes(), whole.size() / 10);  // the texts are not copied
  for (const std::size_t chunk :
       {std::size_t{1}, std::size_t{7}, std::size_t{4096}, whole.size()}) {
    std::string written;
    std::string buffer(chunk, '\0');
    while (written.size() < reply.size()) {
      const std::size_t n = reply.copy(written.size(), buffer);
      ASSERT_GT(n, 0u);
      written.append(buffer, 0, n);
    }
    EXPECT_EQ(written, whole) << "in chunks of " << chunk;
    EXPECT_EQ(reply.copy(reply.size(), buffer), 0u);
  }
  // Without node texts (nodeCacheCapable), or with none surviving, the same bytes too.
  std::vector<wire::FilterResult> others(2);
  others[0].node_names.push_back("a");
  others[0].failed["b"] = "reason";
  others[1].node_texts.emplace();
  for (wire::FilterResult& other : others) {
    const std::string expected = wire::encode_filter_result(other);
    const wire::FilterReply small{std::move(other)};
    std::string buffer(expected.size() + 8, '\0');
    buffer.resize(small.copy(0, buffer));
    EXPECT_EQ(buffer, expected);
  }
}

}  // namespace
}  // namespace gpushare::testing
