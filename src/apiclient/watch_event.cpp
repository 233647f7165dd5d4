#include "gpushare/apiclient/watch_event.h"

#include <fmt/format.h>

#include <stdexcept>

namespace gpushare::apiclient {

std::string_view to_string(WatchEventType type) {
  switch (type) {
    case WatchEventType::kAdded: return "ADDED";
    case WatchEventType::kModified: return "MODIFIED";
    case WatchEventType::kDeleted: return "DELETED";
    case WatchEventType::kBookmark: return "BOOKMARK";
    case WatchEventType::kError: return "ERROR";
  }
  return "UNKNOWN";
}

std::string_view to_string(WatchEnd end) {
  switch (end) {
    case WatchEnd::kClosed: return "closed";
    case WatchEnd::kErrorEvent: return "error event";
    case WatchEnd::kHttpError: return "http error";
    case WatchEnd::kTransportError: return "transport error";
    case WatchEnd::kDecodeError: return "decode error";
    case WatchEnd::kHandlerError: return "handler error";
    case WatchEnd::kStopped: return "stopped";
  }
  return "unknown";
}

WatchEvent parse_watch_event(std::string_view text) {
  Json value = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (value.is_discarded()) throw std::invalid_argument("watch event is not valid JSON");
  if (!value.is_object()) throw std::invalid_argument("watch event is not a JSON object");
  const auto type_it = value.find("type");
  if (type_it == value.end() || !type_it->is_string()) {
    throw std::invalid_argument("watch event has no type");
  }
  const auto& type_name = type_it->get_ref<const std::string&>();
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
  const auto object_it = value.find("object");
  if (object_it == value.end() || !object_it->is_object()) {
    throw std::invalid_argument(fmt::format("{} watch event has no object", type_name));
  }
  return WatchEvent{type, std::move(*object_it)};
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
