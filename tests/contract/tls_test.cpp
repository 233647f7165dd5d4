// HTTPS serving (kube-scheduler's enableHTTPS with tlsConfig.caFile): --tls-cert-file and
// --tls-private-key-file, exercised with a verifying TLS client and certificates made here.

#include <arpa/inet.h>
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <openssl/ssl.h>
#include <spdlog/spdlog.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <thread>

#include "contract/extender_fixture.h"
#include "gpushare/core/policy_registry.h"
#include "support/log_capture.h"

namespace gpushare::testing {
namespace {

namespace fs = std::filesystem;

// A CA, a server certificate it signed (SAN 127.0.0.1 and localhost), and an unrelated CA.
struct Pki {
  fs::path dir, ca_cert, server_cert, server_key, other_ca_cert;
};

void run(const std::string& command) {
  if (std::system((command + " >/dev/null 2>&1").c_str()) != 0)
    throw std::runtime_error("failed: " + command);
}

const Pki& pki() {
  static const Pki made = [] {
    Pki p;
    std::string pattern = (fs::temp_directory_path() / "gpushare-tls-test-XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
    p.dir = pattern;
    p.ca_cert = p.dir / "ca.crt";
    p.server_cert = p.dir / "server.crt";
    p.server_key = p.dir / "server.key";
    p.other_ca_cert = p.dir / "other-ca.crt";
    const std::string ec = "-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes";
    run(fmt::format(
        "openssl req -x509 {} -days 2 -subj /CN=gpushare-test-ca "
        "-addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign "
        "-keyout '{}' -out '{}'",
        ec, (p.dir / "ca.key").string(), p.ca_cert.string()));
    run(fmt::format("openssl req {} -subj /CN=gpushare-extender -keyout '{}' -out '{}'", ec,
                    p.server_key.string(), (p.dir / "server.csr").string()));
    std::ofstream(p.dir / "server.ext") << "subjectAltName=IP:127.0.0.1,DNS:localhost\n"
                                           "extendedKeyUsage=serverAuth\n";
    run(fmt::format(
        "openssl x509 -req -in '{}' -CA '{}' -CAkey '{}' -CAcreateserial -days 2 -extfile '{}' "
        "-out '{}'",
        (p.dir / "server.csr").string(), p.ca_cert.string(), (p.dir / "ca.key").string(),
        (p.dir / "server.ext").string(), p.server_cert.string()));
    run(fmt::format("openssl req -x509 {} -days 2 -subj /CN=someone-else -keyout '{}' -out '{}'",
                    ec, (p.dir / "other-ca.key").string(), p.other_ca_cert.string()));
    return p;
  }();
  return made;
}

// The extender over HTTPS on an ephemeral port, on a one-node standalone cluster.
class HttpsExtender {
 public:
  HttpsExtender(std::string cert, std::string key, std::size_t max_request_bytes = 64 << 20,
                const std::function<void(http::HttpServerOptions&)>& edit = {})
      : cluster_(cluster_list({node_object("n1", 2, 32), node_object("n2", 1, 8)}),
                 kube::ResourceNames{}),
        store_(core::make_policy("binpack")) {
    store_.write(
        [&](core::ClusterModel& model, core::PlacementPolicy&) { cluster_.populate(model); });
    service_ = std::make_unique<service::SchedulingService>(store_, cluster_, metrics_, rejections_,
                                                            service::ServiceConfig{});
    http::HttpServerOptions options;
    options.threads = 4;
    options.connections.max_request_bytes = max_request_bytes;
    options.tls_cert_file = std::move(cert);
    options.tls_private_key_file = std::move(key);
    if (edit) edit(options);
    server_ = std::make_unique<http::HttpServer>(*service_, store_, metrics_, rejections_, options);
    port_ = server_->bind("127.0.0.1", 0);
    if (port_ > 0) {
      thread_ = std::jthread([this] { server_->serve(); });
      while (!server_->is_running()) std::this_thread::yield();
    }
  }
  ~HttpsExtender() {
    server_->stop();
    if (thread_.joinable()) thread_.join();
  }
  int port() const { return port_; }

 private:
  standalone::StandaloneCluster cluster_;
  service::ModelStore store_;
  metrics::MetricRegistry metrics_;
  service::RejectionLog rejections_;
  std::unique_ptr<service::SchedulingService> service_;
  std::unique_ptr<http::HttpServer> server_;
  int port_ = -1;
  std::jthread thread_;
};

std::unique_ptr<httplib::SSLClient> verifying_client(int port, const fs::path& ca) {
  auto client = std::make_unique<httplib::SSLClient>("127.0.0.1", port);
  client->set_ca_cert_path(ca.string());
  client->enable_server_certificate_verification(true);
  client->set_connection_timeout(5);
  client->set_read_timeout(10);
  return client;
}

const std::string kFilterBody = Json{
    {"Pod", pod_object("p", "uid-p", 12)},
    {"Nodes", nullptr},
    {"NodeNames", {"n1", "n2"}}}.dump();

// A TLS connection driven by hand (no certificate check: the test reads what the server sends),
// for requests no HTTP client library sends: half a header block, a chunked body left open.
class RawTlsConnection {
 public:
  explicit RawTlsConnection(int port) : context_(SSL_CTX_new(TLS_client_method()), &SSL_CTX_free) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(static_cast<std::uint16_t>(port));
    ::inet_pton(AF_INET, "127.0.0.1", &address.sin_addr);
    const timeval read_timeout{20, 0};  // a bound for read_all, not a measurement
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &read_timeout, sizeof read_timeout);
    if (::connect(fd_, reinterpret_cast<const sockaddr*>(&address), sizeof address) != 0) return;
    ssl_.reset(SSL_new(context_.get()));
    SSL_set_fd(ssl_.get(), fd_);
    handshake_done_ = SSL_connect(ssl_.get()) == 1;
  }
  ~RawTlsConnection() {
    ssl_.reset();
    ::close(fd_);
  }
  RawTlsConnection(const RawTlsConnection&) = delete;
  RawTlsConnection& operator=(const RawTlsConnection&) = delete;

