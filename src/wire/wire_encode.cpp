// The replies of the extender protocol (ExtenderFilterResult, HostPriorityList,
// ExtenderBindingResult, ExtenderPreemptionResult), written straight into one buffer. The
// requests are decoded in wire_decode.cpp.

#include <algorithm>
#include <charconv>
#include <cstring>
#include <span>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include <simdjson.h>

#include "gpushare/wire/filter_reply.h"
#include "gpushare/wire/wire_encode.h"

namespace gpushare::wire {

namespace {

// Index of the first byte of `text` that a JSON string cannot hold as is (a quote, a backslash,
// a control character) or that is not ASCII; text.size() if there is none.
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
      return _mm_movemask_epi8(
          _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(chunk, quote), _mm_cmpeq_epi8(chunk, backslash)),
                       _mm_cmplt_epi8(chunk, space)));
    };
    for (; end - p >= 16; p += 16) {
      if (const int mask = specials(p))
        return static_cast<std::size_t>(p - begin + __builtin_ctz(static_cast<unsigned>(mask)));
    }
    if (p != end) {
      // The last 16 bytes, overlapping bytes already known to be plain.
      const char* last = end - 16;
      if (const int mask = specials(last))
        return static_cast<std::size_t>(last - begin + __builtin_ctz(static_cast<unsigned>(mask)));
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

bool valid_utf8(std::string_view text) {
  return simdjson::validate_utf8(text.data(), text.size());
}

// Appends `text` as a JSON string exactly as nlohmann's dump(-1, ' ', false, replace) writes it
// (the slow path of Writer::string: text with characters to escape or non-ASCII bytes).
void append_escaped(std::string& out, std::string_view text, std::size_t special) {
  if (!valid_utf8(text.substr(special))) {
    out += Json(std::string(text)).dump(-1, ' ', false, Json::error_handler_t::replace);
    return;
  }
  out.push_back('"');
  out.append(text.data(), special);
  const char* run = text.data() + special;
  const char* end = text.data() + text.size();
  for (const char* p = run; p != end; ++p) {
    const unsigned char c = static_cast<unsigned char>(*p);
    if (c >= 0x20 && c != '"' && c != '\\') continue;
    out.append(run, p);
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\b':
        out += "\\b";
        break;
      case '\f':
        out += "\\f";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default: {
        static constexpr char kHex[] = "0123456789abcdef";
        out += "\\u00";
        out.push_back(kHex[c >> 4]);
        out.push_back(kHex[c & 0xF]);
      }
    }
    run = p + 1;
  }
  out.append(run, end);
  out.push_back('"');
}

// Writes a reply into one buffer, sized up front from an estimate, with inline bounds checks.
class Writer {
 public:
  explicit Writer(std::size_t estimate) : buffer_(std::max<std::size_t>(estimate, 64), '\0') {
    p_ = buffer_.data();
    end_ = p_ + buffer_.size();
  }

  void raw(std::string_view text) {
    room(text.size());
    std::memcpy(p_, text.data(), text.size());
    p_ += text.size();
  }
  void raw(char c) {
    room(1);
    *p_++ = c;
  }
  // A JSON string, byte for byte as nlohmann writes it.
  void string(std::string_view text) {
    const std::size_t special = first_special(text);
    if (special != text.size()) {
      std::string escaped;
      append_escaped(escaped, text, special);
      raw(escaped);
      return;
    }
    room(text.size() + 2);
    *p_++ = '"';
    std::memcpy(p_, text.data(), text.size());
    p_ += text.size();
    *p_++ = '"';
  }
  void integer(std::int64_t value) {
    room(24);
    p_ = std::to_chars(p_, end_, value).ptr;
  }
  void string_map(const std::map<std::string, std::string>& values) {
    raw('{');
    bool first = true;
    for (const auto& [key, value] : values) {
      if (!first) raw(',');
      first = false;
      string(key);
      raw(':');
      string(value);
    }
    raw('}');
  }
  std::string finish() {
    buffer_.resize(static_cast<std::size_t>(p_ - buffer_.data()));
    return std::move(buffer_);
  }

 private:
  void room(std::size_t n) {
    if (static_cast<std::size_t>(end_ - p_) >= n) return;
    const std::size_t used = static_cast<std::size_t>(p_ - buffer_.data());
    buffer_.resize(std::max(buffer_.size() * 2, used + n));
    p_ = buffer_.data() + used;
    end_ = buffer_.data() + buffer_.size();
  }

  std::string buffer_;
  char* p_;
  char* end_;
};

constexpr std::string_view kNodeListHead = "{\"apiVersion\":\"v1\",\"items\":[";
constexpr std::string_view kNodeListTail = "],\"kind\":\"NodeList\",\"metadata\":{}}}";

// The size of a filter reply up to its "Nodes" member, roughly.
std::size_t filter_head_estimate(const FilterResult& result) {
  std::size_t estimate = 160 + result.error.size();
  for (const auto& name : result.node_names) estimate += name.size() + 3;
  for (const auto* map : {&result.failed, &result.failed_unresolvable}) {
    for (const auto& [node, reason] : *map) estimate += node.size() + reason.size() + 6;
  }
  return estimate;
}

