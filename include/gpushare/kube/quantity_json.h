#pragma once
// A resource quantity as it appears in Kubernetes JSON.

#include <string_view>

#include "gpushare/core/quantity.h"
#include "gpushare/kube/json_access.h"

namespace gpushare::kube {

// Reads a quantity given as a JSON string ("500m", "1Gi") or, leniently, a JSON integer (whole
// units). Throws BadInput starting with `what` for anything else, negative values and values
// beyond int64 milli-units.
core::Quantity quantity_of(const Json& value, std::string_view what);

}  // namespace gpushare::kube
