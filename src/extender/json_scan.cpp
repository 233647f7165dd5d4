#include "json_scan.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace gpushare::extender::json_scan {
namespace {

constexpr bool is_digit(char c) { return c >= '0' && c <= '9'; }

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

void append_utf8(std::string& out, std::uint32_t cp) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

}  // namespace

const char* kind_name(Kind kind) {
  switch (kind) {
    case Kind::kNull: return "null";
    case Kind::kObject: return "object";
    case Kind::kArray: return "array";
    case Kind::kString: return "string";
    case Kind::kBoolean: return "boolean";
    case Kind::kNumber: return "number";
  }
  return "unknown";
}

int utf8_sequence_length(const char* p, const char* end) {
  auto byte = [&](std::ptrdiff_t i) -> unsigned {
    return end - p > i ? static_cast<unsigned char>(p[i]) : 0u;
  };
  auto in = [](unsigned b, unsigned lo, unsigned hi) { return b >= lo && b <= hi; };
  const unsigned c = byte(0);
  if (in(c, 0xC2, 0xDF)) return in(byte(1), 0x80, 0xBF) ? 2 : 0;
  if (c == 0xE0) return in(byte(1), 0xA0, 0xBF) && in(byte(2), 0x80, 0xBF) ? 3 : 0;
  if (in(c, 0xE1, 0xEC) || in(c, 0xEE, 0xEF)) {
    return in(byte(1), 0x80, 0xBF) && in(byte(2), 0x80, 0xBF) ? 3 : 0;
  }
  if (c == 0xED) return in(byte(1), 0x80, 0x9F) && in(byte(2), 0x80, 0xBF) ? 3 : 0;
  if (c == 0xF0) {
    return in(byte(1), 0x90, 0xBF) && in(byte(2), 0x80, 0xBF) && in(byte(3), 0x80, 0xBF) ? 4 : 0;
  }
  if (in(c, 0xF1, 0xF3)) {
    return in(byte(1), 0x80, 0xBF) && in(byte(2), 0x80, 0xBF) && in(byte(3), 0x80, 0xBF) ? 4 : 0;
  }
  if (c == 0xF4) {
    return in(byte(1), 0x80, 0x8F) && in(byte(2), 0x80, 0xBF) && in(byte(3), 0x80, 0xBF) ? 4 : 0;
  }
  return 0;
}

std::size_t first_special(std::string_view text) {
  const char* begin = text.data();
  const char* p = begin;
  const char* end = p + text.size();
#if defined(__SSE2__)
  if (text.size() >= 16) {
    const __m128i quote = _mm_set1_epi8('"');
    const __m128i backslash = _mm_set1_epi8('\\');
    const __m128i space = _mm_set1_epi8(0x20);
    auto specials = [&](const char* at) {
      const __m128i chunk = _mm_loadu_si128(reinterpret_cast<const __m128i*>(at));
      return _mm_movemask_epi8(_mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(chunk, quote), _mm_cmpeq_epi8(chunk, backslash)),
                                            _mm_cmplt_epi8(chunk, space)));
    };
    for (; end - p >= 16; p += 16) {
      if (const int mask = specials(p)) return static_cast<std::size_t>(p - begin + __builtin_ctz(static_cast<unsigned>(mask)));
    }
    if (p != end) {
      // The last 16 bytes, overlapping bytes already known to be plain.
      const char* last = end - 16;
      if (const int mask = specials(last)) return static_cast<std::size_t>(last - begin + __builtin_ctz(static_cast<unsigned>(mask)));
    }
    return text.size();
  }
#endif
  for (; p != end; ++p) {
    const unsigned char c = static_cast<unsigned char>(*p);
    if (c == '"' || c == '\\' || c < 0x20 || c >= 0x80) break;
  }
  return static_cast<std::size_t>(p - begin);
}

bool equal_ignoring_case(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    char x = a[i];
    char y = b[i];
    if (x >= 'A' && x <= 'Z') x = static_cast<char>(x - 'A' + 'a');
    if (y >= 'A' && y <= 'Z') y = static_cast<char>(y - 'A' + 'a');
    if (x != y) return false;
  }
  return true;
}

Scanner::Scanner(std::string_view text)
    : begin_(text.data()), p_(text.data()), end_(text.data() + text.size()) {}

void Scanner::fail(const char* what) const {
  throw SyntaxError(std::string(what) + " at byte " + std::to_string(p_ - begin_));
}

void Scanner::skip_bom() {
  if (p_ == begin_ && p_ != end_ && static_cast<unsigned char>(*p_) == 0xEF) {
    if (end_ - p_ < 3 || static_cast<unsigned char>(p_[1]) != 0xBB ||
        static_cast<unsigned char>(p_[2]) != 0xBF) {
      fail("invalid byte-order mark");
    }
    p_ += 3;
  }
  skip_ws();
}

