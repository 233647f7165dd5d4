#pragma once
// The device plugin's API-server calls: pods on this node, the ASSIGNED patch, Events, the
// unhealthy-gpu ConfigMap and the node's gpu-count capacity. Thread-safe (ApiClient is).

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "gpushare/apiclient/api_client.h"

namespace gpushare::deviceplugin {

class Cluster {
 public:
  Cluster(apiclient::ApiClient& client, std::string node_name);

  const std::string& node_name() const { return node_; }

  // Every pod bound to this node (GET pods?fieldSelector=spec.nodeName=<node>).
  apiclient::Result<std::vector<nlohmann::json>> pods_on_node();

  // Strategic-merge patch of a pod's annotations, conditional on `resource_version` when given
  // (stale: 409 Conflict). A nullopt value deletes the key.
  apiclient::Result<nlohmann::json> patch_pod(
      std::string_view namespace_name, std::string_view name,
      const std::map<std::string, std::optional<std::string>>& annotations,
      std::optional<std::string_view> resource_version);

  // A Warning Event about a pod (reason, message), source component gpushare-device-plugin.
  apiclient::Result<nlohmann::json> warn_pod(std::string_view namespace_name, std::string_view name,
                                             std::string_view uid, std::string_view reason,
                                             std::string_view message);

  // The GPU indices listed in ConfigMap <namespace>/unhealthy-gpu-<node> (data "gpus"); empty when
  // it does not exist.
  apiclient::Result<std::set<int>> unhealthy_indices(std::string_view namespace_name);
  // Adds `indices` to that ConfigMap (created if missing); indices already listed stay.
  apiclient::Result<std::set<int>> add_unhealthy_indices(std::string_view namespace_name,
                                                         const std::set<int>& indices);

  // Sets status.capacity[<count_name>] of this node to `count` (kubelet copies it to allocatable).
  apiclient::Result<nlohmann::json> set_gpu_count(std::string_view count_name, std::int64_t count);

 private:
  apiclient::ApiClient& client_;
  std::string node_;
};

}  // namespace gpushare::deviceplugin
