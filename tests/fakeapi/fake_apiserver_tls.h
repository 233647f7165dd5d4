#pragma once
// A self-signed certificate for 127.0.0.1/localhost (made once per process with the openssl
// CLI), and base64 for kubeconfigs and continue tokens.

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

namespace gpushare::testing::fakeapi {

struct TlsMaterial {
  std::filesystem::path cert_path;
  std::filesystem::path key_path;
  std::string cert_pem;  // also the CA clients must trust
};

// Generated on first use into a temporary directory removed at exit. Throws
// std::runtime_error if openssl fails.
const TlsMaterial& localhost_tls_material();

std::string base64_encode(std::string_view bytes, bool url_safe_unpadded = false);
// Accepts both alphabets, with or without padding; nullopt on invalid input.
std::optional<std::string> base64_decode(std::string_view text);

}  // namespace gpushare::testing::fakeapi
