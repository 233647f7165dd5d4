// The kube decoders read JSON text (simdjson): edges a tree built by nlohmann never shows them,
// such as duplicate keys, keys spelt with escapes, keys differing only in case, numbers where
// quantities belong, nulls and numbers out of range.

#include <gtest/gtest.h>

#include <string>

#include "gpushare/core/quantity.h"
#include "gpushare/kube/node_info.h"
#include "gpushare/kube/pod_info.h"

namespace gpushare::kube {
namespace {

const ResourceNames kNames;

// A pod whose only container asks for `memory` of aliyun.com/gpu-mem (the JSON text of a value).
std::string pod_text(const std::string& metadata_extra, const std::string& gpu_memory = "\"4\"") {
  return R"({"metadata":{"name":"p","namespace":"ml","uid":"u1")" + metadata_extra +
         R"(},"spec":{"containers":[{"name":"c","resources":{"limits":{"aliyun.com/gpu-mem":)" +
         gpu_memory + R"(}}}]}})";
}

std::string error_of(const std::string& text) {
  try {
    decode_pod_text(text, kNames);
  } catch (const BadInput& e) {
    return e.what();
  }
  return "";
}

TEST(KubeTextDecoding, DecodesAPodFromText) {
  const PodInfo pod = decode_pod_text(pod_text(""), kNames);
  EXPECT_EQ(pod.key(), "ml/p");
  EXPECT_EQ(pod.uid, "u1");
  EXPECT_EQ(pod.request, 4);
}

TEST(KubeTextDecoding, InvalidJsonIsBadInput) {
  EXPECT_NE(error_of("{\"metadata\":"), "");
  EXPECT_NE(error_of(pod_text("").substr(1)), "");
  EXPECT_NE(error_of(pod_text(",\"x\":tru")), "");
  EXPECT_EQ(error_of("[1]"), "pod must be an object, got array");
}

TEST(KubeTextDecoding, DuplicateKeysKeepTheLast) {
  EXPECT_EQ(decode_pod_text(pod_text(R"(,"name":"second")"), kNames).name, "second");
  const PodInfo pod = decode_pod_text(
      pod_text(R"(,"annotations":{"ALIYUN_COM_GPU_MEM_IDX":"1","ALIYUN_COM_GPU_MEM_IDX":"3"})"),
      kNames);
  EXPECT_EQ(pod.gpu_index, 3);
}

TEST(KubeTextDecoding, EscapedKeysAndValuesAreUnescaped) {
  // "n\u0061me" is "name"; "\u00e9" is é in UTF-8.
  const PodInfo pod = decode_pod_text(
      R"({"metadata":{"n\u0061me":"caf\u00e9","uid":"u\"1\\"},"spec":{"nodeName":"n\/1"}})",
      kNames);
  EXPECT_EQ(pod.name, "caf\xC3\xA9");
  EXPECT_EQ(pod.uid, "u\"1\\");
  EXPECT_EQ(pod.node_name, "n/1");
  const PodInfo annotated =
      decode_pod_text(pod_text(R"(,"annotations":{"ALIYUN_COM_GPU_MEM_\u0050OD":"7"})"), kNames);
  EXPECT_EQ(annotated.annotated_request, 7);
}

TEST(KubeTextDecoding, KeysMatchIgnoringCaseButAnExactMatchWins) {
  EXPECT_EQ(decode_pod_text(R"({"METADATA":{"NAME":"upper"}})", kNames).name, "upper");
  // Exact "name" wins over "Name" wherever it appears.
  EXPECT_EQ(decode_pod_text(R"({"metadata":{"Name":"x","name":"exact"}})", kNames).name, "exact");
  EXPECT_EQ(decode_pod_text(R"({"metadata":{"name":"exact","Name":"x"}})", kNames).name, "exact");
  // Without an exact match, the byte-wise smallest spelling ("NAME" < "Name" < "nAME").
  EXPECT_EQ(decode_pod_text(R"({"metadata":{"nAME":"c","Name":"b","NAME":"a"}})", kNames).name,
            "a");
  // Annotations are the device plugin's exact keys: another case is another key.
  EXPECT_FALSE(decode_pod_text(pod_text(R"(,"annotations":{"aliyun_com_gpu_mem_idx":"2"})"), kNames)
                   .gpu_index);
}

