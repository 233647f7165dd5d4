#pragma once
// API errors and Status bodies of the fake API server, shaped like the real apiserver's
// (k8s.io/apimachinery/pkg/api/errors): every body has kind, apiVersion and metadata:{},
// empty fields are omitted.

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace gpushare::testing {

// An error as the API server would return it. The HTTP layer turns it into a Status body;
// the test-side API of FakeApiServer throws it as is.
class ApiError : public std::runtime_error {
 public:
  // An empty reason stays empty (the real server's "unknown" reason for unwrapped errors).
  ApiError(int code, std::string reason, std::string message,
           nlohmann::json details = nlohmann::json::object());

  int code() const noexcept { return code_; }
  const std::string& reason() const noexcept { return reason_; }
  const nlohmann::json& details() const noexcept { return details_; }
  std::optional<int> retry_after_seconds() const;

  // Extra "metadata" for the Status (the real server puts a continue token into a 410 for
  // an expired continue parameter).
  ApiError& with_metadata(nlohmann::json metadata);

  nlohmann::json status_body() const;

 private:
  int code_;
  std::string reason_;
  nlohmann::json details_;
  nlohmann::json metadata_ = nlohmann::json::object();
};

namespace fakeapi {

// `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Success","code":N}` plus details.
nlohmann::json success_status(int code, nlohmann::json details = nlohmann::json::object());

// The reason the real server uses for a bare HTTP status (e.g. 429 -> TooManyRequests).
std::string_view default_reason_for(int code);

// Errors named after apimachinery's constructors. `group` is "" for core resources,
// `resource` the plural ("pods", "pods/binding", "leases").
ApiError not_found(std::string_view group, std::string_view resource, std::string_view name);
ApiError already_exists(std::string_view group, std::string_view resource, std::string_view name);
ApiError conflict(std::string_view group, std::string_view resource, std::string_view name,
                  std::string_view cause);
ApiError bad_request(std::string_view message);
ApiError unauthorized();
// `accepted` lists the media types the endpoint takes.
ApiError unsupported_media_type(std::string_view accepted);
ApiError method_not_allowed();
ApiError expired(std::string_view message);
ApiError too_large_resource_version(std::uint64_t requested, std::uint64_t current);
ApiError internal_unwrapped(std::string_view message);  // 500 with no reason

// One field error of a 422 Invalid (field.Error): type is e.g. "Forbidden", "Required",
// "Unsupported value", "Invalid value"; cause_reason e.g. "FieldValueForbidden".
struct FieldError {
  std::string field;
  std::string type;
  std::string cause_reason;
  std::string detail;  // already formatted text after "<type>: "
  std::string to_string() const { return field + ": " + type + ": " + detail; }
};
// `qualified_kind` is "Pod" or "ListOptions.meta.k8s.io"; group/kind go to details.
ApiError invalid(std::string_view qualified_kind, std::string_view group, std::string_view kind,
                 std::string_view name, const std::vector<FieldError>& errors);

// The message the real server uses for a stale resourceVersion.
inline constexpr std::string_view kObjectModifiedMessage =
    "the object has been modified; please apply your changes to the latest version and try again";

}  // namespace fakeapi
}  // namespace gpushare::testing
