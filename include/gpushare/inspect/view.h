#pragma once
// What kubectl-inspect-gpushare shows, read from the /inspect JSON. Both sources produce that
// JSON: the extender serves it, and the API-server mode builds the same core model from Node
// and Pod objects and builds it with inspect::Document (document.h), as the extender does. The
// reader is tolerant so that it also reads the Go extender's /inspect (fewer fields).

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

// A Dynamic Resource Allocation ResourceClaim holding memory of one GPU (/inspect's
// devs[].draClaims): counted in the GPU's `used`, beside its device-plugin pods.
struct DraClaimView {
  std::string claim;  // namespace/name
  std::string pod;    // namespace/name of the pod it is reserved for, "" when none
  core::Units used = 0;

  std::string claim_namespace() const;  // before the '/'
  std::string claim_name() const;       // after it
  std::string pod_name() const;         // the pod without its namespace, "" when none
};

struct GpuView {
  int id = 0;
  core::Units total = 0;
  core::Units used = 0;  // device-plugin pods and DRA claims
  bool healthy = true;
  std::vector<PodView> pods;
  std::string dra_device;  // pool/device when the GPU is published through DRA, else ""
  std::vector<DraClaimView> dra_claims;
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
  std::vector<PodView>
      unindexed;  // bound without ALIYUN_COM_GPU_MEM_IDX, or on an index the node lacks

  core::Units unindexed_used() const;
  core::Units dra_used() const;  // held by DRA claims on its GPUs
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