TEST(KubeTextDecoding, NumbersAsQuantities) {
  EXPECT_EQ(decode_pod_text(pod_text("", "8"), kNames).request, 8);
  EXPECT_EQ(decode_pod_text(pod_text("", "-0"), kNames).request, 0);
  EXPECT_EQ(
      error_of(pod_text("", "-1")),
      "pod ml/p container c limits aliyun.com/gpu-mem: negative quantities are not allowed here");
  EXPECT_EQ(error_of(pod_text("", "9223372036854776")),
            "pod ml/p container c limits aliyun.com/gpu-mem: out of range");
  EXPECT_EQ(error_of(pod_text("", "18446744073709551615")),
            "pod ml/p container c limits aliyun.com/gpu-mem: out of range");
  EXPECT_EQ(error_of(pod_text("", "1.5")),
            "pod ml/p container c limits aliyun.com/gpu-mem must be a quantity string, got number");
  EXPECT_EQ(
      error_of(pod_text("", "true")),
      "pod ml/p container c limits aliyun.com/gpu-mem must be a quantity string, got boolean");
  EXPECT_EQ(decode_pod_text(pod_text("", "null"), kNames).request, 0);
}

TEST(KubeTextDecoding, NullsAreAbsent) {
  const PodInfo pod = decode_pod_text(
      R"({"metadata":{"name":"p","namespace":null,"uid":null,"annotations":null,"deletionTimestamp":null},"spec":null,"status":null})",
      kNames);
  EXPECT_EQ(pod.key(), "default/p");
  EXPECT_EQ(pod.uid, "");
  EXPECT_FALSE(pod.terminating);
  EXPECT_TRUE(decode_pod_text(
                  R"({"metadata":{"name":"p","deletionTimestamp":"2024-01-01T00:00:00Z"}})", kNames)
                  .terminating);
}

TEST(KubeTextDecoding, IntegersBeyondSixtyFourBitsAreInvalidJson) {
  // nlohmann read them as doubles; simdjson refuses them (docs/design.md, "Decoding JSON").
  EXPECT_NE(error_of(pod_text(R"(,"generation":123456789012345678901234567890)")), "");
}

TEST(KubeTextDecoding, NestingUpToGosLimitIsAccepted) {
  // json::kMaxDepth is 10 000, as Go's encoding/json; simdjson's own default would be 1 024.
  auto nested = [](std::size_t depth) { return std::string(depth, '[') + std::string(depth, ']'); };
  EXPECT_EQ(decode_pod_text(pod_text(",\"x\":" + nested(5000)), kNames).name, "p");
  EXPECT_NE(error_of(pod_text(",\"x\":" + nested(20000))), "");
}

TEST(KubeTextDecoding, HugeAnnotationsAreClampedWithAWarning) {
  const PodInfo pod = decode_pod_text(
      pod_text(R"(,"annotations":{"ALIYUN_COM_GPU_MEM_POD":"99999999999999999999999999"})"),
      kNames);
  EXPECT_EQ(pod.annotated_request, core::kMaxGpuMemoryClaim);
  EXPECT_NE(pod.annotation_warning, "");
}

TEST(KubeTextDecoding, NodesAndConfigMapsFromTreesMatchTheirText) {
  const Json node = {
      {"metadata", {{"name", "n1"}, {"labels", {{"nvidia.com/gpu.product", "T4"}}}}},
      {"status", {{"capacity", {{"aliyun.com/gpu-mem", 32}, {"aliyun.com/gpu-count", "2"}}}}}};
  const core::NodeSpec spec = parse_node(node, kNames);
  EXPECT_EQ(spec.name, "n1");
  EXPECT_EQ(spec.gpu_model, "T4");
  EXPECT_EQ(spec.gpu_count, 2);
  EXPECT_EQ(spec.memory_per_gpu, 16);
  const Json too_big = {
      {"metadata", {{"name", "n2"}}},
      {"status", {{"capacity", {{"aliyun.com/gpu-mem", 18446744073709551615ull}}}}}};
  EXPECT_EQ(parse_node(too_big, kNames).misconfiguration, "aliyun.com/gpu-mem is not a quantity");
  const Json configmap = {
      {"metadata", {{"name", "unhealthy-gpu-n1"}, {"namespace", "kube-system"}}},
      {"data", {{"gpus", "0,1"}, {"gpu", "2"}, {"count", 3}}}};
  const auto unhealthy = parse_unhealthy_configmap(configmap);
  ASSERT_TRUE(unhealthy);
  EXPECT_EQ(unhealthy->indices, (std::vector<int>{0, 1}));
  EXPECT_EQ(unhealthy->unknown_keys,
            (std::vector<std::pair<std::string, std::string>>{{"count", "3"}, {"gpu", "2"}}));
}

}  // namespace
}  // namespace gpushare::kube
