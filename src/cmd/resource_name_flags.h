#pragma once
// The four flags that name the resources a deployment uses (kube::ResourceNames), defined once
// for every binary that reads the cluster (gpushare-extender, kubectl-inspect-gpushare), so
// their names, defaults and help texts cannot drift apart. Header-only: the binaries already
// link CLI11 (header-only); the kube library does not depend on it.

#include <CLI/CLI.hpp>

#include "gpushare/kube/resource_names.h"

namespace gpushare::cmd {

// Adds --resource-name, --count-name, --unhealthy-configmap-namespace and --gpu-model-label to
// `app`, writing into `names` (whose values are the defaults shown). `names` must outlive `app`'s
// parsing.
inline void add_resource_name_flags(CLI::App& app, kube::ResourceNames& names) {
  app.add_option("--resource-name", names.memory, "per-GPU shareable resource")
      ->capture_default_str();
  app.add_option("--count-name", names.count, "node capacity key holding the GPU count")
      ->capture_default_str();
  app.add_option("--unhealthy-configmap-namespace", names.unhealthy_namespace,
                 "namespace of unhealthy-gpu-<node> ConfigMaps")
      ->capture_default_str();
  app.add_option("--gpu-model-label", names.gpu_model_label,
                 "node label carrying the GPU model: nodes take their model from it, and pods' "
                 "nodeSelector and required node affinity on it pin them to models")
      ->capture_default_str();
}

}  // namespace gpushare::cmd
