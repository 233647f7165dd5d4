#pragma once
// Watch events ({"type":T,"object":{...}}) and how a watch ended.

#include <cstddef>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "gpushare/apiclient/api_error.h"
#include "gpushare/json/document.h"

namespace gpushare::apiclient {

using Json = nlohmann::json;

enum class WatchEventType { kAdded, kModified, kDeleted, kBookmark, kError };

struct WatchEvent {
  WatchEventType type;
  json::Value object;  // in the parser's document: valid until its next parse
};

std::string_view to_string(WatchEventType type);

// Parses one framed value with `parser` (simdjson). Throws std::invalid_argument for invalid
// JSON, a missing or unknown type, or a missing object.
WatchEvent parse_watch_event(std::string_view text, json::Parser& parser);

// The error carried by an ERROR event's Status object (error_from_status_object, api_error.h).
ApiError error_from_status_value(const json::Value& status);

// metadata.resourceVersion of an object, or "" if absent.
std::string resource_version_of(const json::Value& object);
std::string resource_version_of(const Json& object);

enum class WatchEnd {
  kClosed,          // the server ended the stream cleanly (timeoutSeconds, restart)
  kErrorEvent,      // an ERROR event; `error` holds its Status (then the server ends the stream)
  kHttpError,       // the watch request itself got a non-200 answer; `error` holds it
  kTransportError,  // connect/TLS failure, or the connection broke (see `established`)
  kDecodeError,     // bytes that are not watch events
  kHandlerError,    // the event callback threw; `error.message` holds what
  kStopped,         // the caller's stop_token fired
};

std::string_view to_string(WatchEnd end);

struct WatchResult {
  WatchEnd end = WatchEnd::kClosed;
  std::optional<ApiError> error;  // set for every end except kClosed and kStopped
  std::size_t events = 0;         // events delivered to the callback (ERROR excluded)
  bool established = false;       // a 200 answer was received before the end
};

}  // namespace gpushare::apiclient
