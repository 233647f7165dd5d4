#pragma once
// The API client's one byte splitter: finds where a JSON object, array or string ends when its
// bytes arrive in chunks cut anywhere, for the watch framer (one event per value) and the list
// decoder (one item per value). It follows only strings and bracket depth: the text it delimits
// is then parsed, and so validated, by simdjson (gpushare/json/document.h).

#include <cstddef>
#include <string_view>

namespace gpushare::apiclient {

class ValueEnd {
 public:
  // Before the first byte of a new value ('{', '[' or '"').
  void reset() {
    depth_ = 0;
    in_string_ = false;
    escaped_ = false;
  }

  // Advances `i` through `bytes`, starting at the value's first byte or where the previous chunk
  // left off. True when the value ended: `i` is then one past its last byte.
  bool scan(std::string_view bytes, std::size_t& i) {
    const std::size_t n = bytes.size();
    const char* data = bytes.data();
    while (i < n) {
      if (in_string_) {
        // Strings are where the bytes are: look only for the closing quote and escapes.
        while (i < n && !escaped_ && data[i] != '"' && data[i] != '\\') ++i;
        if (i == n) return false;
        if (escaped_) {
          escaped_ = false;
        } else if (data[i] == '\\') {
          escaped_ = true;
        } else {  // the closing quote
          in_string_ = false;
          if (depth_ == 0) {
            ++i;
            return true;
          }
        }
        ++i;
        continue;
      }
      switch (data[i]) {
        case '"':
          in_string_ = true;
          break;
        case '{':
        case '[':
          ++depth_;
          break;
        case '}':
        case ']':
          // Bracket kinds are not matched, and a stray closer never takes the depth below zero:
          // the parser rejects such text afterwards.
          if (depth_ > 0 && --depth_ == 0) {
            ++i;
            return true;
          }
          break;
        default:
          break;
      }
      ++i;
    }
    return false;
  }

 private:
  std::size_t depth_ = 0;  // open objects and arrays
  bool in_string_ = false;
  bool escaped_ = false;
};

}  // namespace gpushare::apiclient
