#include "gpushare/apiclient/watch_event.h"

#include <fmt/format.h>

#include <stdexcept>

namespace gpushare::apiclient {

std::string_view to_string(WatchEventType type) {
  switch (type) {
    case WatchEventType::kAdded:
      return "ADDED";
    case WatchEventType::kModified:
      return "MODIFIED";
    case WatchEventType::kDeleted:
      return "DELETED";
    case WatchEventType::kBookmark:
      return "BOOKMARK";
    case WatchEventType::kError:
      return "ERROR";
  }
  return "UNKNOWN";
}

std::string_view to_string(WatchEnd end) {
  switch (end) {
    case WatchEnd::kClosed:
      return "closed";
    case WatchEnd::kErrorEvent:
      return "error event";
    case WatchEnd::kHttpError:
      return "http error";
    case WatchEnd::kTransportError:
      return "transport error";
    case WatchEnd::kDecodeError:
      return "decode error";
    case WatchEnd::kHandlerError:
      return "handler error";
    case WatchEnd::kStopped:
      return "stopped";
  }
  return "unknown";
}

WatchEvent parse_watch_event(std::string_view text, json::Parser& parser) {
  json::Value value;
  if (parser.parse(text, value) != simdjson::SUCCESS)
    throw std::invalid_argument("watch event is not valid JSON");
  json::Object event;
  if (value.get_object().get(event) != simdjson::SUCCESS) {
    throw std::invalid_argument("watch event is not a JSON object");
  }
  const std::optional<json::Value> type_value = json::find_exact(event, "type");
  std::string_view type_name;
  if (!type_value || type_value->get_string().get(type_name) != simdjson::SUCCESS) {
    throw std::invalid_argument("watch event has no type");
  }
  WatchEventType type;
  if (type_name == "ADDED") {
    type = WatchEventType::kAdded;
  } else if (type_name == "MODIFIED") {
    type = WatchEventType::kModified;
  } else if (type_name == "DELETED") {
    type = WatchEventType::kDeleted;
  } else if (type_name == "BOOKMARK") {
    type = WatchEventType::kBookmark;
  } else if (type_name == "ERROR") {
    type = WatchEventType::kError;
  } else {
    throw std::invalid_argument(fmt::format("unknown watch event type \"{}\"", type_name));
  }
  const std::optional<json::Value> object = json::find_exact(event, "object");
  if (!object || !object->is_object()) {
    throw std::invalid_argument(fmt::format("{} watch event has no object", type_name));
  }
  return WatchEvent{type, *object};
}

ApiError error_from_status_value(const json::Value& status) {
  // Rare and small: read by the same code as the Status of a failed request.
  return error_from_status_object(Json::parse(simdjson::minify(status)));
}

std::string resource_version_of(const json::Value& object) {
  json::Object fields;
  if (object.get_object().get(fields) != simdjson::SUCCESS) return {};
  const std::optional<json::Value> metadata = json::find_exact(fields, "metadata");
  json::Object metadata_fields;
  if (!metadata || metadata->get_object().get(metadata_fields) != simdjson::SUCCESS) return {};
  const std::optional<json::Value> rv = json::find_exact(metadata_fields, "resourceVersion");
  std::string_view text;
  if (!rv || rv->get_string().get(text) != simdjson::SUCCESS) return {};
  return std::string(text);
}

std::string resource_version_of(const Json& object) {
  if (!object.is_object()) return {};
  const auto metadata = object.find("metadata");
  if (metadata == object.end() || !metadata->is_object()) return {};
  const auto rv = metadata->find("resourceVersion");
  if (rv == metadata->end() || !rv->is_string()) return {};
  return rv->get<std::string>();
}

}  // namespace gpushare::apiclient
