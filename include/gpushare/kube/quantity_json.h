#pragma once
// A resource quantity as it appears in Kubernetes JSON.

#include <string_view>

#include "gpushare/core/pod_demand.h"
#include "gpushare/core/quantity.h"

namespace simdjson::dom {
class element;
}

namespace gpushare::kube {

// Reads a quantity given as a JSON string ("500m", "1Gi") or, leniently, a JSON integer (whole
// units). Throws BadInput starting with `what` for anything else, negative values and values
// beyond int64 milli-units.
core::Quantity quantity_of(const simdjson::dom::element& value, std::string_view what);

// The same for a whole-unit resource ("8", "1k", or an integer): core::parse_whole_units.
core::Units whole_units_of(const simdjson::dom::element& value, std::string_view what);

}  // namespace gpushare::kube
