#pragma once
// Standard base64 (RFC 4648, with padding) for kubeconfig *-data fields (internal).

#include <optional>
#include <string>
#include <string_view>

namespace gpushare::apiclient::detail {

// Decodes `text`, ignoring ASCII whitespace. nullopt on any other invalid input.
std::optional<std::string> decode_base64(std::string_view text);

}  // namespace gpushare::apiclient::detail
