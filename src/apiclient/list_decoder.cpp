#include "gpushare/apiclient/list_decoder.h"

#include <fmt/format.h>

#include <utility>

namespace gpushare::apiclient {
namespace {

bool is_space(char c) {
  return c == ' ' || c == '\n' || c == '\r' || c == '\t';
}

// A scalar (number, true, false, null) ends at the first byte that cannot belong to it.
bool ends_scalar(char c) {
  return c == ',' || c == '}' || c == ']' || is_space(c);
}

std::string string_member(const nlohmann::json& object, const char* name) {
  const auto it = object.find(name);
  return it != object.end() && it->is_string() ? it->get<std::string>() : std::string();
}

}  // namespace

ListDecoder::ListDecoder(ItemCallback on_item, std::size_t max_value_bytes)
    : on_item_(std::move(on_item)), max_value_bytes_(max_value_bytes) {}

void ListDecoder::reset() {
  state_ = State::kStart;
  error_.clear();
  items_ = 0;
  bytes_ = 0;
  key_.clear();
  metadata_ = Json::object();
  capturing_ = false;
  buffer_.clear();
  parser_.shrink();
}

std::string ListDecoder::resource_version() const {
  return string_member(metadata_, "resourceVersion");
}

std::string ListDecoder::continue_token() const {
  return string_member(metadata_, "continue");
}

bool ListDecoder::fail(std::string message) {
  state_ = State::kFailed;
  error_ = std::move(message);
  capturing_ = false;
  buffer_.clear();
  buffer_.shrink_to_fit();
  return false;
}

bool ListDecoder::begin_capture(char first, Target target) {
  if (first == '{' || first == '[') {
    shape_ = Shape::kContainer;
  } else if (first == '"') {
    shape_ = Shape::kString;
  } else if (first == '-' || (first >= '0' && first <= '9') || first == 't' || first == 'f' ||
             first == 'n') {
    shape_ = Shape::kScalar;
  } else {
    return false;
  }
  if (target == Target::kKey && shape_ != Shape::kString) return false;
  capturing_ = true;
  target_ = target;
  value_end_.reset();
  return true;
}

bool ListDecoder::scan_capture(std::string_view bytes, std::size_t& i) {
  if (shape_ == Shape::kScalar) {
    while (i < bytes.size() && !ends_scalar(bytes[i])) ++i;
    return i < bytes.size();
  }
  return value_end_.scan(bytes, i);
}

bool ListDecoder::complete_capture(std::string_view text) {
  switch (target_) {
    case Target::kKey:
      // Raw key text between the quotes: the members we look for never need escapes.
      key_.assign(text.substr(1, text.size() - 2));
      state_ = State::kColon;
      return true;
    case Target::kMember: {
      Json value = Json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
      if (value.is_discarded()) {
        return fail(fmt::format("list member \"{}\" is not valid JSON", key_));
      }
      if (key_ == "metadata") {
        if (value.is_null()) value = Json::object();
        if (!value.is_object()) return fail("list metadata is not an object");
        metadata_ = std::move(value);
      }
      state_ = State::kAfterValue;
      return true;
    }
    case Target::kItems: {
      Json value = Json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
      if (value.is_discarded() || !value.is_null()) return fail("list items is not an array");
      state_ = State::kAfterValue;
      return true;
    }
    case Target::kItem: {
      json::Value item;
      if (parser_.parse(text, item) != simdjson::SUCCESS) {
        return fail(fmt::format("list item {} is not valid JSON", items_));
      }
      ++items_;
      state_ = State::kAfterItem;
      try {
        on_item_(item);
      } catch (...) {
        fail(fmt::format("list item {} was rejected by the item callback", items_ - 1));
        throw;
      }
      return true;
    }
  }
  return fail("internal error: unknown capture target");
}

bool ListDecoder::feed(std::string_view bytes) {
  if (state_ == State::kFailed) return false;
  const std::size_t base = bytes_;
  bytes_ += bytes.size();
  const std::size_t n = bytes.size();
  std::size_t i = 0;
  std::size_t start = 0;  // first byte of the captured value in this chunk
  auto malformed = [&](std::string_view expected) {
    return fail(fmt::format("list response is malformed at byte {}: expected {}, found '{}'",
                            base + i, expected, bytes[i]));
  };
  auto capture = [&](Target target, std::string_view expected) {
    if (!begin_capture(bytes[i], target)) return malformed(expected);
    start = i;
    return true;
  };

  while (i < n) {
    if (capturing_) {
      if (!scan_capture(bytes, i)) break;
      const std::string_view piece = bytes.substr(start, i - start);
      std::string_view text = piece;
      if (!buffer_.empty()) {
        buffer_.append(piece);
        text = buffer_;
      }
      if (text.size() > max_value_bytes_) {
        return fail(fmt::format("a value in the list response exceeds {} bytes", max_value_bytes_));
      }
      capturing_ = false;
      const bool ok = complete_capture(text);
      buffer_.clear();
      if (!ok) return false;
      continue;
    }
    const char c = bytes[i];
    if (is_space(c)) {
      ++i;
      continue;
    }
    switch (state_) {
      case State::kStart:
        if (c != '{') return fail("list response is not a JSON object");
        state_ = State::kKeyOrEnd;
        ++i;
        break;
      case State::kKeyOrEnd:
        if (c == '}') {
          state_ = State::kDone;
          ++i;
          break;
        }
        if (!capture(Target::kKey, "a key or '}'")) return false;
        break;
      case State::kKey:
        if (!capture(Target::kKey, "a key")) return false;
        break;
      case State::kColon:
        if (c != ':') return malformed("':'");
        state_ = key_ == "items" ? State::kItemsValue : State::kValue;
        ++i;
        break;
      case State::kValue:
        if (!capture(Target::kMember, "a value")) return false;
        break;
      case State::kItemsValue:
        if (c == '[') {
          state_ = State::kItemOrEnd;
          ++i;
          break;
        }
        if (!begin_capture(c, Target::kItems)) return fail("list items is not an array");
        start = i;
        break;
      case State::kItemOrEnd:
        if (c == ']') {
          state_ = State::kAfterValue;
          ++i;
          break;
        }
        if (!capture(Target::kItem, "an item or ']'")) return false;
        break;
      case State::kItem:
        if (!capture(Target::kItem, "an item")) return false;
        break;
      case State::kAfterItem:
        if (c == ',') {
          state_ = State::kItem;
        } else if (c == ']') {
          state_ = State::kAfterValue;
        } else {
          return malformed("',' or ']' after an item");
        }
        ++i;
        break;
      case State::kAfterValue:
        if (c == ',') {
          state_ = State::kKey;
        } else if (c == '}') {
          state_ = State::kDone;
        } else {
          return malformed("',' or '}'");
        }
        ++i;
        break;
      case State::kDone:
        return malformed("nothing after the list object");
      case State::kFailed:
        return false;
    }
  }
  if (capturing_) {
    if (buffer_.size() + (n - start) > max_value_bytes_) {
      return fail(fmt::format("a value in the list response exceeds {} bytes", max_value_bytes_));
    }
    buffer_.append(bytes.substr(start));
  }
  return true;
}

bool ListDecoder::finish() {
  if (state_ == State::kFailed) return false;
  if (capturing_ && shape_ == Shape::kScalar) {
    // A scalar ends at the next byte; at the end of the body there is none.
    capturing_ = false;
    const std::string text = std::move(buffer_);
    buffer_.clear();
    if (!complete_capture(text)) return false;
  }
  if (state_ == State::kDone) return true;
  if (bytes_ == 0) return fail("list response is empty");
  return fail(
      fmt::format("list response ended early (after {} bytes and {} items)", bytes_, items_));
}

}  // namespace gpushare::apiclient
