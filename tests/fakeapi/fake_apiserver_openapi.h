#pragma once
// OpenAPI v3 and server-side field validation of the fake API server.
//
// kubectl validates what it applies (`--validate=strict`, the default) either itself, against
// the server's OpenAPI schemas, or by asking the server to (`?fieldValidation=Strict`) when the
// server's OpenAPI v3 document lists that parameter for the kind. The fake does the second: it
// serves /openapi/v3 with the PATCH operations and their fieldValidation parameter, and checks
// the fields of what is created, updated or patched against the field names of the kinds it
// serves. Below the levels it knows (status, affinity, probes, volumes, ...) it accepts anything.

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "fakeapi/fake_apiserver_types.h"

namespace gpushare::testing::fakeapi {

// /openapi/v3 (the index) and /openapi/v3/<api/v1 | apis/GROUP/VERSION>; nullopt otherwise.
std::optional<nlohmann::json> openapi_document(std::string_view path,
                                               std::string_view server_version);

// The unknown fields of `object` ("spec.containers[0].resourcs"). A patch (`is_patch`) is
// checked the same way, ignoring strategic-merge directives ($patch, $setElementOrder/...).
std::vector<std::string> unknown_fields(Resource resource, const nlohmann::json& object,
                                        bool is_patch);

// Applies the fieldValidation directive ("Strict", "Warn" (the default), "Ignore"): throws the
// real server's 400 for Strict, returns the Warning header values for Warn.
std::vector<std::string> validate_fields(Resource resource, const nlohmann::json& object,
                                         bool is_patch, std::string_view directive);

}  // namespace gpushare::testing::fakeapi
