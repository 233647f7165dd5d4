#pragma once
// Where bind's decision goes: the API server (live) or memory (standalone), and where bind
// finds the pod it is asked to bind.

#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "gpushare/kube/pod_info.h"

namespace gpushare::service {

struct BindOutcome {
  bool ok = false;
  std::string error;  // for the reply's Error field, when !ok
  // The API server may have applied the bind even though the call failed (time-out): then the
  // reservation must stay until the watch says how it ended.
  bool outcome_unknown = false;
};

class PodBinder {
 public:
  virtual ~PodBinder() = default;
  // The pod as the cluster knows it now, or nullopt if there is no such pod.
  virtual std::optional<kube::PodInfo> find_pod(std::string_view namespace_name,
                                                std::string_view name) = 0;
  // Binds the pod to the node and records the annotations with it, atomically where possible.
  virtual BindOutcome bind(const kube::PodInfo& pod, std::string_view node,
                           const std::map<std::string, std::string>& annotations) = 0;
  // True when binds are confirmed later by a watch; false when bind() is the final word.
  virtual bool confirms_asynchronously() const = 0;
  // A pod kube-scheduler asked about in filter; a binder without its own pod source may keep it.
  virtual void note_pod_seen(const kube::PodInfo& /*pod*/) {}

  // The pod as the API server has it now, read fresh (not from a watch), to settle a
  // reservation whose bind had no clear answer. kFailed when it cannot be read now.
  struct ReadBack {
    enum class Result { kFound, kNotFound, kFailed };
    Result result = Result::kFailed;
    std::optional<kube::PodInfo> pod;  // kFound
    std::string error;                 // kFailed
  };
  virtual ReadBack read_back(std::string_view /*namespace_name*/, std::string_view /*name*/) {
    return {ReadBack::Result::kFailed, std::nullopt, "this binder cannot read pods back"};
  }
};

}  // namespace gpushare::service
