#pragma once
// resource.k8s.io objects (Dynamic Resource Allocation) -> core/dra.h types. v1 shapes, and the
// v1beta1 ones where they differ (device.basic, requests without `exactly`). Throws BadInput
// for objects that are not of the kind; a device capacity that cannot be read is recorded on
// the device (DraDevice::capacity_error) rather than thrown, so one bad device does not hide
// its slice.

#include <array>
#include <string_view>
#include <vector>

#include "gpushare/core/dra.h"
#include "gpushare/kube/json_access.h"

namespace simdjson::dom {
class element;
}

namespace gpushare::kube {

core::DraSlice decode_resource_slice(const simdjson::dom::element& slice);
core::DraClaim decode_resource_claim(const simdjson::dom::element& claim);
core::DraClaimTemplate decode_claim_template(const simdjson::dom::element& claim_template);
core::DraDeviceClass decode_device_class(const simdjson::dom::element& device_class);
// spec.resourceClaims of a pod (the Pod object), with status.resourceClaimStatuses' generated
// claim names; empty for a pod without claims.
std::vector<core::DraPodClaim> decode_pod_claims(const simdjson::dom::element& pod);

// The kinds above, as `kind` names them in an object.
inline constexpr std::array<std::string_view, 4> kDraKinds = {
    "DeviceClass", "ResourceSlice", "ResourceClaim", "ResourceClaimTemplate"};
inline bool is_dra_kind(std::string_view kind) {
  for (std::string_view dra : kDraKinds) {
    if (kind == dra) return true;
  }
  return false;
}

// The same from JSON text (BadInput also for invalid JSON); for standalone cluster files, tests
// and tools.
core::DraSlice parse_resource_slice(std::string_view text);
core::DraClaim parse_resource_claim(std::string_view text);
core::DraClaimTemplate parse_claim_template(std::string_view text);
core::DraDeviceClass parse_device_class(std::string_view text);

// Whether a capacity (or consumed capacity) name is `memory` of `driver`: "memory" or
// "<driver>/memory".
bool is_memory_capacity(std::string_view name, std::string_view driver);

}  // namespace gpushare::kube
