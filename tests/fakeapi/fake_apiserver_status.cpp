#include "fakeapi/fake_apiserver_status.h"

#include <fmt/format.h>

namespace gpushare::testing {

using nlohmann::json;

ApiError::ApiError(int code, std::string reason, std::string message, json details)
    : std::runtime_error(std::move(message)),
      code_(code),
      reason_(std::move(reason)),
      details_(std::move(details)) {}

std::optional<int> ApiError::retry_after_seconds() const {
  if (details_.is_object() && details_.contains("retryAfterSeconds")) {
    return details_["retryAfterSeconds"].get<int>();
  }
  return std::nullopt;
}

ApiError& ApiError::with_metadata(json metadata) {
  metadata_ = std::move(metadata);
  return *this;
}

json ApiError::status_body() const {
  json body = {{"kind", "Status"},
               {"apiVersion", "v1"},
               {"metadata", metadata_},
               {"status", "Failure"},
               {"code", code_}};
  if (std::string_view(what()).size() > 0) body["message"] = what();
  if (!reason_.empty()) body["reason"] = reason_;
  if (details_.is_object() && !details_.empty()) body["details"] = details_;
  return body;
}

namespace fakeapi {
namespace {

std::string qualified_resource(std::string_view group, std::string_view resource) {
  if (group.empty()) return std::string(resource);
  return fmt::format("{}.{}", resource, group);
}

json resource_details(std::string_view group, std::string_view resource, std::string_view name) {
  json details = json::object();
  if (!name.empty()) details["name"] = name;
  if (!group.empty()) details["group"] = group;
  details["kind"] = resource;
  return details;
}

}  // namespace

json success_status(int code, json details) {
  json body = {{"kind", "Status"},
               {"apiVersion", "v1"},
               {"metadata", json::object()},
               {"status", "Success"}};
  // The real server sets code only where it chose one explicitly (201 for a Binding).
  if (code != 200) body["code"] = code;
  if (details.is_object() && !details.empty()) body["details"] = std::move(details);
  return body;
}

std::string_view default_reason_for(int code) {
  switch (code) {
    case 400:
      return "BadRequest";
    case 401:
      return "Unauthorized";
    case 403:
      return "Forbidden";
    case 404:
      return "NotFound";
    case 405:
      return "MethodNotAllowed";
    case 406:
      return "NotAcceptable";
    case 409:
      return "Conflict";
    case 410:
      return "Expired";
    case 413:
      return "RequestEntityTooLarge";
    case 415:
      return "UnsupportedMediaType";
    case 422:
      return "Invalid";
    case 429:
      return "TooManyRequests";
    case 500:
      return "InternalError";
    case 503:
      return "ServiceUnavailable";
    case 504:
      return "Timeout";
    default:
      return "";
  }
}

ApiError not_found(std::string_view group, std::string_view resource, std::string_view name) {
  return ApiError(404, "NotFound",
                  fmt::format("{} \"{}\" not found", qualified_resource(group, resource), name),
                  resource_details(group, resource, name));
}

ApiError already_exists(std::string_view group, std::string_view resource, std::string_view name) {
  return ApiError(
      409, "AlreadyExists",
      fmt::format("{} \"{}\" already exists", qualified_resource(group, resource), name),
      resource_details(group, resource, name));
}

ApiError conflict(std::string_view group, std::string_view resource, std::string_view name,
                  std::string_view cause) {
  return ApiError(409, "Conflict",
                  fmt::format("Operation cannot be fulfilled on {} \"{}\": {}",
                              qualified_resource(group, resource), name, cause),
                  resource_details(group, resource, name));
}

ApiError bad_request(std::string_view message) {
  return ApiError(400, "BadRequest", std::string(message));
}

ApiError unauthorized() {
  return ApiError(401, "Unauthorized", "Unauthorized");
}

ApiError unsupported_media_type(std::string_view accepted) {
  return ApiError(415, "UnsupportedMediaType",
                  fmt::format("the body of the request was in an unknown format - accepted media "
                              "types include: {}",
                              accepted));
}

ApiError method_not_allowed() {
  return ApiError(405, "MethodNotAllowed",
                  "the server does not allow this method on the requested resource");
}

ApiError expired(std::string_view message) {
  return ApiError(410, "Expired", std::string(message));
}

ApiError too_large_resource_version(std::uint64_t requested, std::uint64_t current) {
  json details = {{"causes", json::array({{{"reason", "ResourceVersionTooLarge"},
                                           {"message", "Too large resource version"}}})},
                  {"retryAfterSeconds", 1}};
  return ApiError(504, "Timeout",
                  fmt::format("Too large resource version: {}, current: {}", requested, current),
                  std::move(details));
}

ApiError internal_unwrapped(std::string_view message) {
  return ApiError(500, "", std::string(message));
}

ApiError invalid(std::string_view qualified_kind, std::string_view group, std::string_view kind,
                 std::string_view name, const std::vector<FieldError>& errors) {
  std::string aggregate;
  json causes = json::array();
  for (const FieldError& error : errors) {
    if (!aggregate.empty()) aggregate += ", ";
    aggregate += error.to_string();
    causes.push_back({{"reason", error.cause_reason},
                      {"message", error.type + ": " + error.detail},
                      {"field", error.field}});
  }
  // field.ErrorList.ToAggregate() brackets a list of more than one error.
  if (errors.size() > 1) aggregate = "[" + aggregate + "]";
  json details = json::object();
  if (!name.empty()) details["name"] = name;
  if (!group.empty()) details["group"] = group;
  details["kind"] = kind;
  details["causes"] = std::move(causes);
  return ApiError(422, "Invalid",
                  fmt::format("{} \"{}\" is invalid: {}", qualified_kind, name, aggregate),
                  std::move(details));
}

}  // namespace fakeapi
}  // namespace gpushare::testing