  bool handshake_done() const { return handshake_done_; }
  bool send(std::string_view text) {
    return SSL_write(ssl_.get(), text.data(), static_cast<int>(text.size())) ==
           static_cast<int>(text.size());
  }
  // Everything the server sends until it closes (or 20 s pass).
  std::string read_all() {
    std::string received;
    char buffer[4096];
    for (int n = 0; (n = SSL_read(ssl_.get(), buffer, sizeof buffer)) > 0;)
      received.append(buffer, n);
    return received;
  }

 private:
  std::unique_ptr<SSL_CTX, decltype(&SSL_CTX_free)> context_;
  std::unique_ptr<SSL, decltype(&SSL_free)> ssl_{nullptr, &SSL_free};
  int fd_ = -1;
  bool handshake_done_ = false;
};

// The reactor's own replies (a late header block: 408; a chunked body over the limit: 503) go
// out over TLS too; they used to be a bare close.
TEST(Tls, TheReactorsRefusalsAreAnsweredOverTls) {
  HttpsExtender extender(pki().server_cert.string(), pki().server_key.string(), 64 << 20,
                         [](http::HttpServerOptions& options) {
                           options.connections.header_timeout = std::chrono::milliseconds(300);
                         });  // 4 threads: 1 chunked body at a time
  ASSERT_GT(extender.port(), 0);
  RawTlsConnection late(extender.port());
  ASSERT_TRUE(late.handshake_done());
  ASSERT_TRUE(late.send("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n"));  // never finished
  EXPECT_EQ(late.read_all().substr(0, 12), "HTTP/1.1 408");

  const std::string chunked =
      "POST /gpushare-scheduler/filter HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: "
      "chunked\r\n\r\n5\r\n{\"Pod\r\n";
  RawTlsConnection reading(extender.port());
  ASSERT_TRUE(reading.handshake_done());
  ASSERT_TRUE(reading.send(chunked));
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // its worker is reading it
  RawTlsConnection refused(extender.port());
  ASSERT_TRUE(refused.handshake_done());
  ASSERT_TRUE(refused.send(chunked));
  const std::string reply = refused.read_all();
  EXPECT_EQ(reply.substr(0, 12), "HTTP/1.1 503") << reply;
  EXPECT_NE(reply.find("chunked"), std::string::npos) << reply;
}

TEST(Tls, FilterOverHttpsWithAVerifyingClient) {
  HttpsExtender extender(pki().server_cert.string(), pki().server_key.string());
  ASSERT_GT(extender.port(), 0);
  auto client = verifying_client(extender.port(), pki().ca_cert);
  auto filtered = client->Post("/gpushare-scheduler/filter", kFilterBody, "application/json");
  ASSERT_TRUE(filtered) << httplib::to_string(filtered.error());
  EXPECT_EQ(filtered->status, 200);
  const Json reply = Json::parse(filtered->body);
  EXPECT_EQ(reply["NodeNames"], Json::array({"n1"}));  // 12 fits a 16 GPU, not an 8 one
  EXPECT_TRUE(reply["FailedNodes"].contains("n2") ||
              reply["FailedAndUnresolvableNodes"].contains("n2"))
      << reply;
  // The same connection again (kube-scheduler keeps them alive), and another verb.
  auto health = client->Get("/healthz");
  ASSERT_TRUE(health);
  EXPECT_EQ(health->status, 200);
  // TLS 1.2 or newer was negotiated; the certificate chain verified against our CA.
  EXPECT_EQ(client->get_openssl_verify_result(), X509_V_OK);
}

TEST(Tls, AClientThatDoesNotTrustTheCertificateIsRefused) {
  HttpsExtender extender(pki().server_cert.string(), pki().server_key.string());
  ASSERT_GT(extender.port(), 0);
  auto stranger = verifying_client(extender.port(), pki().other_ca_cert);
  auto result = stranger->Post("/gpushare-scheduler/filter", kFilterBody, "application/json");
  ASSERT_FALSE(result);
  EXPECT_EQ(result.error(), httplib::Error::SSLServerVerification);
  // Plain HTTP to the HTTPS port gets no HTTP answer.
  httplib::Client plain("127.0.0.1", extender.port());
  plain.set_read_timeout(5);
  auto plain_result = plain.Post("/gpushare-scheduler/filter", kFilterBody, "application/json");
  EXPECT_TRUE(!plain_result || plain_result->status != 200);
}

// The request limits hold on TLS connections too (gpushare serves them itself, see
// src/http/http_connection.h): decompressed body size, header block.
TEST(Tls, RequestLimitsHoldOverHttps) {
  HttpsExtender extender(pki().server_cert.string(), pki().server_key.string(), 1 << 20);
  ASSERT_GT(extender.port(), 0);
  auto compressing = verifying_client(extender.port(), pki().ca_cert);
  compressing->set_compress(true);
  auto bomb = compressing->Post("/gpushare-scheduler/filter",
                                kFilterBody + std::string(16 << 20, ' '), "application/json");
  ASSERT_TRUE(bomb) << httplib::to_string(bomb.error());
  EXPECT_EQ(bomb->status, 413);
  httplib::Headers padding;
  for (int i = 0; i < 2000; ++i)
    padding.emplace("X-Padding-" + std::to_string(i), std::string(40, 'p'));
  auto headers = verifying_client(extender.port(), pki().ca_cert)->Get("/healthz", padding);
  ASSERT_TRUE(headers) << httplib::to_string(headers.error());
  EXPECT_EQ(headers->status, 431);
  auto fine = verifying_client(extender.port(), pki().ca_cert)
                  ->Post("/gpushare-scheduler/filter", kFilterBody, "application/json");
  ASSERT_TRUE(fine);
  EXPECT_EQ(fine->status, 200);
}

TEST(Tls, AnUnreadableOrMismatchedCertificateIsAClearErrorAtStartup) {
  {
    LogCapture log;
    HttpsExtender missing("/nonexistent/tls.crt", pki().server_key.string());
    EXPECT_EQ(missing.port(), -1);  // main exits with status 1
    EXPECT_NE(log.text().find("cannot serve TLS"), std::string::npos) << log.text();
    EXPECT_NE(log.text().find("/nonexistent/tls.crt"), std::string::npos) << log.text();
  }
  {
    // A certificate with someone else's key.
    LogCapture log;
    HttpsExtender mismatched(pki().server_cert.string(), (pki().dir / "other-ca.key").string());
    EXPECT_EQ(mismatched.port(), -1);
    EXPECT_NE(log.text().find("cannot serve TLS"), std::string::npos) << log.text();
  }
}

}  // namespace
}  // namespace gpushare::testing
