#include "gpushare/apiclient/pod_writes.h"

namespace gpushare::apiclient {

Json binding_body(std::string_view namespace_name, std::string_view pod_name,
                  std::string_view pod_uid, std::string_view node_name,
                  const std::map<std::string, std::string>& annotations) {
  Json metadata{{"name", pod_name}, {"namespace", namespace_name}};
  // The UID makes the bind a precondition (1.27+): a re-created pod of the same name gets 409.
  if (!pod_uid.empty()) metadata["uid"] = pod_uid;
  if (!annotations.empty()) metadata["annotations"] = annotations;
  return Json{{"apiVersion", "v1"},
              {"kind", "Binding"},
              {"metadata", std::move(metadata)},
              {"target", {{"apiVersion", "v1"}, {"kind", "Node"}, {"name", node_name}}}};
}

Result<Json> bind_pod(ApiClient& client, std::string_view namespace_name, std::string_view pod_name,
                      std::string_view pod_uid, std::string_view node_name,
                      const std::map<std::string, std::string>& annotations,
                      RequestOptions options) {
  const std::string path = namespaced_path("/api/v1", namespace_name, "pods", pod_name, "binding");
  return client.post(path, binding_body(namespace_name, pod_name, pod_uid, node_name, annotations),
                     std::move(options));
}

Json annotation_patch_body(const std::map<std::string, std::optional<std::string>>& annotations,
                           std::optional<std::string_view> resource_version) {
  Json values = Json::object();
  for (const auto& [key, value] : annotations) {
    values[key] = value ? Json(*value) : Json(nullptr);  // null deletes the key
  }
  Json metadata{{"annotations", std::move(values)}};
  if (resource_version) metadata["resourceVersion"] = *resource_version;
  return Json{{"metadata", std::move(metadata)}};
}

Result<Json> patch_pod_annotations(
    ApiClient& client, std::string_view namespace_name, std::string_view pod_name,
    const std::map<std::string, std::optional<std::string>>& annotations,
    std::optional<std::string_view> resource_version, RequestOptions options) {
  const std::string path = namespaced_path("/api/v1", namespace_name, "pods", pod_name);
  return client.patch(path, annotation_patch_body(annotations, resource_version),
                      PatchType::kStrategicMerge, std::move(options));
}

Result<Json> patch_pod_annotations(ApiClient& client, std::string_view namespace_name,
                                   std::string_view pod_name,
                                   const std::map<std::string, std::string>& annotations,
                                   std::optional<std::string_view> resource_version,
                                   RequestOptions options) {
  std::map<std::string, std::optional<std::string>> values(annotations.begin(), annotations.end());
  return patch_pod_annotations(client, namespace_name, pod_name, values, resource_version,
                               std::move(options));
}

}  // namespace gpushare::apiclient