Kind Scanner::peek_kind() {
  skip_ws();
  if (p_ == end_) fail("unexpected end of input");
  switch (*p_) {
    case '{': return Kind::kObject;
    case '[': return Kind::kArray;
    case '"': return Kind::kString;
    case 't':
    case 'f': return Kind::kBoolean;
    case 'n': return Kind::kNull;
    default:
      if (*p_ == '-' || is_digit(*p_)) return Kind::kNumber;
      fail("unexpected character");
  }
}

void Scanner::expect(char c) {
  skip_ws();
  if (p_ == end_ || *p_ != c) fail("unexpected character");
  ++p_;
}

bool Scanner::consume(char c) {
  skip_ws();
  if (p_ != end_ && *p_ == c) {
    ++p_;
    return true;
  }
  return false;
}

bool Scanner::next_member(std::string& key, bool& first) {
  skip_ws();
  if (p_ == end_) fail("unexpected end of input in object");
  if (first) {
    first = false;
    if (*p_ == '}') {
      ++p_;
      return false;
    }
  } else if (*p_ == '}') {
    ++p_;
    return false;
  } else if (*p_ == ',') {
    ++p_;
    skip_ws();
  } else {
    fail("expected ',' or '}'");
  }
  if (p_ == end_ || *p_ != '"') fail("expected an object key");
  ++p_;
  scan_string_body(&key);
  expect(':');
  skip_ws();
  return true;
}

bool Scanner::next_element(bool& first) {
  skip_ws();
  if (p_ == end_) fail("unexpected end of input in array");
  if (first) {
    first = false;
    if (*p_ == ']') {
      ++p_;
      return false;
    }
    return true;
  }
  if (*p_ == ']') {
    ++p_;
    return false;
  }
  if (*p_ != ',') fail("expected ',' or ']'");
  ++p_;
  skip_ws();
  return true;
}

void Scanner::read_string(std::string& out) {
  skip_ws();
  if (p_ == end_ || *p_ != '"') fail("expected a string");
  ++p_;
  scan_string_body(&out);
}

void Scanner::skip_string() {
  skip_ws();
  if (p_ == end_ || *p_ != '"') fail("expected a string");
  ++p_;
  scan_string_body(nullptr);
}

void Scanner::scan_string_body(std::string* out) {
  if (out) out->clear();
  const char* run = p_;  // start of the pending run of plain characters
  for (;;) {
#if defined(__SSE2__)
    // 16 bytes at a time to the next quote, backslash, control or non-ASCII byte.
    const __m128i quote = _mm_set1_epi8('"');
    const __m128i backslash = _mm_set1_epi8('\\');
    const __m128i space = _mm_set1_epi8(0x20);
    while (end_ - p_ >= 16) {
      const __m128i chunk = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p_));
      // Signed compare: bytes 0x00..0x1F and 0x80..0xFF are both "less than 0x20".
      const __m128i special = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(chunk, quote), _mm_cmpeq_epi8(chunk, backslash)),
                                           _mm_cmplt_epi8(chunk, space));
      const int mask = _mm_movemask_epi8(special);
      if (mask != 0) {
        p_ += __builtin_ctz(static_cast<unsigned>(mask));
        break;
      }
      p_ += 16;
    }
#endif
    while (p_ != end_) {
      const unsigned char c = static_cast<unsigned char>(*p_);
      if (c == '"' || c == '\\' || c < 0x20 || c >= 0x80) break;
      ++p_;
    }
    if (p_ == end_) fail("unterminated string");
    const unsigned char c = static_cast<unsigned char>(*p_);
    if (c == '"') {
      if (out) out->append(run, p_);
      ++p_;
      return;
    }
    if (c < 0x20) fail("control character in string");
    if (c >= 0x80) {
      const int length = utf8_sequence_length(p_, end_);
      if (length == 0) fail("invalid UTF-8 in string");
      p_ += length;
      continue;
    }
    // Backslash escape.
    if (out) out->append(run, p_);
    ++p_;
    if (p_ == end_) fail("unterminated escape");
    const char e = *p_++;
    char plain = 0;
    switch (e) {
      case '"': plain = '"'; break;
      case '\\': plain = '\\'; break;
      case '/': plain = '/'; break;
      case 'b': plain = '\b'; break;
      case 'f': plain = '\f'; break;
      case 'n': plain = '\n'; break;
      case 'r': plain = '\r'; break;
      case 't': plain = '\t'; break;
      case 'u': {
        auto code_unit = [&]() -> std::uint32_t {
          if (end_ - p_ < 4) fail("truncated \\u escape");
          std::uint32_t value = 0;
          for (int i = 0; i < 4; ++i) {
            const int h = hex_value(p_[i]);
            if (h < 0) fail("invalid \\u escape");
            value = value * 16 + static_cast<std::uint32_t>(h);
          }
          p_ += 4;
          return value;
        };
        std::uint32_t cp = code_unit();
        if (cp >= 0xD800 && cp <= 0xDBFF) {
          if (end_ - p_ < 2 || p_[0] != '\\' || p_[1] != 'u') fail("unpaired surrogate");
          p_ += 2;
          const std::uint32_t low = code_unit();
          if (low < 0xDC00 || low > 0xDFFF) fail("unpaired surrogate");
          cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
        } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
          fail("unpaired surrogate");
        }
        if (out) append_utf8(*out, cp);
        break;
      }
      default:
        fail("invalid escape");
    }
    if (out && plain != 0) out->push_back(plain);
    run = p_;
  }
}

