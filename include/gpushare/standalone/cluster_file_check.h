#pragma once
// Standalone mode reads a cluster file once and serves it: a mistake in it would be served as
// truth (a misspelt `nodname:` leaves a pod pending, `gpu:` in an unhealthy-gpu ConfigMap puts
// the GPU back in service). This finds such mistakes, with where they are, so that the
// extender can refuse to start naming the line.

#include <string>
#include <string_view>
#include <vector>

#include "gpushare/kube/json_access.h"
#include "gpushare/kube/resource_names.h"

namespace gpushare::standalone {

struct ClusterFileProblem {
  // Where, from the document's root: object keys and array indices (as decimal strings).
  std::vector<std::string> path;
  std::string message;
  // False: worth a warning only (an unknown key close to no known one, which may be a field
  // of a newer Kubernetes); true: the file must not be served.
  bool fatal = true;
};

// Checks a v1 List of Nodes, Pods and ConfigMaps:
//  * keys of the objects' parts gpushare reads (metadata, Pod spec and containers, Node spec
//    and status, resources) against the Kubernetes API's field names: an unknown key within
//    two edits of a known one (or differing only in case) is fatal, naming the known key;
//  * resource and annotation keys within two edits of gpushare's own (aliyun.com/gpu-men);
//  * a Pod's spec.nodeName and an unhealthy-gpu-<node> ConfigMap's node must name a Node of the
//    file; such a ConfigMap must be in `names.unhealthy_namespace` (live mode reads only
//    that) and may hold only data.gpus, a comma-separated list of GPU indices.
std::vector<ClusterFileProblem> check_cluster_list(const kube::Json& list,
                                                   const kube::ResourceNames& names);

// The 1-based line of the key or element at `path` in YAML (or JSON) `text`, or 0 when the
// text does not parse or has no such path.
int line_of(std::string_view text, const std::vector<std::string>& path);

}  // namespace gpushare::standalone
