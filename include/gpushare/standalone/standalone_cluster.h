#pragma once
// Standalone mode (--cluster-file): the cluster is a v1 List of Nodes, Pods, unhealthy-gpu
// ConfigMaps and DRA objects (DeviceClasses, ResourceSlices, ResourceClaims,
// ResourceClaimTemplates) read once at start; binds change memory only (and are logged).

#include <deque>
#include <filesystem>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "gpushare/core/cluster_model.h"
#include "gpushare/core/dra.h"
#include "gpushare/inspect/snapshot.h"
#include "gpushare/kube/json_access.h"
#include "gpushare/kube/resource_names.h"
#include "gpushare/service/pod_binder.h"

namespace gpushare::standalone {

// Reads a YAML or JSON file holding a v1 List; throws std::runtime_error naming the file.
kube::Json read_cluster_file(const std::filesystem::path& path);
// read_cluster_file, then check_cluster_list (cluster_file_check.h): throws std::runtime_error
// listing every mistake as FILE:LINE: message; logs the lesser problems as warnings. What
// --cluster-file loads.
kube::Json load_cluster_file(const std::filesystem::path& path, const kube::ResourceNames& names);

class StandaloneCluster final : public service::PodBinder {
 public:
  // Validates every item; throws std::runtime_error naming the bad item. `dra` is how DRA
  // objects are read (--dra-driver, --dra-memory-unit); nullopt (--dra off) ignores them.
  StandaloneCluster(const kube::Json& list, kube::ResourceNames names,
                    std::optional<core::DraConfig> dra = core::DraConfig{});

  // Puts the file's nodes, unhealthy GPUs, bound pods and DRA objects into the model; logs once
  // what the model cannot use of the DRA objects, each naming its object.
  void populate(core::ClusterModel& model) const;

  std::optional<kube::PodInfo> find_pod(std::string_view namespace_name,
                                        std::string_view name) override;
  service::BindOutcome bind(const kube::PodInfo& pod, std::string_view node,
                            const std::map<std::string, std::string>& annotations) override;
  bool confirms_asynchronously() const override { return false; }
  void note_pod_seen(const kube::PodInfo& pod) override;

  // Each pod's phase as the file gave it (a pod bound here keeps its phase: Pending), for
  // /inspect. Valid while this object lives.
  inspect::PodPhaseLookup pod_phases();

  // Annotations written by binds so far, by namespace/name.
  std::map<std::string, std::map<std::string, std::string>> bound_annotations() const;

 private:
  static constexpr std::size_t kMaxRememberedPods = 10000;

  // Decodes one DRA object of `kind` from its JSON text; throws kube::BadInput.
  void add_dra_object(std::string_view kind, const std::string& text);

  kube::ResourceNames names_;
  std::vector<core::NodeSpec> nodes_;
  std::vector<std::pair<std::string, std::vector<int>>> unhealthy_;
  std::vector<core::PodAllocation> allocations_;
  std::optional<core::DraConfig> dra_;
  std::vector<core::DraSlice> dra_slices_;
  std::vector<core::DraClaim> dra_claims_;
  std::vector<core::DraClaimTemplate> dra_templates_;
  std::vector<core::DraDeviceClass> dra_classes_;

  mutable std::mutex mutex_;  // guards pods_, remembered_ and annotations_
  std::map<std::string, kube::PodInfo, std::less<>> pods_;  // by namespace/name
  std::deque<std::string> remembered_;  // pods learnt from filter, oldest first (bounded)
  std::map<std::string, std::map<std::string, std::string>> annotations_;
};

}  // namespace gpushare::standalone
