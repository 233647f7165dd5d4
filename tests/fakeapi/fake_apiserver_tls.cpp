#include "fakeapi/fake_apiserver_tls.h"

#include <fmt/format.h>
#include <unistd.h>

#include <array>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <mutex>
#include <sstream>
#include <stdexcept>

namespace gpushare::testing::fakeapi {
namespace {

// Owns the temporary directory; removes it when the process exits.
struct TlsDirectory {
  TlsDirectory();
  ~TlsDirectory() {
    std::error_code ignored;
    if (!dir.empty()) std::filesystem::remove_all(dir, ignored);
  }
  TlsDirectory(const TlsDirectory&) = delete;
  TlsDirectory& operator=(const TlsDirectory&) = delete;

  TlsMaterial material;
  std::filesystem::path dir;
};

TlsDirectory::TlsDirectory() {
  TlsDirectory& result = *this;
  std::string pattern =
      (std::filesystem::temp_directory_path() / "fake-apiserver-tls-XXXXXX").string();
  if (::mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
  result.dir = pattern;
  result.material.cert_path = result.dir / "tls.crt";
  result.material.key_path = result.dir / "tls.key";
  // EC keys are quick to make; the SAN is what Go clients verify for an IP address.
  const std::string command = fmt::format(
      "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 "
      "-subj /CN=fake-apiserver -addext 'subjectAltName=IP:127.0.0.1,DNS:localhost' "
      "-addext 'basicConstraints=critical,CA:TRUE' "
      "-keyout '{}' -out '{}' >/dev/null 2>&1",
      result.material.key_path.string(), result.material.cert_path.string());
  if (std::system(command.c_str()) != 0) {
    throw std::runtime_error("openssl failed to make a self-signed certificate");
  }
  std::ifstream in(result.material.cert_path);
  std::stringstream pem;
  pem << in.rdbuf();
  result.material.cert_pem = pem.str();
}

constexpr std::string_view kStandard =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
constexpr std::string_view kUrlSafe =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

}  // namespace

const TlsMaterial& localhost_tls_material() {
  static std::mutex mutex;
  static std::unique_ptr<TlsDirectory> directory;
  std::lock_guard lock(mutex);
  if (!directory) directory = std::make_unique<TlsDirectory>();
  return directory->material;
}

std::string base64_encode(std::string_view bytes, bool url_safe_unpadded) {
  const std::string_view alphabet = url_safe_unpadded ? kUrlSafe : kStandard;
  std::string out;
  std::size_t i = 0;
  for (; i + 2 < bytes.size(); i += 3) {
    const unsigned v = (static_cast<unsigned char>(bytes[i]) << 16) |
                       (static_cast<unsigned char>(bytes[i + 1]) << 8) |
                       static_cast<unsigned char>(bytes[i + 2]);
    out += alphabet[(v >> 18) & 63];
    out += alphabet[(v >> 12) & 63];
    out += alphabet[(v >> 6) & 63];
    out += alphabet[v & 63];
  }
  const std::size_t rest = bytes.size() - i;
  if (rest > 0) {
    unsigned v = static_cast<unsigned char>(bytes[i]) << 16;
    if (rest == 2) v |= static_cast<unsigned char>(bytes[i + 1]) << 8;
    out += alphabet[(v >> 18) & 63];
    out += alphabet[(v >> 12) & 63];
    if (rest == 2) out += alphabet[(v >> 6) & 63];
    if (!url_safe_unpadded) out.append(rest == 1 ? "==" : "=");
  }
  return out;
}

std::optional<std::string> base64_decode(std::string_view text) {
  while (!text.empty() && text.back() == '=') text.remove_suffix(1);
  std::string out;
  unsigned buffer = 0;
  int bits = 0;
  for (char c : text) {
    std::size_t value = kStandard.find(c);
    if (value == std::string_view::npos) value = kUrlSafe.find(c);
    if (value == std::string_view::npos) return std::nullopt;
    buffer = (buffer << 6) | static_cast<unsigned>(value);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out += static_cast<char>((buffer >> bits) & 0xFF);
    }
  }
  return out;
}

}  // namespace gpushare::testing::fakeapi
