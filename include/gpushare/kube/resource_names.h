#pragma once
#include <string>
#include <string_view>

#include "gpushare/kube/annotations.h"

namespace gpushare::kube {

// The resource names this deployment uses (configurable with --resource-name, --count-name and
// --gpu-model-label).
struct ResourceNames {
  std::string memory{kDefaultResourceName};
  std::string count{kDefaultCountName};
  std::string unhealthy_namespace{kDefaultUnhealthyNamespace};
  // The node label that carries the GPU model (--gpu-model-label): nodes take their model from
  // it and pods' nodeSelector and required node affinity on it pin them to models.
  std::string gpu_model_label{kDefaultGpuModelLabel};
};

// Whether `key` is a valid label key, as the API server validates one: an optional prefix (a DNS
// subdomain of at most 253 characters) and '/', then a name of 1 to 63 characters, alphanumeric
// at both ends, with '-', '_' and '.' between.
bool is_label_key(std::string_view key);

}  // namespace gpushare::kube