void Scanner::scan_literal(std::string_view word) {
  if (static_cast<std::size_t>(end_ - p_) < word.size() || std::memcmp(p_, word.data(), word.size()) != 0) {
    fail("invalid literal");
  }
  p_ += word.size();
}

void Scanner::check_finite(const char* start, bool floating) const {
  // nlohmann parses numbers that do not fit 64-bit integers as doubles and rejects those
  // that overflow to infinity; only long or exponent/fraction numbers can.
  const std::size_t length = static_cast<std::size_t>(p_ - start);
  if (!floating && length <= 18) return;
  const std::string token(start, p_);
  errno = 0;
  const double value = std::strtod(token.c_str(), nullptr);
  if (!std::isfinite(value)) throw SyntaxError("number overflow at byte " + std::to_string(start - begin_));
}

void Scanner::scan_number() {
  const char* start = p_;
  bool floating = false;
  if (*p_ == '-') ++p_;
  if (p_ == end_ || !is_digit(*p_)) fail("invalid number");
  if (*p_ == '0') {
    ++p_;
  } else {
    while (p_ != end_ && is_digit(*p_)) ++p_;
  }
  if (p_ != end_ && *p_ == '.') {
    floating = true;
    ++p_;
    if (p_ == end_ || !is_digit(*p_)) fail("invalid number");
    while (p_ != end_ && is_digit(*p_)) ++p_;
  }
  if (p_ != end_ && (*p_ == 'e' || *p_ == 'E')) {
    floating = true;
    ++p_;
    if (p_ != end_ && (*p_ == '+' || *p_ == '-')) ++p_;
    if (p_ == end_ || !is_digit(*p_)) fail("invalid number");
    while (p_ != end_ && is_digit(*p_)) ++p_;
  }
  check_finite(start, floating);
}

void Scanner::skip_value() {
  // Iterative, so nesting depth is bounded by memory rather than by the call stack.
  std::string open;  // '{' or '[' per enclosing container
  for (;;) {
    skip_ws();
    if (p_ == end_) fail("unexpected end of input");
    const char c = *p_;
    if (c == '{' || c == '[') {
      ++p_;
      skip_ws();
      const char close = c == '{' ? '}' : ']';
      if (p_ != end_ && *p_ == close) {
        ++p_;
      } else {
        open.push_back(c);
        if (c == '{') {
          if (p_ == end_ || *p_ != '"') fail("expected an object key");
          ++p_;
          scan_string_body(nullptr);
          expect(':');
        }
        continue;  // to the first member's value
      }
    } else if (c == '"') {
      ++p_;
      scan_string_body(nullptr);
    } else if (c == 't') {
      scan_literal("true");
    } else if (c == 'f') {
      scan_literal("false");
    } else if (c == 'n') {
      scan_literal("null");
    } else if (c == '-' || is_digit(c)) {
      scan_number();
    } else {
      fail("unexpected character");
    }
    // A value is complete: close containers until one continues with ','.
    for (;;) {
      if (open.empty()) return;
      skip_ws();
      if (p_ == end_) fail("unexpected end of input");
      if (*p_ == ',') {
        ++p_;
        if (open.back() == '{') {
          skip_ws();
          if (p_ == end_ || *p_ != '"') fail("expected an object key");
          ++p_;
          scan_string_body(nullptr);
          expect(':');
        }
        break;
      }
      if (*p_ != (open.back() == '{' ? '}' : ']')) fail("expected ',' or a closing bracket");
      ++p_;
      open.pop_back();
    }
  }
}

}  // namespace gpushare::extender::json_scan
