#pragma once
// Where the plugin's /inspect JSON comes from: the extender, or the API server.

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gpushare/core/dra.h"
#include "gpushare/kube/json_access.h"
#include "gpushare/kube/resource_names.h"

namespace gpushare::apiclient {
class ApiClient;
}

namespace gpushare::cmd::inspect {

struct ExtenderSource {
  // http(s)://host:port, optionally followed by /gpushare-scheduler or the full /inspect path.
  std::string url;
  bool insecure_skip_tls_verify = false;
  std::chrono::seconds timeout{30};
};

// The inspect URL for `base` and an optional node: appends what is missing of
// /gpushare-scheduler/inspect[/NODE]. Throws InspectError for a URL that is not http(s).
std::string inspect_url(std::string_view base, const std::optional<std::string>& node);

// GETs the extender's /inspect (or /inspect/NODE). Throws InspectError with a message a person
// can act on (connection refused, 404 for an unknown node, not JSON).
kube::Json fetch_from_extender(const ExtenderSource& source,
                               const std::optional<std::string>& node);

// GETs the extender's /gpushare-scheduler/consolidation (`source.url` as for inspect_url).
// Throws InspectError with the extender's own message when it answers otherwise than 200
// (404: consolidation is off).
kube::Json fetch_consolidation(const ExtenderSource& source);

// The consolidation report as text: the plan's moves, the move in flight, why none starts.
std::string render_consolidation(const kube::Json& report);

// What API mode reads of Dynamic Resource Allocation (resource.k8s.io/v1), decoded with the
// extender's own decoders (kube/dra_objects.h): the slices publishing GPUs of `config.driver`
// and every ResourceClaim.
struct DraObjects {
  core::DraConfig config;
  std::vector<core::DraSlice> slices;
  std::vector<core::DraClaim> claims;
  bool whole_cluster = true;  // false: the slices of one node only (its problems only are told)
};

// Builds the /inspect JSON from API objects with the extender's own model and accounting
// (kube::parse_node, parse_pod, allocation_of, DraState, then inspect::Document of
// document.h, with each pod's phase). Objects that do not parse are skipped with a line in
// `warnings`, as are problems in the DRA objects (a claim on a device no slice publishes, ...).
kube::Json snapshot_from_objects(const std::vector<kube::Json>& nodes,
                                 const std::vector<kube::Json>& pods,
                                 const std::vector<kube::Json>& configmaps, const DraObjects& dra,
                                 const kube::ResourceNames& names,
                                 std::vector<std::string>& warnings);

// Lists nodes, pods (not finished), unhealthy-gpu ConfigMaps and, where the API server serves
// resource.k8s.io/v1, the ResourceSlices of `dra.driver` and all ResourceClaims, paged, and
// builds the snapshot. With `node`, only that node, its pods and its slices. Throws InspectError
// on API errors (a forbidden ConfigMap or DRA list only adds a warning: GPU health, or the DRA
// GPUs and claims, are then unknown; resource.k8s.io/v1 not served adds nothing).
kube::Json fetch_from_api(apiclient::ApiClient& client, const kube::ResourceNames& names,
                          const core::DraConfig& dra, const std::optional<std::string>& node,
                          std::vector<std::string>& warnings);

}  // namespace gpushare::cmd::inspect
