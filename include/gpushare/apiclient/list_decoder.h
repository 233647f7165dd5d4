#pragma once
// Decodes a Kubernetes list body ({"kind":…, "metadata":{…}, "items":[…]}) while its bytes
// arrive, handing each item over as soon as its closing brace is seen. Only the item being
// read (and the list's small metadata) is ever held, so a large pod list served from the watch
// cache (which ignores `limit`) never exists in memory as one string or one JSON tree.
//
// The top level is scanned by hand and each value is delimited by the one byte splitter
// (value_end.h); each item is then parsed, and fully validated, by simdjson and handed over as a
// DOM element (valid during the callback only); the list's few other members (metadata, kind)
// are parsed by nlohmann. Items are delivered before the end
// of the body is seen: a caller must stage them and only apply them once finish() succeeds.

#include <cstddef>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "gpushare/apiclient/value_end.h"
#include "gpushare/json/document.h"

namespace gpushare::apiclient {

class ListDecoder {
 public:
  using Json = nlohmann::json;
  using ItemCallback = std::function<void(const json::Value& item)>;

  static constexpr std::size_t kDefaultMaxValueBytes = 64u << 20;

  // `max_value_bytes` caps one item (or the metadata), not the body: bodies are unbounded.
  explicit ListDecoder(ItemCallback on_item, std::size_t max_value_bytes = kDefaultMaxValueBytes);

  // Feeds the next bytes of the body, split anywhere. Returns false once the body is known to be
  // malformed (error() says why; later calls do nothing). An exception thrown by the item
  // callback propagates to the caller and leaves the decoder failed.
  bool feed(std::string_view bytes);
  // The body ended: true only if it was exactly one complete list object.
  bool finish();
  // Forgets everything read so far (a new attempt at the same list); keeps the callback.
  void reset();

  bool failed() const { return state_ == State::kFailed; }
  const std::string& error() const { return error_; }
  std::size_t item_count() const { return items_; }
  std::size_t bytes_read() const { return bytes_; }
  // The list's metadata object (an empty object if the body had none).
  const Json& metadata() const { return metadata_; }
  std::string resource_version() const;
  std::string continue_token() const;

 private:
  enum class State {
    kStart,       // before the opening '{'
    kKeyOrEnd,    // after '{': a key or '}'
    kKey,         // after ',': a key
    kColon,       // after a key
    kValue,       // after ':' of a key other than "items"
    kItemsValue,  // after "items":  '[' or null
    kItemOrEnd,   // after '[': an item or ']'
    kItem,        // after ',' in items: an item
    kAfterItem,   // after an item: ',' or ']'
    kAfterValue,  // after a member: ',' or '}'
    kDone,        // after the closing '}'
    kFailed,
  };
  // What a captured value is for.
  enum class Target { kKey, kMember, kItems, kItem };
  enum class Shape { kContainer, kString, kScalar };

  bool fail(std::string message);
  // Starts capturing the value whose first byte is bytes[i]; false for an impossible first byte.
  bool begin_capture(char first, Target target);
  // Advances `i` through the captured value; true when it ended (i is then one past it).
  bool scan_capture(std::string_view bytes, std::size_t& i);
  bool complete_capture(std::string_view text);

  ItemCallback on_item_;
  std::size_t max_value_bytes_;

  State state_ = State::kStart;
  std::string error_;
  std::size_t items_ = 0;
  std::size_t bytes_ = 0;
  std::string key_;  // the member being read
  Json metadata_ = Json::object();

  // The value being captured; `buffer_` holds its bytes from earlier chunks only.
  bool capturing_ = false;
  Target target_ = Target::kMember;
  Shape shape_ = Shape::kScalar;
  ValueEnd value_end_;
  std::string buffer_;
  json::Parser parser_;  // the items' parser, reused from item to item
};

}  // namespace gpushare::apiclient
