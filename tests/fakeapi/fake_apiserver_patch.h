#pragma once
// PATCH bodies: JSON merge patch (RFC 7386), JSON patch (RFC 6902) and strategic merge patch.

#include <nlohmann/json.hpp>
#include <optional>
#include <string_view>

#include "fakeapi/fake_apiserver_types.h"

namespace gpushare::testing::fakeapi {

enum class PatchType { Strategic, Merge, Json };

// From a Content-Type header (parameters ignored); nullopt for anything else (-> 415).
std::optional<PatchType> patch_type_from_content_type(std::string_view content_type);

// Applies `patch` to `original`. Throws ApiError: 400 for malformed patches, 422 when a
// JSON patch cannot be applied (a failed "test", a missing path).
//
// The strategic merge covers what clients of these resources send: maps merge, `null`
// deletes, lists with a patch merge key (containers by name, conditions by type, ...) merge
// element-wise, `$patch: replace|delete|merge`, `$deleteFromPrimitiveList/<field>`,
// finalizers merge as a set; `$setElementOrder/` and `$retainKeys` are accepted and ignored.
nlohmann::json apply_patch(PatchType type, Resource resource, const nlohmann::json& original,
                           const nlohmann::json& patch);

}  // namespace gpushare::testing::fakeapi
