#pragma once
// What kubectl-inspect-gpushare shows, read from the /inspect JSON. Both sources produce that
// JSON: the extender serves it, and the API-server mode builds the same core model from Node
// and Pod objects and renders it with inspect_cluster() (snapshot.h), as the extender does. The reader is
// tolerant so that it also reads the Go extender's /inspect (fewer fields).

#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "gpushare/core/pod_demand.h"
#include "gpushare/kube/json_access.h"

namespace gpushare::inspect {

class InspectError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct PodView {
  std::string name;
  std::string namespace_name;
  std::string uid;
  core::Units used = 0;   // on this GPU (or on the node, for pods without a GPU index)
  bool assumed = false;   // extender: bind sent, API server has not shown it bound yet
  std::string phase;      // status.phase as the API reports it ("" when the source does not say)
  std::string model_pin;  // its pin to GPU models ("in (A100)"), "" when it has none
  std::vector<std::string> allowed_models;  // what the pin allows among the cluster's models

  // Holds memory but is not running yet: assumed, or bound and still Pending (the device
  // plugin has not allocated it, or the image is still being pulled).
  bool not_running_yet() const { return assumed || phase == "Pending"; }
  std::string status() const;  // Assumed, else the phase (Pending, Running, ...), else ""
};

struct GpuView {
  int id = 0;
  core::Units total = 0;
  core::Units used = 0;
  bool healthy = true;
  std::vector<PodView> pods;
};

struct NodeView {
  std::string name;
  std::string address;  // InternalIP; empty when unknown
  std::string gpu_model;
  bool unschedulable = false;
  std::string misconfiguration;
  core::Units total = 0;
  core::Units used = 0;
  std::vector<GpuView> gpus;
  std::vector<PodView> unindexed;  // bound without ALIYUN_COM_GPU_MEM_IDX, or on an index the node lacks

  core::Units unindexed_used() const;
};

// The nodes with GPUs of one model ("" = without the model label) and, from the extender, how
// much of the workload its policy learned is pinned to models including this one.
struct ModelView {
  std::string model;
  std::size_t nodes = 0;
  int gpus = 0;
  core::Units total = 0;
  core::Units used = 0;
  std::size_t pinned_pods = 0;                  // bound GPU pods whose pin allows this model
  std::optional<double> learned_pinned_weight;  // share of the learned workload (0..1)
};

struct ClusterView {
  std::vector<NodeView> nodes;
  std::vector<ModelView> models;
  // The extender's configuration warnings (/inspect's configWarnings[].message): mistakes in
  // objects it reads, such as a misspelt key in an unhealthy-gpu ConfigMap.
  std::vector<std::string> config_warnings;
};

// Throws InspectError when the JSON is not an /inspect document.
ClusterView cluster_view(const kube::Json& inspect);

}  // namespace gpushare::inspect
