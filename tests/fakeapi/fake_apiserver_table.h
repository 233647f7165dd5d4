#pragma once
// Server-side printing: the meta.k8s.io Table a real API server returns when a client (kubectl
// get without -o) asks for `Accept: application/json;as=Table;v=v1;g=meta.k8s.io`, with the
// columns of kube-apiserver's own printers (pkg/printers/internalversion) for the kinds the fake
// serves.

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "fakeapi/fake_apiserver_types.h"

namespace gpushare::testing::fakeapi {

// What the Accept header asked for: a Table (and of which meta.k8s.io version), or nullopt for
// plain objects. Follows the header's order, as the server's content negotiation does.
struct TableRequest {
  std::string version;         // "v1" or "v1beta1"
  std::string include_object;  // includeObject: "None", "Metadata" (default) or "Object"
};
std::optional<TableRequest> table_request(std::string_view accept, std::string_view include_object);

// The Content-Type of a Table response.
std::string table_content_type(const TableRequest& request);

// A Table of `objects` (full objects as stored). `list_metadata` goes to the Table's metadata
// (resourceVersion, continue, remainingItemCount).
nlohmann::json make_table(Resource resource, const std::vector<const nlohmann::json*>& objects,
                          const TableRequest& request, nlohmann::json list_metadata);

// kubectl's age format (duration.HumanDuration) of an RFC 3339 timestamp, as of now.
std::string age_since(std::string_view rfc3339);

}  // namespace gpushare::testing::fakeapi
