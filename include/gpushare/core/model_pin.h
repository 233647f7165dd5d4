#pragma once
// A pod's pin to GPU models: what its nodeSelector and required node affinity say about the
// GPU-model node label, evaluated with kube-scheduler's rules, and which of the models a
// cluster's GPU nodes carry it allows. Pure: the decoder (kube/pod_pin.h) builds it, the
// extender resolves it against its model, the kube-scheduler model (kubesim) filters with it.

#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace gpushare::core {

enum class PinOperator { kIn, kNotIn, kExists, kDoesNotExist, kGt, kLt, kInvalid };

// One matchExpressions entry (or the nodeSelector's value, as In) on the GPU-model label.
struct ModelRequirement {
  PinOperator op = PinOperator::kInvalid;
  std::vector<std::string> values;

  // As kube-scheduler's label requirement: In needs the label with one of the values; NotIn
  // the label absent or none of them; Gt/Lt the label and the single value as integers. An
  // invalid requirement (unknown operator, values where none belong, or none where some must)
  // matches nothing, as kube-scheduler ignores a term it cannot parse. `label` is the node's
  // value, nullopt when the node lacks the label.
  bool matches(std::optional<std::string_view> label) const;
  friend bool operator==(const ModelRequirement&, const ModelRequirement&) = default;
};

// Bounds on what a pod may say (a hostile or broken object must not cost unbounded memory or
// time under the model's lock). A pin beyond them is not read: the pod counts as unpinned,
// which kube-scheduler still enforces.
inline constexpr std::size_t kMaxPinTerms = 64;
inline constexpr std::size_t kMaxPinValues = 256;  // over all requirements of the pin
inline constexpr std::size_t kMaxPinValueLength = 253;

struct ModelPin {
  // False: the pod says nothing about the label, or too much to read (`unreadable`): any model.
  bool pinned = false;
  bool unreadable = false;
  // When pinned: the node must satisfy every requirement of at least one term (nodeSelector
  // already folded into each term). No term at all: no node matches.
  std::vector<std::vector<ModelRequirement>> terms;

  bool allows(std::optional<std::string_view> label) const;
  // "in (A100,V100)", "notin (T4), exists or in (A10)", "matches no node"; "" when not pinned.
  std::string describe() const;
  // The pin a trace's gpu_spec column or a test says: In `models` (unpinned when empty).
  static ModelPin any_of(std::span<const std::string> models);
  friend bool operator==(const ModelPin&, const ModelPin&) = default;
};

// What resolve_models returns for a pin no GPU node satisfies: not a valid label value, so no
// node's model ever equals it and such a pod fits nowhere.
inline constexpr std::string_view kNoModelMatches = "<no-matching-model>";

// The models of `present` (sorted and distinct; "" stands for GPU nodes without the label)
// that `pin` allows, sorted: empty when it allows all of them (the pod is unpinned here),
// {kNoModelMatches} when it allows none. Costs |present| matches; allocates only for a pin.
std::vector<std::string> resolve_models(const ModelPin& pin, std::span<const std::string> present);

}  // namespace gpushare::core
