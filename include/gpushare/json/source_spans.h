#pragma once
// The source text of values inside a document the DOM parser has accepted, found from the
// parser's structural positions (Parser::structural_positions) rather than a second parse: the
// filter verb echoes the Nodes it keeps back verbatim, and simdjson's DOM keeps no positions.
// Strings are one structural each (stage 1 masks their insides), so braces and brackets inside
// strings never count; a walk over ~2 million structurals of a 38 MB body takes milliseconds.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

namespace gpushare::json {

namespace source_spans_detail {

// Walks structural positions of `text`; every step checks its bounds, so a surprise (a future
// simdjson laying them out differently) yields nullopt, never a read out of range.
class StructuralWalk {
 public:
  StructuralWalk(std::string_view text, std::span<const std::uint32_t> positions)
      : text_(text), positions_(positions) {}

  // The character at structural `i`, or '\0' past the end.
  char at(std::size_t i) const {
    if (i >= positions_.size() || positions_[i] >= text_.size()) return '\0';
    return text_[positions_[i]];
  }

  std::uint32_t position(std::size_t i) const { return positions_[i]; }

  // The structural just past the value that starts at `i`.
  std::optional<std::size_t> skip_value(std::size_t i) const {
    const char first = at(i);
    if (first == '\0') return std::nullopt;
    if (first != '{' && first != '[') return i + 1;
    std::size_t depth = 0;
    for (; i < positions_.size(); ++i) {
      const char c = at(i);
      if (c == '{' || c == '[') {
        ++depth;
      } else if (c == '}' || c == ']') {
        if (--depth == 0) return i + 1;
      }
    }
    return std::nullopt;
  }

  // The structural where the value of the object's `index`-th member begins; the object starts
  // at structural `i`.
  std::optional<std::size_t> member_value(std::size_t i, std::size_t index) const {
    if (at(i) != '{') return std::nullopt;
    std::size_t key = i + 1;
    for (std::size_t member = 0;; ++member) {
      if (at(key) != '"' || at(key + 1) != ':') return std::nullopt;
      if (member == index) return key + 2;
      const std::optional<std::size_t> after = skip_value(key + 2);
      if (!after || at(*after) != ',') return std::nullopt;
      key = *after + 1;
    }
  }

 private:
  std::string_view text_;
  std::span<const std::uint32_t> positions_;
};

}  // namespace source_spans_detail

// The text of each element of the array reached from the top-level object by `member_path`
// (member positions, as json::find_member_at reports them, outermost first). `text` and
// `positions` must come from one successful parse. nullopt if the path does not lead to an array.
inline std::optional<std::vector<std::string_view>> array_element_texts(
    std::string_view text, std::span<const std::uint32_t> positions,
    std::span<const std::size_t> member_path) {
  const source_spans_detail::StructuralWalk walk(text, positions);
  std::size_t at = 0;
  for (const std::size_t member : member_path) {
    const std::optional<std::size_t> value = walk.member_value(at, member);
    if (!value) return std::nullopt;
    at = *value;
  }
  if (walk.at(at) != '[') return std::nullopt;
  std::vector<std::string_view> texts;
  if (walk.at(at + 1) == ']') return texts;
  std::size_t element = at + 1;
  while (true) {
    const std::optional<std::size_t> after = walk.skip_value(element);
    if (!after) return std::nullopt;
    const std::size_t begin = walk.position(element);
    std::size_t end = 0;
    const char first = walk.at(element);
    if (first == '{' || first == '[') {
      end = walk.position(*after - 1) + 1;  // the closing brace or bracket
    } else {
      // A scalar ends where the next structural (',' or ']') begins, less any whitespace.
      end = walk.position(*after);
      while (end > begin && (text[end - 1] == ' ' || text[end - 1] == '\t' ||
                             text[end - 1] == '\n' || text[end - 1] == '\r')) {
        --end;
      }
    }
    texts.push_back(text.substr(begin, end - begin));
    if (walk.at(*after) == ']') return texts;
    if (walk.at(*after) != ',') return std::nullopt;
    element = *after + 1;
  }
}

}  // namespace gpushare::json
