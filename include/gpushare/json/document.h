#pragma once
// JSON text -> simdjson DOM, for every decoder of what arrives from outside: Kubernetes objects
// (kube), list items and watch events (apiclient) and extender requests (extender). Header-only
// and below both kube and apiclient, which must not depend on each other. Include it only from
// .cpp files: <simdjson.h> is large; public headers forward-declare simdjson::dom::element.
//
// simdjson's DOM parser validates the whole text (RFC 8259, UTF-8) as nlohmann's parse did, with
// two documented differences: an integer beyond 64 bits is an error (nlohmann read it as a
// double), and so is nesting deeper than kMaxDepth (docs/design.md, "Decoding JSON").

#include <simdjson.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "gpushare/json/keys.h"

static_assert(simdjson::SIMDJSON_VERSION_MAJOR == 3,
              "Parser::structural_positions reads simdjson 3's parser internals: re-check them");

namespace gpushare::json {

using Value = simdjson::dom::element;
using Object = simdjson::dom::object;
using Array = simdjson::dom::array;

// Nesting deeper than this is invalid JSON: Go's encoding/json limit, far beyond any Kubernetes
// object (simdjson's own default is 1024).
inline constexpr std::size_t kMaxDepth = 10000;

// A reusable parser: simdjson's (whose buffers grow to the largest document seen) and a padded
// copy of the text, since simdjson reads up to SIMDJSON_PADDING bytes past the end. One per
// thread or per stream: not thread-safe. A Value is valid until the next parse or destruction.
class Parser {
 public:
  Parser() { reset(); }

  // Parses `text`, copied into the padded buffer. Returns simdjson's error code (SUCCESS = 0).
  simdjson::error_code parse(std::string_view text, Value& out) {
    if (buffer_.size() < text.size() + simdjson::SIMDJSON_PADDING) {
      // Exactly the size needed: resize() would at least double the capacity (libstdc++), and a
      // parser kept warm between large bodies would hold the excess.
      std::string grown;
      grown.resize(text.size() + simdjson::SIMDJSON_PADDING);
      buffer_.swap(grown);
    }
    if (!text.empty()) text.copy(buffer_.data(), text.size());
    return parser_.parse(buffer_.data(), text.size(), /*realloc_if_needed=*/false).get(out);
  }

  // Parses `text` in place: its buffer must hold SIMDJSON_PADDING readable bytes after the end
  // (a std::string with that much spare capacity, see reserve_padding).
  simdjson::error_code parse_padded(std::string_view text, Value& out) {
    return parser_.parse(text.data(), text.size(), /*realloc_if_needed=*/false).get(out);
  }

  // Where the last successful parse found each structural character ({ } [ ] : ,) and the first
  // byte of each scalar, as offsets into the text parsed, in order. simdjson's stage 1 leaves
  // them in the parser; its `implementation` member is public but marked "for benchmarking
  // access", so this is pinned to simdjson 3 (static_assert below) and SourceSpans' tests catch a
  // change. Valid until the next parse or shrink.
  std::span<const std::uint32_t> structural_positions() const {
    if (!parser_.implementation) return {};
    return {parser_.implementation->structural_indexes.get(),
            parser_.implementation->n_structural_indexes};
  }

  // The longest text the parser can take without growing, and its padded copy's capacity.
  std::size_t capacity() const { return parser_.capacity(); }
  std::size_t copy_capacity() const { return buffer_.capacity(); }

  // The bytes its buffers hold, as simdjson 3 sizes them for capacity() and max_depth(): per
  // byte of text 8 of tape, 4 of structural positions and 5/3 of strings (~13.7), 9 per nesting
  // level (90 KB at kMaxDepth), and the padded copy. Pages never written stay unbacked, so the
  // resident part is smaller; this is what the parser could touch.
  std::size_t allocated_bytes() const {
    const std::size_t text = parser_.capacity();
    const auto rounded = [](std::size_t n) { return (n + 63) / 64 * 64; };
    const std::size_t simdjson_bytes =
        text == 0
            ? 0
            : 8 * rounded(text + 3) + 4 * (rounded(text) + 9) +
                  rounded(5 * text / 3 + simdjson::SIMDJSON_PADDING) + 9 * parser_.max_depth();
    return simdjson_bytes + buffer_.capacity();
  }

  // Gives back the buffers when a large document grew them beyond `keep` bytes of text: a
  // 40 MB request must not pin ~200 MB of tape on its worker thread for good.
  void shrink(std::size_t keep = std::size_t{1} << 20) {
    if (parser_.capacity() > keep) reset();
    if (buffer_.capacity() > keep + simdjson::SIMDJSON_PADDING) std::string().swap(buffer_);
  }

 private:
  void reset() {
    parser_ = simdjson::dom::parser{};
    // Fails only when out of memory; the first parse then reports it.
    if (parser_.allocate(kInitialCapacity, kMaxDepth) != simdjson::SUCCESS)
      parser_ = simdjson::dom::parser{};
  }

  static constexpr std::size_t kInitialCapacity = 4096;
  simdjson::dom::parser parser_;
  std::string buffer_;
};

// Makes `text` safe for Parser::parse_padded (may move its bytes once).
inline void reserve_padding(std::string& text) {
  text.reserve(text.size() + simdjson::SIMDJSON_PADDING);
}

// What nlohmann's type_name() called each kind: the words of our error messages.
inline const char* type_name(Value value) {
  switch (value.type()) {
    case simdjson::dom::element_type::ARRAY:
      return "array";
    case simdjson::dom::element_type::OBJECT:
      return "object";
    case simdjson::dom::element_type::INT64:
    case simdjson::dom::element_type::UINT64:
    case simdjson::dom::element_type::DOUBLE:
      return "number";
    case simdjson::dom::element_type::STRING:
      return "string";
    case simdjson::dom::element_type::BOOL:
      return "boolean";
    case simdjson::dom::element_type::NULL_VALUE:
      return "null";
  }
  return "unknown";
}

// The member named exactly `key`; of duplicates, the last (as a map built from the text keeps).
inline std::optional<Value> find_exact(Object object, std::string_view key) {
  std::optional<Value> found;
  for (const auto field : object) {
    if (field.key == key) found = field.value;
  }
  return found;
}

// A member and its position among the object's members.
struct Member {
  std::size_t index;
  Value value;
};

// The member matching `key` as Go's decoder (and kube::find_key before it) matches it: an exact
// match wins (the last of duplicates), else the byte-wise smallest key equal to it ignoring
// ASCII case (the last of its duplicates).
inline std::optional<Member> find_member_at(Object object, std::string_view key) {
  std::optional<Member> exact;
  std::optional<Member> folded;
  std::string_view folded_key;
  std::size_t index = 0;
  for (const auto field : object) {
    if (field.key == key) {
      exact = Member{index, field.value};
    } else if (!exact && equal_ignoring_case(field.key, key) &&
               (!folded || field.key <= folded_key)) {
      folded = Member{index, field.value};
      folded_key = field.key;
    }
    ++index;
  }
  return exact ? exact : folded;
}

inline std::optional<Value> find_member(Object object, std::string_view key) {
  const std::optional<Member> member = find_member_at(object, key);
  if (!member) return std::nullopt;
  return member->value;
}

}  // namespace gpushare::json
