#pragma once
// The API client's one byte splitter: finds where a JSON object, array or string ends when its
// bytes arrive in chunks cut anywhere, for the watch framer (one event per value) and the list
// decoder (one item per value). It follows only strings and bracket depth: the text it delimits
// is then parsed, and so validated, by simdjson (gpushare/json/document.h).
//
// Every byte of a relist is scanned here. Inside an object or array it looks at
// 64 bytes at once where SSE2 is available (all x86-64): bit masks of quotes and brackets, strings
// found by a prefix XOR of the quotes, the depth moved by the brackets outside them (as simdjson's
// first stage does). A block holding a backslash, and every byte elsewhere, goes through the byte
// loop, which defines the behaviour.

#include <cstddef>
#include <cstdint>
#include <string_view>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

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
#if defined(__SSE2__)
      if (n - i >= kBlock) {
        if (depth_ > 0 && !escaped_) {
          const Block block = scan_block(data, i);
          if (block == Block::kEnded) return true;
          if (block == Block::kPassed) continue;
          // A backslash: this block byte by byte (escapes are rare: escaped JSON in annotations).
          if (scan_bytes(data, i, i + kBlock)) return true;
          continue;
        }
        // The value's first byte, a pending escape, or a bare string (ends at its first quote).
        if (scan_bytes(data, i, i + 1)) return true;
        continue;
      }
#endif
      return scan_bytes(data, i, n);
    }
    return false;
  }

 private:
  // The byte loop over [i, limit): true when the value ended (i one past it).
  bool scan_bytes(const char* data, std::size_t& i, std::size_t limit) {
    while (i < limit) {
      if (in_string_) {
        // Strings are where the bytes are: look only for the closing quote and escapes.
        while (i < limit && !escaped_ && data[i] != '"' && data[i] != '\\') ++i;
        if (i == limit) return false;
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

#if defined(__SSE2__)
  static constexpr std::size_t kBlock = 64;
  enum class Block { kEnded, kPassed, kBackslash };

  // Bit masks of the 64 bytes at `block`: one bit per byte that is a quote, a backslash, an
  // opening or a closing bracket. '{' | 0x20 == '[' | 0x20 == '{', '}' | 0x20 == ']' | 0x20 == '}',
  // and no other byte maps there.
  struct Masks {
    std::uint64_t quotes = 0, backslashes = 0, opens = 0, closes = 0;
  };
  static Masks masks_of(const char* block) {
    const __m128i quote = _mm_set1_epi8('"');
    const __m128i backslash = _mm_set1_epi8('\\');
    const __m128i fold = _mm_set1_epi8(0x20);
    const __m128i open = _mm_set1_epi8('{');
    const __m128i close = _mm_set1_epi8('}');
    auto bits = [](__m128i equal, int part) {
      return static_cast<std::uint64_t>(static_cast<std::uint32_t>(_mm_movemask_epi8(equal)) &
                                        0xFFFFu)
             << (16 * part);
    };
    Masks masks;
    for (int part = 0; part < 4; ++part) {
      const __m128i bytes = _mm_loadu_si128(reinterpret_cast<const __m128i*>(block + 16 * part));
      const __m128i folded = _mm_or_si128(bytes, fold);
      masks.quotes |= bits(_mm_cmpeq_epi8(bytes, quote), part);
      masks.backslashes |= bits(_mm_cmpeq_epi8(bytes, backslash), part);
      masks.opens |= bits(_mm_cmpeq_epi8(folded, open), part);
      masks.closes |= bits(_mm_cmpeq_epi8(folded, close), part);
    }
    return masks;
  }

  // Bit k set when an odd number of bits at or below k are set in x.
  static std::uint64_t prefix_xor(std::uint64_t x) {
    for (int shift = 1; shift < 64; shift *= 2) x ^= x << shift;
    return x;
  }

  // The 64 bytes at data + i, with depth_ > 0 and no escape pending.
  Block scan_block(const char* data, std::size_t& i) {
    const Masks masks = masks_of(data + i);
    if (masks.backslashes != 0) return Block::kBackslash;
    // Inside a string: from its opening quote up to, not including, its closing quote.
    std::uint64_t strings = prefix_xor(masks.quotes);
    if (in_string_) strings = ~strings;
    const std::uint64_t opens = masks.opens & ~strings;
    const std::uint64_t closes = masks.closes & ~strings;
    const auto closing = static_cast<std::size_t>(__builtin_popcountll(closes));
    if (closing < depth_) {  // cannot reach depth 0 here
      depth_ = depth_ + static_cast<std::size_t>(__builtin_popcountll(opens)) - closing;
      in_string_ = (strings >> 63) != 0;
      i += kBlock;
      return Block::kPassed;
    }
    for (std::uint64_t brackets = opens | closes; brackets != 0; brackets &= brackets - 1) {
      const int bit = __builtin_ctzll(brackets);
      if ((opens >> bit) & 1) {
        ++depth_;
      } else if (--depth_ == 0) {
        in_string_ = false;
        i += static_cast<std::size_t>(bit) + 1;
        return Block::kEnded;
      }
    }
    in_string_ = (strings >> 63) != 0;
    i += kBlock;
    return Block::kPassed;
  }
#endif

  std::size_t depth_ = 0;  // open objects and arrays
  bool in_string_ = false;
  bool escaped_ = false;
};

}  // namespace gpushare::apiclient
