#pragma once
// What a pod with Dynamic Resource Allocation claims asks of the model's DRA driver: the device
// requests of its claims (or of the templates they are generated from), and the demand the
// policy learns from it. Shared by prioritize (core/scorer.h), the pod watch and
// kubesim.

#include <optional>
#include <string>
#include <vector>

#include "gpushare/core/cluster_model.h"
#include "gpushare/core/dra.h"
#include "gpushare/kube/pod_info.h"

namespace gpushare::kube {

// The device requests of the pod's claims still to be allocated, for the model's DRA driver:
// a claim by name (or the one generated for a template, once the pod's status names it), else
// the template's requests. Claims already allocated add nothing: their devices are decided.
std::vector<core::DraRequest> pending_dra_requests(const core::DraState& dra, const PodInfo& pod);

// The first of the pod's claims that `dra` cannot resolve, named for a log line: a claim by name
// that is not in the model and names no template, or one whose template is not in the model
// either ("ResourceClaimTemplate ml/t", "ResourceClaim ml/c"). Such a claim adds no request to
// pending_dra_requests: its objects are not listed yet, or DRA is off.
std::optional<std::string> unresolved_dra_claim(const core::DraState& dra, const PodInfo& pod);

// What the policy learns of the workload from a bound pod: its demand, and for a pod with DRA
// claims (which ask no GPU resource of the pod itself) the GPU memory its claims ask of the
// model's driver: as many GPUs as their requests' devices, each with the largest memory asked.
// Without it a DRA cluster's GPU pods would all count as CPU-only for the learned workload.
core::PodDemand learned_demand(const core::ClusterModel& model, const PodInfo& pod);

}  // namespace gpushare::kube
