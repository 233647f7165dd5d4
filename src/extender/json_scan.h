#pragma once
// A validating JSON scanner for large request bodies: walks the text once, checks it exactly
// as nlohmann::json::parse would accept or reject it, and hands out spans of the original
// text instead of building a DOM. Internal to the extender library (see wire_types.cpp).
//
// Accepts what nlohmann::json::parse (strict, no comments) accepts: RFC 8259 JSON, an optional
// UTF-8 byte-order mark, well-formed UTF-8 in strings, \u escapes with paired surrogates, and
// numbers that are finite as doubles. Nesting depth is unlimited (skipping is iterative).

#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>

namespace gpushare::extender::json_scan {

// The JSON text is not valid JSON.
class SyntaxError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Value kinds, named as nlohmann's type_name() names them (for error messages).
enum class Kind : std::uint8_t { kNull, kObject, kArray, kString, kBoolean, kNumber };
const char* kind_name(Kind kind);

class Scanner {
 public:
  explicit Scanner(std::string_view text);

  const char* position() const { return p_; }
  const char* begin() const { return begin_; }
  bool at_end() const { return p_ == end_; }

  // Skips a leading UTF-8 byte-order mark (nlohmann does) and whitespace.
  void skip_bom();
  void skip_ws() {
    while (p_ != end_ && (*p_ == ' ' || *p_ == '\n' || *p_ == '\r' || *p_ == '\t')) ++p_;
  }
  // The kind of the value at the current position (after whitespace); throws if none starts here.
  Kind peek_kind();
  // Consumes `c` (after whitespace) or throws.
  void expect(char c);
  // After whitespace: consumes `c` and returns true if it is next.
  bool consume(char c);

  // Skips one whole value, validating it.
  void skip_value();
  // Reads a string; `out` receives its unescaped UTF-8 (replaced, not appended).
  void read_string(std::string& out);
  // Skips a string, validating it.
  void skip_string();

  // Object iteration: begin_object() on '{', then next_member(key, first) with `first` true
  // until it returns false; after each true, the scanner stands at the member's value, which
  // the caller must consume (skip_value() or a typed read).
  void begin_object() { expect('{'); }
  bool next_member(std::string& key, bool& first);
  // Array iteration, likewise: begin_array(), then next_element(first) until false.
  void begin_array() { expect('['); }
  bool next_element(bool& first);

  [[noreturn]] void fail(const char* what) const;

 private:
  // Scans a string starting after its opening quote; unescapes into `out` when not null.
  void scan_string_body(std::string* out);
  void scan_number();
  void scan_literal(std::string_view word);
  void check_finite(const char* start, bool floating) const;

  const char* begin_;
  const char* p_;
  const char* end_;
};

// Length of the well-formed UTF-8 sequence (RFC 3629, as nlohmann checks it) that starts at
// the non-ASCII byte *p, or 0 if it is not well-formed.
int utf8_sequence_length(const char* p, const char* end);

// Index of the first byte of `text` that a JSON string cannot hold as is (a quote, a backslash,
// a control character) or that is not ASCII; text.size() if there is none.
std::size_t first_special(std::string_view text);

// ASCII case-insensitive equality, as Go's encoding/json matches field names.
bool equal_ignoring_case(std::string_view a, std::string_view b);

}  // namespace gpushare::extender::json_scan
