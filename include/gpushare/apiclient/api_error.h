#pragma once
// Failures of API-server calls as a value: HTTP status plus the decoded metav1.Status, or a
// transport failure. Callers decide on `http_code`/`reason`/`transport`, never on message text
// (the Go extender's conflict retry compared messages and never fired).

#include <chrono>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gpushare::apiclient {

enum class ErrorKind {
  kStatus,     // the server answered with a non-2xx code or an in-stream ERROR Status
  kTransport,  // no (complete) HTTP answer: connect, TLS, timeout, connection lost
  kDecode,     // a 2xx answer whose body is not what the protocol promises
  kStopped,    // the caller's stop_token was triggered
};

enum class TransportFailure {
  kNone,
  kConnect,         // connection refused or unreachable: the request was never sent
  kDns,             // host name did not resolve
  kTls,             // handshake or certificate verification failed
  kTimeout,         // connect or total timeout
  kConnectionLost,  // the connection broke after the request was (maybe) sent
  kOther,
};

struct StatusCause {
  std::string reason;
  std::string message;
  std::string field;
};

// metav1.StatusDetails.
struct StatusDetails {
  std::string name;
  std::string group;
  std::string kind;
  std::string uid;
  std::optional<int> retry_after_seconds;
  std::vector<StatusCause> causes;
};

// Status reasons we act on (metav1.StatusReason).
namespace reasons {
inline constexpr std::string_view kNotFound = "NotFound";
inline constexpr std::string_view kAlreadyExists = "AlreadyExists";
inline constexpr std::string_view kConflict = "Conflict";
inline constexpr std::string_view kInvalid = "Invalid";
inline constexpr std::string_view kBadRequest = "BadRequest";
inline constexpr std::string_view kExpired = "Expired";
inline constexpr std::string_view kGone = "Gone";
inline constexpr std::string_view kTimeout = "Timeout";
inline constexpr std::string_view kTooManyRequests = "TooManyRequests";
inline constexpr std::string_view kInternalError = "InternalError";
inline constexpr std::string_view kUnauthorized = "Unauthorized";
inline constexpr std::string_view kForbidden = "Forbidden";
// A cause reason, in details.causes, of a 504 for a list at an RV the server has not reached.
inline constexpr std::string_view kResourceVersionTooLarge = "ResourceVersionTooLarge";
}  // namespace reasons

struct ApiError {
  ErrorKind kind = ErrorKind::kStatus;
  int http_code = 0;    // HTTP status, or Status.code of an in-stream ERROR event; 0 if none
  std::string reason;   // Status.reason, or derived from the code when the body had none
  std::string message;  // for people and logs only
  StatusDetails details;
  TransportFailure transport = TransportFailure::kNone;
  std::optional<std::chrono::seconds> retry_after_header;  // Retry-After, when present

  bool is_status() const { return kind == ErrorKind::kStatus; }
  bool is_transport() const { return kind == ErrorKind::kTransport; }
  bool is_stopped() const { return kind == ErrorKind::kStopped; }

  bool is_not_found() const;
  bool is_conflict() const;
  bool is_already_exists() const;
  bool is_invalid() const;
  bool is_unauthorized() const;
  bool is_forbidden() const;
  bool is_too_many_requests() const;
  // 410 or reason Expired/Gone: a resourceVersion or continue token the server does not keep.
  bool is_expired() const;
  // 504 whose causes say the requested resourceVersion is ahead of the server.
  bool is_resource_version_too_large() const;
  bool is_server_error() const { return is_status() && http_code >= 500; }
  bool is_connect_failure() const {
    return is_transport() && transport == TransportFailure::kConnect;
  }
  bool is_timeout() const;

  // The delay the server asked for: Retry-After header, else details.retryAfterSeconds.
  std::optional<std::chrono::seconds> server_retry_delay() const;

  // One line for logs, e.g. `409 Conflict: Operation cannot be fulfilled on pods "p1": ...`.
  std::string describe() const;
};

// Builds the error for a non-2xx answer. A JSON metav1.Status body supplies reason, message and
// details; otherwise the reason is derived from the code (as client-go does) and the message is
// the start of the body.
ApiError error_from_response(int http_code, std::string_view body,
                             std::optional<std::chrono::seconds> retry_after_header = {});

// The error carried by a watch's ERROR event: its Status object (code 410 + reason Expired,
// typically).
ApiError error_from_status_object(const nlohmann::json& status);

ApiError transport_error(TransportFailure failure, std::string message);
ApiError stopped_error();
ApiError decode_error(std::string message);

// The reason client-go assigns to a bare status code ("" when it has none).
std::string_view reason_for_http_code(int http_code);

std::string_view to_string(TransportFailure failure);

}  // namespace gpushare::apiclient
