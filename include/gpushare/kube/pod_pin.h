#pragma once
// A pod's pin to GPU models, read from its spec: spec.nodeSelector and
// spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution on the GPU-model
// label, as kube-scheduler's NodeAffinity plugin reads them.

#include <string_view>

#include "gpushare/core/model_pin.h"

namespace simdjson::dom {
class element;
}

namespace gpushare::kube {

// From a v1 PodSpec:
//  - nodeSelector[label] = v is the requirement In (v), ANDed with the affinity;
//  - nodeSelectorTerms are ORed, a term's matchExpressions ANDed; only expressions whose key is
//    `label` (exactly) are kept: the others, and matchFields, constrain nodes kube-scheduler
//    checks, not the GPU model, so a term with none on the label allows any model;
//  - an empty term matches no node (as kube-scheduler says), and so do a term with an
//    expression it could not parse (unknown operator, values not strings, values missing for
//    In/NotIn/Gt/Lt or present for Exists/DoesNotExist) and an empty list of terms.
// Never throws: the pin is advice to the policy and kube-scheduler enforces the real one, so a
// malformed one must not make the pod (and what it holds) unreadable. Beyond the bounds of
// core/model_pin.h the pin is not read (ModelPin::unreadable, any model).
core::ModelPin model_pin_of(const simdjson::dom::element& spec, std::string_view label);

}  // namespace gpushare::kube
