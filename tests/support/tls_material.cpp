#include "support/tls_material.h"

#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <stdexcept>

namespace gpushare::apiclient::testing {
namespace {

void run(const std::string& command) {
  if (std::system((command + " >/dev/null 2>&1").c_str()) != 0) {
    throw std::runtime_error("command failed: " + command);
  }
}

void write(const std::filesystem::path& path, const std::string& text) {
  std::ofstream(path) << text;
}

// EC keys: generating them is fast, unlike RSA.
constexpr const char* kNewKey = "-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes";

void make_ca(const std::filesystem::path& dir, const std::string& name) {
  const auto d = dir.string();
  run("openssl req -x509 " + std::string(kNewKey) + " -days 2 -subj /CN=" + name + " -keyout " + d +
      "/" + name + ".key -out " + d + "/" + name + ".crt");
}

void make_leaf(const std::filesystem::path& dir, const std::string& name, const std::string& cn,
               const std::string& extensions, const std::string& ca = "ca") {
  const auto d = dir.string();
  write(dir / (name + ".ext"), extensions);
  run("openssl req " + std::string(kNewKey) + " -subj /CN=" + cn + " -keyout " + d + "/" + name +
      ".key -out " + d + "/" + name + ".csr");
  run("openssl x509 -req -days 2 -in " + d + "/" + name + ".csr -CA " + d + "/" + ca +
      ".crt -CAkey " + d + "/" + ca + ".key -CAcreateserial -out " + d + "/" + name +
      ".crt -extfile " + d + "/" + name + ".ext");
}

struct Generated {
  TlsMaterial material;
  Generated() {
    auto& m = material;
    m.dir = std::filesystem::temp_directory_path() /
            ("gpushare-apiclient-tls-" + std::to_string(::getpid()));
    std::filesystem::create_directories(m.dir);
    make_ca(m.dir, "ca");
    make_ca(m.dir, "otherca");
    make_leaf(m.dir, "server", "127.0.0.1",
              "subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n");
    make_leaf(m.dir, "named", "kubernetes.default.svc",
              "subjectAltName=DNS:kubernetes.default.svc\nextendedKeyUsage=serverAuth\n");
    make_leaf(m.dir, "client", "gpushare-test-client", "extendedKeyUsage=clientAuth\n");
    make_leaf(m.dir, "stranger", "gpushare-test-stranger", "extendedKeyUsage=clientAuth\n",
              "otherca");
    m.ca_cert = m.dir / "ca.crt";
    m.other_ca_cert = m.dir / "otherca.crt";
    m.server_cert = m.dir / "server.crt";
    m.server_key = m.dir / "server.key";
    m.named_server_cert = m.dir / "named.crt";
    m.named_server_key = m.dir / "named.key";
    m.client_cert = m.dir / "client.crt";
    m.client_key = m.dir / "client.key";
    m.other_client_cert = m.dir / "stranger.crt";
    m.other_client_key = m.dir / "stranger.key";
  }
  ~Generated() {
    std::error_code ignored;
    std::filesystem::remove_all(material.dir, ignored);
  }
};

}  // namespace

const TlsMaterial& tls_material() {
  static const Generated generated;
  return generated.material;
}

}  // namespace gpushare::apiclient::testing
