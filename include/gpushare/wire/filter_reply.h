#pragma once
// A filter reply written from the request body it echoes (see encode_filter_result in
// wire_encode.h for the reply built whole).

#include <cstddef>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "gpushare/wire/wire_types.h"

namespace gpushare::wire {

// The filter reply when it echoes full Node objects, without copying them: the surviving nodes'
// texts are read from the request body they view (held here) as the reply is written, so a
// reply about as large as the body adds no body-sized buffer.
class FilterReply {
 public:
  explicit FilterReply(FilterResult result);
  std::size_t size() const { return size_; }
  // Copies the reply's bytes from `offset` on into `out`, as many as fit; returns how many.
  std::size_t copy(std::size_t offset, std::span<char> out) const;
  // What it holds besides the body (head, tail, positions), for tests.
  std::size_t owned_bytes() const;

 private:
  std::string head_;  // the reply up to the first item (all of it without node texts)
  std::vector<std::string_view> items_;   // survivors' texts, viewing source_
  std::vector<std::size_t> item_starts_;  // where each item is in the reply (commas between)
  std::string tail_;
  std::shared_ptr<const std::string> source_;
  std::size_t size_ = 0;
};

}  // namespace gpushare::wire
