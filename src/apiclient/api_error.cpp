#include "gpushare/apiclient/api_error.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

namespace gpushare::apiclient {

using Json = nlohmann::json;

namespace {

constexpr std::size_t kMaxMessageFromBody = 512;

std::string string_member(const Json& object, const char* key) {
  const auto it = object.find(key);
  if (it == object.end() || !it->is_string()) return {};
  return it->get<std::string>();
}

StatusDetails parse_details(const Json& details) {
  StatusDetails out;
  if (!details.is_object()) return out;
  out.name = string_member(details, "name");
  out.group = string_member(details, "group");
  out.kind = string_member(details, "kind");
  out.uid = string_member(details, "uid");
  if (const auto it = details.find("retryAfterSeconds");
      it != details.end() && it->is_number_integer()) {
    out.retry_after_seconds = it->get<int>();
  }
  if (const auto it = details.find("causes"); it != details.end() && it->is_array()) {
    for (const auto& cause : *it) {
      if (!cause.is_object()) continue;
      out.causes.push_back({string_member(cause, "reason"), string_member(cause, "message"),
                            string_member(cause, "field")});
    }
  }
  return out;
}

bool is_status_object(const Json& body) {
  return body.is_object() && string_member(body, "kind") == "Status";
}

// Fills reason/message/details from a Status object; keeps `fallback_code` if it has no code.
ApiError from_status(const Json& status, int fallback_code) {
  ApiError error;
  error.kind = ErrorKind::kStatus;
  error.http_code = fallback_code;
  if (const auto it = status.find("code"); it != status.end() && it->is_number_integer()) {
    const int code = it->get<int>();
    if (code != 0) error.http_code = code;
  }
  error.reason = string_member(status, "reason");
  if (error.reason.empty()) error.reason = std::string(reason_for_http_code(error.http_code));
  error.message = string_member(status, "message");
  if (const auto it = status.find("details"); it != status.end()) {
    error.details = parse_details(*it);
  }
  return error;
}

}  // namespace

std::string_view reason_for_http_code(int http_code) {
  // client-go's NewGenericServerResponse.
  switch (http_code) {
    case 400:
      return reasons::kBadRequest;
    case 401:
      return reasons::kUnauthorized;
    case 403:
      return reasons::kForbidden;
    case 404:
      return reasons::kNotFound;
    case 405:
      return "MethodNotAllowed";
    case 406:
      return "NotAcceptable";
    case 409:
      return reasons::kConflict;
    case 410:
      return reasons::kGone;
    case 413:
      return "RequestEntityTooLarge";
    case 415:
      return "UnsupportedMediaType";
    case 422:
      return reasons::kInvalid;
    case 429:
      return reasons::kTooManyRequests;
    case 500:
      return reasons::kInternalError;
    case 503:
      return "ServiceUnavailable";
    case 504:
      return reasons::kTimeout;
    default:
      return {};
  }
}

bool ApiError::is_not_found() const {
  return is_status() && (http_code == 404 || reason == reasons::kNotFound);
}
bool ApiError::is_conflict() const {
  return is_status() && (http_code == 409 || reason == reasons::kConflict);
}
bool ApiError::is_already_exists() const {
  return is_status() && reason == reasons::kAlreadyExists;
}
bool ApiError::is_invalid() const {
  return is_status() && (http_code == 422 || reason == reasons::kInvalid);
}
bool ApiError::is_unauthorized() const {
  return is_status() && http_code == 401;
}
bool ApiError::is_forbidden() const {
  return is_status() && http_code == 403;
}

bool ApiError::is_too_many_requests() const {
  return is_status() && (http_code == 429 || reason == reasons::kTooManyRequests);
}

bool ApiError::is_expired() const {
  return is_status() &&
         (http_code == 410 || reason == reasons::kExpired || reason == reasons::kGone);
}

bool ApiError::is_resource_version_too_large() const {
  if (!is_status() || http_code != 504) return false;
  for (const auto& cause : details.causes) {
    if (cause.reason == reasons::kResourceVersionTooLarge) return true;
  }
  return false;
}

bool ApiError::is_timeout() const {
  return (is_transport() && transport == TransportFailure::kTimeout) ||
         (is_status() && (http_code == 504 || reason == reasons::kTimeout));
}

std::optional<std::chrono::seconds> ApiError::server_retry_delay() const {
  if (retry_after_header) return retry_after_header;
  if (details.retry_after_seconds && *details.retry_after_seconds > 0) {
    return std::chrono::seconds(*details.retry_after_seconds);
  }
  return std::nullopt;
}

std::string ApiError::describe() const {
  switch (kind) {
    case ErrorKind::kStatus:
      if (reason.empty()) return fmt::format("{}: {}", http_code, message);
      return fmt::format("{} {}: {}", http_code, reason, message);
    case ErrorKind::kTransport:
      return fmt::format("transport error ({}): {}", to_string(transport), message);
    case ErrorKind::kDecode:
      return fmt::format("bad response: {}", message);
    case ErrorKind::kStopped:
      return "stopped";
  }
  return message;
}

std::string_view to_string(TransportFailure failure) {
  switch (failure) {
    case TransportFailure::kNone:
      return "none";
    case TransportFailure::kConnect:
      return "connect";
    case TransportFailure::kDns:
      return "dns";
    case TransportFailure::kTls:
      return "tls";
    case TransportFailure::kTimeout:
      return "timeout";
    case TransportFailure::kConnectionLost:
      return "connection lost";
    case TransportFailure::kOther:
      return "other";
  }
  return "other";
}

ApiError error_from_response(int http_code, std::string_view body,
                             std::optional<std::chrono::seconds> retry_after_header) {
  ApiError error;
  const Json parsed = Json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (is_status_object(parsed)) {
    error = from_status(parsed, http_code);
    // The HTTP code is authoritative for the HTTP answer (a Status body could disagree).
    error.http_code = http_code;
  } else {
    error.kind = ErrorKind::kStatus;
    error.http_code = http_code;
    error.reason = std::string(reason_for_http_code(http_code));
    error.message = std::string(body.substr(0, kMaxMessageFromBody));
    if (error.message.empty()) error.message = fmt::format("HTTP {}", http_code);
  }
  error.retry_after_header = retry_after_header;
  return error;
}

ApiError error_from_status_object(const Json& status) {
  if (!status.is_object()) return decode_error("ERROR event without a Status object");
  ApiError error = from_status(status, 0);
  if (error.http_code == 0 && error.reason.empty()) error.reason = "Unknown";
  return error;
}

ApiError transport_error(TransportFailure failure, std::string message) {
  ApiError error;
  error.kind = ErrorKind::kTransport;
  error.transport = failure;
  error.message = std::move(message);
  return error;
}

ApiError stopped_error() {
  ApiError error;
  error.kind = ErrorKind::kStopped;
  error.message = "stopped";
  return error;
}

ApiError decode_error(std::string message) {
  ApiError error;
  error.kind = ErrorKind::kDecode;
  error.message = std::move(message);
  return error;
}

}  // namespace gpushare::apiclient
