#pragma once
#include <string>

#include "gpushare/kube/annotations.h"

namespace gpushare::kube {

// The resource names this deployment uses (configurable with --resource-name / --count-name).
struct ResourceNames {
  std::string memory{kDefaultResourceName};
  std::string count{kDefaultCountName};
  std::string unhealthy_namespace{kDefaultUnhealthyNamespace};
};

}  // namespace gpushare::kube
