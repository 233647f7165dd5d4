#pragma once
// Throwaway certificates made with the openssl CLI, once per test process.

#include <filesystem>
#include <string>

namespace gpushare::apiclient::testing {

struct TlsMaterial {
  std::filesystem::path dir;
  std::filesystem::path ca_cert;        // the CA everything below is signed by
  std::filesystem::path other_ca_cert;  // an unrelated CA (verification must fail with it)
  std::filesystem::path server_cert;    // SAN IP:127.0.0.1, DNS:localhost
  std::filesystem::path server_key;
  std::filesystem::path named_server_cert;  // SAN DNS:kubernetes.default.svc only
  std::filesystem::path named_server_key;
  std::filesystem::path client_cert;  // CN=gpushare-test-client, clientAuth
  std::filesystem::path client_key;
  std::filesystem::path other_client_cert;  // CN=gpushare-test-stranger, signed by other_ca_cert
  std::filesystem::path other_client_key;
};

// Generated on first use; throws if openssl fails.
const TlsMaterial& tls_material();

}  // namespace gpushare::apiclient::testing