// A filter reply up to and including the "Nodes" member's key.
void write_filter_head(Writer& out, const FilterResult& result) {
  out.raw("{\"Error\":");
  out.string(result.error);
  out.raw(",\"FailedAndUnresolvableNodes\":");
  out.string_map(result.failed_unresolvable);
  out.raw(",\"FailedNodes\":");
  out.string_map(result.failed);
  out.raw(",\"NodeNames\":[");
  for (std::size_t i = 0; i < result.node_names.size(); ++i) {
    if (i > 0) out.raw(',');
    out.string(result.node_names[i]);
  }
  out.raw("],\"Nodes\":");
}

}  // namespace

// The replies are written directly rather than through a DOM, byte for byte as nlohmann
// would dump them (keys in its sorted order, compact, invalid UTF-8 replaced).
std::string encode_filter_result(const FilterResult& result) {
  std::size_t estimate = filter_head_estimate(result);
  if (result.node_texts) {
    for (std::string_view text : *result.node_texts) estimate += text.size() + 1;
  }
  Writer out(estimate);
  write_filter_head(out, result);
  if (result.nodes || result.node_texts) {
    out.raw(kNodeListHead);
    bool first = true;
    if (result.nodes) {
      for (const Json& node : *result.nodes) {
        if (!first) out.raw(',');
        first = false;
        out.raw(node.dump(-1, ' ', false, Json::error_handler_t::replace));
      }
    } else {
      for (std::string_view text : *result.node_texts) {
        if (!first) out.raw(',');
        first = false;
        out.raw(text);
      }
    }
    out.raw(kNodeListTail);
  } else {
    out.raw("null}");
  }
  return out.finish();
}

FilterReply::FilterReply(FilterResult result) {
  if (!result.node_texts || result.nodes) {
    head_ = encode_filter_result(result);
    size_ = head_.size();
    return;
  }
  Writer out(filter_head_estimate(result) + kNodeListHead.size());
  write_filter_head(out, result);
  out.raw(kNodeListHead);
  head_ = out.finish();
  items_ = std::move(*result.node_texts);
  source_ = std::move(result.node_source);
  item_starts_.reserve(items_.size());
  std::size_t at = head_.size();
  for (std::size_t i = 0; i < items_.size(); ++i) {
    if (i > 0) ++at;  // the comma before it
    item_starts_.push_back(at);
    at += items_[i].size();
  }
  tail_ = kNodeListTail;
  size_ = at + tail_.size();
}

std::size_t FilterReply::copy(std::size_t offset, std::span<char> out) const {
  std::size_t pos = offset;  // the reply's byte copied next
  std::size_t n = 0;
  // Copies what of `piece` (at `start` in the reply) lies at pos on; false once `out` is full.
  auto take = [&](std::string_view piece, std::size_t start) {
    if (pos >= start && pos < start + piece.size()) {
      const std::size_t count = std::min(start + piece.size() - pos, out.size() - n);
      std::memcpy(out.data() + n, piece.data() + (pos - start), count);
      n += count;
      pos += count;
    }
    return n < out.size();
  };
  if (!take(head_, 0)) return n;
  // The item pos is in, or the one before the comma pos is on.
  const auto after = std::upper_bound(item_starts_.begin(), item_starts_.end(), pos);
  for (auto i =
           static_cast<std::size_t>(std::max(after - item_starts_.begin() - 1, std::ptrdiff_t{0}));
       i < items_.size(); ++i) {
    if (i > 0 && !take(",", item_starts_[i] - 1)) return n;
    if (!take(items_[i], item_starts_[i])) return n;
  }
  take(tail_, size_ - tail_.size());
  return n;
}

std::size_t FilterReply::owned_bytes() const {
  return head_.capacity() + tail_.capacity() + item_starts_.capacity() * sizeof(std::size_t) +
         items_.capacity() * sizeof(std::string_view);
}

HostPriorityList::HostPriorityList(std::initializer_list<HostPriority> priorities) {
  std::size_t bytes = 0;
  for (const HostPriority& priority : priorities) bytes += priority.host.size();
  reserve(priorities.size(), bytes);
  for (const HostPriority& priority : priorities) push_back(priority.host, priority.score);
}

std::string encode_priorities(const HostPriorityList& priorities) {
  Writer out(2 + priorities.name_bytes() + 24 * priorities.size());
  out.raw('[');
  for (std::size_t i = 0; i < priorities.size(); ++i) {
    out.raw(i > 0 ? std::string_view(",{\"Host\":") : std::string_view("{\"Host\":"));
    out.string(priorities[i].host);
    out.raw(",\"Score\":");
    out.integer(priorities[i].score);
    out.raw('}');
  }
  out.raw(']');
  return out.finish();
}

std::string encode_binding_result(std::string_view error) {
  return Json{{"Error", std::string(error)}}.dump(-1, ' ', false, Json::error_handler_t::replace);
}

std::string encode_preemption_result(const std::map<std::string, MetaVictims>& victims) {
  Json map = Json::object();
  for (const auto& [node, meta] : victims) {
    Json pods = Json::array();
    for (const auto& uid : meta.pod_uids) pods.push_back({{"UID", uid}});
    map[node] = {{"Pods", std::move(pods)}, {"NumPDBViolations", meta.num_pdb_violations}};
  }
  return Json{{"NodeNameToMetaVictims", std::move(map)}}.dump(-1, ' ', false,
                                                              Json::error_handler_t::replace);
}

std::string encode_error(std::string_view error) {
  return Json{{"Error", std::string(error)}}.dump(-1, ' ', false, Json::error_handler_t::replace);
}

}  // namespace gpushare::wire
