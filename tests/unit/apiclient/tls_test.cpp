#include <gtest/gtest.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include "gpushare/apiclient/api_client.h"
#include "support/tls_material.h"
#include "test_util.h"

namespace gpushare::apiclient {
namespace {

using testing::read_text;
using testing::TestServer;
using testing::tls_material;

// The CN of the client certificate the server saw, or "<none>".
std::string peer_common_name(const httplib::Request& req) {
  if (req.ssl == nullptr) return "<no tls>";
  X509* cert = SSL_get1_peer_certificate(req.ssl);
  if (cert == nullptr) return "<none>";
  char name[256] = {};
  X509_NAME_get_text_by_NID(X509_get_subject_name(cert), NID_commonName, name, sizeof name);
  X509_free(cert);
  return name;
}

std::unique_ptr<httplib::Server> tls_server(const std::filesystem::path& cert,
                                            const std::filesystem::path& key,
                                            const char* client_ca = nullptr) {
  auto server = std::make_unique<httplib::SSLServer>(cert.c_str(), key.c_str(), client_ca);
  EXPECT_TRUE(server->is_valid()) << "SSLServer could not load its certificate";
  server->Get("/who", [](const httplib::Request& req, httplib::Response& res) {
    res.set_content(nlohmann::json{{"cn", peer_common_name(req)}}.dump(), "application/json");
  });
  return server;
}

ClusterConfig https_config(const TestServer& server) {
  ClusterConfig config;
  config.server = server.url("https");
  return config;
}

ClientOptions no_retries() {
  auto options = testing::fast_client_options();
  options.retry.max_attempts = 1;
  return options;
}

class Tls : public ::testing::Test {
 protected:
  void SetUp() override {
    server_ = std::make_unique<TestServer>(
        tls_server(tls_material().server_cert, tls_material().server_key));
    server_->start();
  }
  std::unique_ptr<TestServer> server_;
};

TEST_F(Tls, VerifiesWithCaFile) {
  auto config = https_config(*server_);
  config.ca_file = tls_material().ca_cert.string();
  ApiClient client(config, no_retries());
  auto result = client.get("/who");
  ASSERT_TRUE(result.ok()) << result.error().describe();
  EXPECT_EQ(result.value()["cn"], "<none>");
}

TEST_F(Tls, VerifiesWithCaFromMemory) {
  auto config = https_config(*server_);
  config.ca_pem = read_text(tls_material().ca_cert);
  ApiClient client(config, no_retries());
  auto result = client.get("/who");
  EXPECT_TRUE(result.ok()) << result.error().describe();
}

TEST_F(Tls, WrongCaFails) {
  auto config = https_config(*server_);
  config.ca_pem = read_text(tls_material().other_ca_cert);
  ApiClient client(config, no_retries());
  auto result = client.get("/who");
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.error().transport, TransportFailure::kTls) << result.error().describe();
}

TEST_F(Tls, NoCaMeansSystemTrustWhichDoesNotKnowOurCa) {
  ApiClient client(https_config(*server_), no_retries());
  auto result = client.get("/who");
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.error().transport, TransportFailure::kTls) << result.error().describe();
}

TEST_F(Tls, InsecureSkipsVerification) {
  auto config = https_config(*server_);
  config.insecure_skip_tls_verify = true;
  ApiClient client(config, no_retries());
  auto result = client.get("/who");
  EXPECT_TRUE(result.ok()) << result.error().describe();
}

TEST(TlsServerName, OverridesTheNameThatIsVerified) {
  TestServer server(tls_server(tls_material().named_server_cert, tls_material().named_server_key));
  server.start();
  auto config = https_config(server);  // https://127.0.0.1:port; the cert names only the DNS name
  config.ca_file = tls_material().ca_cert.string();
  {
    ApiClient client(config, no_retries());
    auto result = client.get("/who");
    ASSERT_FALSE(result.ok()) << "the certificate does not cover 127.0.0.1";
    EXPECT_EQ(result.error().transport, TransportFailure::kTls);
  }
  config.tls_server_name = "kubernetes.default.svc";
  ApiClient client(config, no_retries());
  auto result = client.get("/who");
  EXPECT_TRUE(result.ok()) << result.error().describe();
}

class ClientCertTls : public ::testing::Test {
 protected:
  void SetUp() override {
    server_ = std::make_unique<TestServer>(tls_server(
        tls_material().server_cert, tls_material().server_key, tls_material().ca_cert.c_str()));
    server_->start();
  }
  std::unique_ptr<TestServer> server_;
};

TEST_F(ClientCertTls, ClientCertificateFromMemory) {
  auto config = https_config(*server_);
  config.ca_pem = read_text(tls_material().ca_cert);
  config.client_cert_pem = read_text(tls_material().client_cert);
  config.client_key_pem = read_text(tls_material().client_key);
  ApiClient client(config, no_retries());
  auto result = client.get("/who");
  ASSERT_TRUE(result.ok()) << result.error().describe();
  EXPECT_EQ(result.value()["cn"], "gpushare-test-client");
}

TEST_F(ClientCertTls, ClientCertificateFromFiles) {
  auto config = https_config(*server_);
  config.ca_file = tls_material().ca_cert.string();
  config.client_cert_file = tls_material().client_cert.string();
  config.client_key_file = tls_material().client_key.string();
  ApiClient client(config, no_retries());
  auto result = client.get("/who");
  ASSERT_TRUE(result.ok()) << result.error().describe();
  EXPECT_EQ(result.value()["cn"], "gpushare-test-client");
}

TEST_F(ClientCertTls, WithoutClientCertificateTheServerRefuses) {
  auto config = https_config(*server_);
  config.ca_file = tls_material().ca_cert.string();
  ApiClient client(config, no_retries());
  auto result = client.get("/who");
  ASSERT_FALSE(result.ok());
  EXPECT_TRUE(result.error().is_transport()) << result.error().describe();
}

}  // namespace
}  // namespace gpushare::apiclient
