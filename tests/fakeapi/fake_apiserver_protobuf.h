#pragma once
// The protobuf bodies the fake API server reads. kubectl's typed commands (`kubectl create
// configmap`) send `application/vnd.kubernetes.protobuf`, and client-go has no fallback to JSON
// for protobuf (only for CBOR), so a server must read it. The fake decodes the one kind that
// kubectl creates that way among those it serves: a v1 ConfigMap (every field of it, and of its
// ObjectMeta except ownerReferences and managedFields).

#include <nlohmann/json.hpp>
#include <string_view>

namespace gpushare::testing::fakeapi {

inline constexpr std::string_view kProtobufMediaType = "application/vnd.kubernetes.protobuf";

// The object of a "k8s\0"-prefixed runtime.Unknown envelope, as JSON. Throws ApiError 415 for a
// kind it does not decode and 400 for a malformed body.
nlohmann::json decode_protobuf_object(std::string_view body);

}  // namespace gpushare::testing::fakeapi
