#pragma once
// The model's sections of the /inspect document: the Go original's names (nodes, totalGPU,
// usedGPU, devs, pods) plus more. document.h builds the document from them, for the extender's
// /inspect and for the kubectl plugin from API objects, so both show the same accounting.

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gpushare/core/cluster_model.h"
#include "gpushare/core/placement_policy.h"
#include "gpushare/kube/json_access.h"

namespace gpushare::inspect {

// Every node, sorted by name. `policy_state` is the policy's describe_state() (JSON or empty).
kube::Json inspect_cluster(const core::ClusterModel& model, std::string_view policy_name,
                           std::string_view policy_state);
// One node in the same shape as an element of "nodes", or nullopt if unknown.
std::optional<kube::Json> inspect_node(const core::ClusterModel& model, std::string_view node);
// Adds "fragmentedGPU" to each node of an inspect_cluster() result and to the cluster, plus a
// "fragmentation" object naming the measure: FGD's F(n) (core/fragmentation.h), the expected
// idle GPU memory on the node that a pod of the target workload could not use. The workload is
// the fgd policy's own target when that policy runs, else the built-in prior
// (core::default_prior_workload). Call under the store's lock; costs one pass over the nodes.
void add_fragmentation(kube::Json& cluster, const core::ClusterModel& model,
                       const core::PlacementPolicy& policy);

// A pod's status.phase as last seen (Pending, Running, ...), or nullopt when unknown. Takes the
// pod's UID, namespace and name.
using PodPhaseLookup = std::function<std::optional<std::string>(
    std::string_view uid, std::string_view namespace_name, std::string_view name)>;
// Adds "phase" to every pod entry of an inspect_cluster() / inspect_node() document (the model
// keeps only what placement needs), so that viewers can tell bound pods that are not running
// yet from running ones.
void add_pod_phases(kube::Json& document, const PodPhaseLookup& phase_of);

}  // namespace gpushare::inspect
