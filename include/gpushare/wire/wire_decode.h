#pragma once
// The one decoder of each extender request. Requests are decoded with keys matched
// case-insensitively (Go's decoder does the same).

#include <cstddef>
#include <string>
#include <string_view>

#include "gpushare/kube/resource_names.h"
#include "gpushare/wire/wire_types.h"

namespace gpushare::wire {

// Spare capacity after a request body that lets the decoder parse it in place (simdjson reads
// up to this many bytes past the end).
inline constexpr std::size_t kRequestBodyPadding = 64;

// The one decoder of each request (wire_decode.cpp, on simdjson), used by the HTTP server, the
// tests, the fuzzers and the benchmarks alike. Each takes the request body as text and throws
// kube::BadInput with a message naming the offending field ("request body is not valid JSON"
// for text that is not JSON).
//
// ExtenderArgs (filter, prioritize), keeping `body` itself as the source the node texts view
// (a large filter with full Node objects is not held twice). The decoder parses `body` in place
// when it has kRequestBodyPadding bytes of spare capacity, else it moves the text once to make
// that room.
ExtenderArgs decode_extender_args_body(std::string&& body, const kube::ResourceNames& names);
// The same from a view: the body is copied, and kept by the arguments only if they view it.
ExtenderArgs decode_extender_args_body(std::string_view body, const kube::ResourceNames& names);
BindingArgs decode_binding_args(std::string_view body);
PreemptionArgs decode_preemption_args(std::string_view body, const kube::ResourceNames& names);
// The bytes the decoders' parsers keep between requests (gpushare_http_parser_bytes, their
// sum): at most 16 small-body parsers and the large-body one, each freed 10 s after its last use
// (wire_decode.cpp).
struct RequestParserBytes {
  std::size_t small = 0;  // bodies up to 1 MiB
  std::size_t large = 0;  // bodies over 1 MiB
};
RequestParserBytes request_parser_bytes();

}  // namespace gpushare::wire
