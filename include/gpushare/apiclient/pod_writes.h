#pragma once
// The two writes the extender makes: binding a pod to a node (optionally carrying the gpushare
// annotations) and patching a pod's annotations.

#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "gpushare/apiclient/api_client.h"

namespace gpushare::apiclient {

// {"apiVersion":"v1","kind":"Binding","metadata":{name,namespace,uid,annotations},
//  "target":{"apiVersion":"v1","kind":"Node","name":node}}; empty uid/annotations are omitted.
Json binding_body(std::string_view namespace_name, std::string_view pod_name,
                  std::string_view pod_uid, std::string_view node_name,
                  const std::map<std::string, std::string>& annotations);

// POST /api/v1/namespaces/{ns}/pods/{name}/binding. Returns the server's Status (201). Not
// retried unless `options.retry` says so: a lost reply may hide a bind that happened.
Result<Json> bind_pod(ApiClient& client, std::string_view namespace_name, std::string_view pod_name,
                      std::string_view pod_uid, std::string_view node_name,
                      const std::map<std::string, std::string>& annotations,
                      RequestOptions options = {});

// {"metadata":{"annotations":{...},"resourceVersion":rv}}; a nullopt value deletes the key.
Json annotation_patch_body(const std::map<std::string, std::optional<std::string>>& annotations,
                           std::optional<std::string_view> resource_version = {});

// PATCH /api/v1/namespaces/{ns}/pods/{name} (strategic merge). With a resourceVersion the patch
// is conditional: a stale one yields 409 Conflict. Returns the patched pod.
Result<Json> patch_pod_annotations(
    ApiClient& client, std::string_view namespace_name, std::string_view pod_name,
    const std::map<std::string, std::optional<std::string>>& annotations,
    std::optional<std::string_view> resource_version = {}, RequestOptions options = {});

// Same, setting every given key (the shape kube::bind_annotations returns).
Result<Json> patch_pod_annotations(ApiClient& client, std::string_view namespace_name,
                                   std::string_view pod_name,
                                   const std::map<std::string, std::string>& annotations,
                                   std::optional<std::string_view> resource_version = {},
                                   RequestOptions options = {});

}  // namespace gpushare::apiclient
