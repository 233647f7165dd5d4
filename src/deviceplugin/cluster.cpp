#include "gpushare/deviceplugin/cluster.h"

#include <fmt/format.h>

#include <chrono>
#include <ctime>

#include "gpushare/apiclient/pod_writes.h"
#include "gpushare/kube/annotations.h"

namespace gpushare::deviceplugin {

using apiclient::Result;
using nlohmann::json;

namespace {

std::string configmap_name(std::string_view node) {
  return fmt::format("{}{}", kube::kUnhealthyConfigMapPrefix, node);
}

std::set<int> parse_indices(std::string_view text) {
  std::set<int> out;
  std::size_t start = 0;
  while (start <= text.size()) {
    std::size_t end = text.find(',', start);
    if (end == std::string_view::npos) end = text.size();
    std::string entry(text.substr(start, end - start));
    const auto first = entry.find_first_not_of(" \t\n");
    const auto last = entry.find_last_not_of(" \t\n");
    if (first != std::string::npos) {
      entry = entry.substr(first, last - first + 1);
      try {
        std::size_t used = 0;
        const int index = std::stoi(entry, &used);
        if (used == entry.size() && index >= 0) out.insert(index);
      } catch (const std::exception&) {
        // Not an index: the extender ignores it too.
      }
    }
    start = end + 1;
  }
  return out;
}

std::string join(const std::set<int>& indices) {
  std::string out;
  for (const int index : indices) out += (out.empty() ? "" : ",") + std::to_string(index);
  return out;
}

std::string rfc3339_now() {
  const auto now = std::chrono::system_clock::now();
  const std::time_t t = std::chrono::system_clock::to_time_t(now);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buffer[32];
  std::strftime(buffer, sizeof buffer, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buffer;
}

}  // namespace

Cluster::Cluster(apiclient::ApiClient& client, std::string node_name)
    : client_(client), node_(std::move(node_name)) {}

Result<std::vector<json>> Cluster::pods_on_node() {
  apiclient::RequestOptions options;
  options.query.emplace_back("fieldSelector", "spec.nodeName=" + node_);
  auto list = client_.get("/api/v1/pods", options);
  if (!list.ok()) return list.error();
  std::vector<json> pods;
  if (const auto items = list.value().find("items");
      items != list.value().end() && items->is_array()) {
    for (auto& item : *items) pods.push_back(std::move(item));
  }
  return pods;
}

Result<json> Cluster::patch_pod(
    std::string_view namespace_name, std::string_view name,
    const std::map<std::string, std::optional<std::string>>& annotations,
    std::optional<std::string_view> resource_version) {
  return apiclient::patch_pod_annotations(client_, namespace_name, name, annotations,
                                          resource_version);
}

Result<json> Cluster::warn_pod(std::string_view namespace_name, std::string_view name,
                               std::string_view uid, std::string_view reason,
                               std::string_view message) {
  const std::string now = rfc3339_now();
  const json event = {
      {"apiVersion", "v1"},
      {"kind", "Event"},
      {"metadata",
       {{"generateName", fmt::format("{}.", name)}, {"namespace", std::string(namespace_name)}}},
      {"involvedObject",
       {{"apiVersion", "v1"},
        {"kind", "Pod"},
        {"namespace", std::string(namespace_name)},
        {"name", std::string(name)},
        {"uid", std::string(uid)}}},
      {"reason", std::string(reason)},
      {"message", std::string(message)},
      {"type", "Warning"},
      {"count", 1},
      {"firstTimestamp", now},
      {"lastTimestamp", now},
      {"source", {{"component", "gpushare-device-plugin"}, {"host", node_}}},
  };
  return client_.post(fmt::format("/api/v1/namespaces/{}/events", namespace_name), event);
}

Result<std::set<int>> Cluster::unhealthy_indices(std::string_view namespace_name) {
  auto configmap = client_.get(
      fmt::format("/api/v1/namespaces/{}/configmaps/{}", namespace_name, configmap_name(node_)));
  if (!configmap.ok()) {
    if (configmap.error().is_not_found()) return std::set<int>{};
    return configmap.error();
  }
  const json& data = configmap.value().value("data", json::object());
  const auto gpus = data.find("gpus");
  if (gpus == data.end() || !gpus->is_string()) return std::set<int>{};
  return parse_indices(gpus->get<std::string>());
}

Result<std::set<int>> Cluster::add_unhealthy_indices(std::string_view namespace_name,
                                                     const std::set<int>& indices) {
  const std::string name = configmap_name(node_);
  const std::string path = fmt::format("/api/v1/namespaces/{}/configmaps/{}", namespace_name, name);
  for (int attempt = 0; attempt < 5; ++attempt) {
    auto current = client_.get(path);
    if (!current.ok() && !current.error().is_not_found()) return current.error();
    if (!current.ok()) {
      const json body = {{"apiVersion", "v1"},
                         {"kind", "ConfigMap"},
                         {"metadata", {{"name", name}, {"namespace", std::string(namespace_name)}}},
                         {"data", {{"gpus", join(indices)}}}};
      auto created =
          client_.post(fmt::format("/api/v1/namespaces/{}/configmaps", namespace_name), body);
      if (created.ok()) return indices;
      if (created.error().is_already_exists()) continue;
      return created.error();
    }
    const json& data = current.value().value("data", json::object());
    std::set<int> merged = indices;
    if (const auto gpus = data.find("gpus"); gpus != data.end() && gpus->is_string()) {
      for (const int index : parse_indices(gpus->get<std::string>())) merged.insert(index);
    }
    // A whole-object update (RBAC grants configmaps get/create/update), conditional on the
    // resourceVersion read.
    json updated = current.value();
    updated["data"]["gpus"] = join(merged);
    auto patched = client_.put(path, updated);
    if (patched.ok()) return merged;
    if (!patched.error().is_conflict()) return patched.error();
  }
  return apiclient::ApiError{apiclient::ErrorKind::kStatus,
                             409,
                             "Conflict",
                             "the unhealthy-gpu ConfigMap kept changing",
                             {},
                             {},
                             {}};
}

Result<json> Cluster::set_gpu_count(std::string_view count_name, std::int64_t count) {
  const json patch = {
      {"status", {{"capacity", {{std::string(count_name), std::to_string(count)}}}}}};
  return client_.patch(fmt::format("/api/v1/nodes/{}/status", node_), patch,
                       apiclient::PatchType::kMerge);
}

}  // namespace gpushare::deviceplugin
