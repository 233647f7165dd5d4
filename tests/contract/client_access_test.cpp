// Who may call the scheduling verbs: --allowed-clients and --tls-client-ca
// (mutual TLS), over real connections with real certificates. Probes, /metrics and /inspect
// stay open whatever the list says.

#include "gpushare/http/client_access.h"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <openssl/x509.h>

#include <chrono>
#include <fstream>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>

#include "cmd/extender/options.h"
#include "contract/extender_fixture.h"
#include "support/raw_http_connection.h"
#include "support/tls_material.h"

namespace gpushare::testing {
namespace {

using apiclient::testing::tls_material;
using http::ClientNetworks;

Json two_node_cluster() {
  return cluster_list({node_object("n1", 2, 32), node_object("n2", 1, 8)});
}

const std::string kFilterBody = Json{
    {"Pod", pod_object("p", "uid-p", 12)},
    {"Nodes", nullptr},
    {"NodeNames", {"n1", "n2"}}}.dump();
const std::string kBindBody =
    Json{{"PodName", "p"}, {"PodNamespace", "default"}, {"PodUID", "uid-p"}, {"Node", "n1"}}.dump();

http::HttpServerOptions allowing(const std::string& networks) {
  auto options = ExtenderUnderTest::server_options();
  options.access.allowed_clients = ClientNetworks::parse(networks);
  return options;
}

std::size_t requests_counted(ExtenderUnderTest& extender, const std::string& verb, int code) {
  const std::string series =
      fmt::format("gpushare_requests_total{{verb=\"{}\",code=\"{}\"}} ", verb, code);
  const std::string text = extender.metrics().render();
  const auto at = text.find(series);
  return at == std::string::npos ? 0 : std::stoul(text.substr(at + series.size()));
}

// ---------------------------------------------------------------------------------------------
// The list itself

TEST(ClientNetworks, MatchesIPv4AndIPv6ByPrefix) {
  const auto networks = ClientNetworks::parse(" 10.0.0.0/8, 192.168.1.7 ,fd00::/8,2001:db8::1");
  EXPECT_EQ(networks.describe(), "10.0.0.0/8,192.168.1.7/32,fd00::/8,2001:db8::1/128");
  EXPECT_TRUE(networks.contains("10.255.3.4"));
  EXPECT_FALSE(networks.contains("11.0.0.1"));
  EXPECT_TRUE(networks.contains("192.168.1.7"));
  EXPECT_FALSE(networks.contains("192.168.1.8"));
  EXPECT_TRUE(networks.contains("fd12:3456::1"));
  EXPECT_FALSE(networks.contains("fe80::1"));
  EXPECT_TRUE(networks.contains("2001:db8::1"));
  EXPECT_FALSE(networks.contains("2001:db8::2"));
  // An IPv4 client on a dual-stack socket, and a link-local zone.
  EXPECT_TRUE(networks.contains("::ffff:10.1.2.3"));
  EXPECT_FALSE(networks.contains("::ffff:11.1.2.3"));
  EXPECT_TRUE(ClientNetworks::parse("fe80::/10").contains("fe80::1%eth0"));
  // Families never match each other: 10.0.0.0/8 is not ::a00:0/104.
  EXPECT_FALSE(networks.contains("::a00:1"));
  EXPECT_FALSE(networks.contains("not-an-address"));
  EXPECT_FALSE(networks.contains(""));
  // Prefixes that do not fall on a byte boundary, and the everything networks.
  const auto odd = ClientNetworks::parse("172.16.0.0/12");
  EXPECT_TRUE(odd.contains("172.31.255.255"));
  EXPECT_FALSE(odd.contains("172.32.0.0"));
  EXPECT_TRUE(ClientNetworks::parse("0.0.0.0/0").contains("8.8.8.8"));
  EXPECT_FALSE(ClientNetworks::parse("0.0.0.0/0").contains("::1"));
  EXPECT_TRUE(ClientNetworks::parse("::/0").contains("::1"));
  EXPECT_TRUE(ClientNetworks::parse("").empty());
}

TEST(ClientNetworks, RejectsWhatIsNotANetwork) {
  for (const char* bad : {"10.0.0.0/33", "10.0.0.0/", "10.0.0.0/8x", "10.0.0/8", "host.example",
                          "::1/129", "10.0.0.0/-1", "fe80::1%eth0"}) {
    EXPECT_THROW(ClientNetworks::parse(bad), std::invalid_argument) << bad;
  }
  try {
    ClientNetworks::parse("127.0.0.1/32,10.0.0.0/40");
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("10.0.0.0/40"), std::string::npos) << e.what();
  }
}

TEST(ClientAccessOptions, FlagsAreCheckedAtStartUp) {
  auto parse = [](std::vector<std::string> args) {
    args.push_back("--cluster-file=x.yaml");
    return cmd::extender::parse_options(args, [](const char*) { return std::nullopt; });
  };
  const auto good = parse({"--allowed-clients=10.0.0.0/8,::1"});
  ASSERT_EQ(good.action, cmd::extender::ParsedOptions::Action::kRun) << good.message;
  EXPECT_EQ(good.options.allowed_clients.describe(), "10.0.0.0/8,::1/128");
  EXPECT_TRUE(parse({}).options.allowed_clients.empty());

  const auto bad = parse({"--allowed-clients=10.0.0.0/8,10.1"});
  EXPECT_EQ(bad.action, cmd::extender::ParsedOptions::Action::kExitUsage);
  EXPECT_NE(bad.message.find("--allowed-clients: \"10.1\""), std::string::npos) << bad.message;

  const auto plain = parse({"--tls-client-ca=ca.crt"});
  EXPECT_EQ(plain.action, cmd::extender::ParsedOptions::Action::kExitUsage);
  EXPECT_NE(plain.message.find("--tls-client-ca needs HTTPS"), std::string::npos) << plain.message;
  const auto tls =
      parse({"--tls-client-ca=ca.crt", "--tls-cert-file=s.crt", "--tls-private-key-file=s.key"});
  EXPECT_EQ(tls.action, cmd::extender::ParsedOptions::Action::kRun) << tls.message;
  EXPECT_EQ(tls.options.tls_client_ca_file, "ca.crt");
}

// ---------------------------------------------------------------------------------------------
// --allowed-clients over real connections (loopback only)

TEST(AllowedClients, ALoopbackClientInTheListIsServed) {
  ExtenderUnderTest extender(two_node_cluster(), allowing("10.0.0.0/8,127.0.0.1/32"));
  ASSERT_GT(extender.port(), 0);
  const auto [status, reply] = extender.post("filter", kFilterBody);
  EXPECT_EQ(status, 200);
  EXPECT_EQ(reply["NodeNames"], Json::array({"n1"}));
  EXPECT_EQ(extender.post("bind", kBindBody).first, 200);
}

TEST(AllowedClients, AClientOutsideTheListGets403OnEverySchedulingVerb) {
  ExtenderUnderTest extender(two_node_cluster(), allowing("10.0.0.0/8,::1/128"));
  ASSERT_GT(extender.port(), 0);
  for (const char* verb : {"filter", "prioritize", "preempt", "bind"}) {
    const auto [status, reply] =
        extender.post(verb, std::string(verb) == "bind" ? kBindBody : kFilterBody);
    EXPECT_EQ(status, 403) << verb;
    EXPECT_NE(reply.value("Error", "").find("127.0.0.1 is not in --allowed-clients"),
              std::string::npos)
        << reply;
    EXPECT_EQ(requests_counted(extender, verb, 403), 1u) << verb;
  }
  // The refused bind changed nothing.
  EXPECT_EQ(extender.inspect()["usedGPU"], 0);
  // What kubelet, Prometheus and people read stays open.
  auto client = extender.client();
  for (const char* path :
       {"/healthz", "/readyz", "/version", "/metrics", "/gpushare-scheduler/inspect"}) {
    auto result = client.Get(path);
    ASSERT_TRUE(result) << path;
    EXPECT_EQ(result->status, 200) << path;
  }
}

// The client's address is looked up once per connection (http_connection.cpp): every request
// of a keep-alive connection must still be checked against it, and pass.
TEST(AllowedClients, EveryRequestOfAKeepAliveConnectionIsServed) {
  ExtenderUnderTest extender(two_node_cluster(), allowing("127.0.0.1/32"));
  ASSERT_GT(extender.port(), 0);
  RawHttpConnection connection(static_cast<std::uint16_t>(extender.port()));
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(connection.send_raw(
        fmt::format("POST /gpushare-scheduler/filter HTTP/1.1\r\nHost: x\r\n"
                    "Content-Type: application/json\r\nContent-Length: {}\r\n\r\n{}",
                    kFilterBody.size(), kFilterBody)));
    const auto head = connection.read_head();
    ASSERT_TRUE(head) << i;
    EXPECT_EQ(head->status, 200) << i;
    const auto body = connection.read_body(*head);
    ASSERT_TRUE(body) << i;
    EXPECT_EQ(Json::parse(*body)["NodeNames"], Json::array({"n1"})) << i;
  }
  EXPECT_EQ(requests_counted(extender, "filter", 200), 3u);
  EXPECT_EQ(requests_counted(extender, "filter", 403), 0u);
}

// Refused before the body is read: a client announcing a large body gets its 403 without
// sending it, and the connection closes (the unread body cannot be taken for a request).
TEST(AllowedClients, TheRefusalComesBeforeTheBodyAndClosesTheConnection) {
  ExtenderUnderTest extender(two_node_cluster(), allowing("10.0.0.0/8"));
  ASSERT_GT(extender.port(), 0);
  RawHttpConnection connection(static_cast<std::uint16_t>(extender.port()));
  ASSERT_TRUE(
      connection.send_raw("POST /gpushare-scheduler/bind HTTP/1.1\r\nHost: x\r\n"
                          "Content-Type: application/json\r\nContent-Length: 500000\r\n\r\n{"));
  const auto head = connection.read_head();
  ASSERT_TRUE(head);
  EXPECT_EQ(head->status, 403);
  EXPECT_EQ(head->headers.at("connection"), "close");
  ASSERT_TRUE(connection.read_body(*head));
  EXPECT_TRUE(connection.closed_by_peer());
}

TEST(AllowedClients, IPv6LoopbackIsMatchedAsIPv6) {
  {
    ExtenderUnderTest extender(two_node_cluster(), allowing("::1/128"), "::1");
    if (extender.port() < 0) GTEST_SKIP() << "no IPv6 loopback here";
    httplib::Client client("::1", extender.port());
    auto result = client.Post("/gpushare-scheduler/filter", kFilterBody, "application/json");
    ASSERT_TRUE(result);
    EXPECT_EQ(result->status, 200);
  }
  ExtenderUnderTest extender(two_node_cluster(), allowing("127.0.0.0/8"), "::1");
  ASSERT_GT(extender.port(), 0);
  httplib::Client client("::1", extender.port());
  auto result = client.Post("/gpushare-scheduler/filter", kFilterBody, "application/json");
  ASSERT_TRUE(result);
  EXPECT_EQ(result->status, 403);
}

// ---------------------------------------------------------------------------------------------
// --tls-client-ca: mutual TLS

http::HttpServerOptions mutual_tls() {
  auto options = ExtenderUnderTest::server_options();
  options.tls_cert_file = tls_material().server_cert.string();
  options.tls_private_key_file = tls_material().server_key.string();
  options.access.client_ca_file = tls_material().ca_cert.string();
  return options;
}

// A client that verifies the server, with or without a client certificate.
std::unique_ptr<httplib::SSLClient> tls_client(int port, const std::filesystem::path& cert = {},
                                               const std::filesystem::path& key = {}) {
  auto client = cert.empty() ? std::make_unique<httplib::SSLClient>("127.0.0.1", port)
                             : std::make_unique<httplib::SSLClient>("127.0.0.1", port,
                                                                    cert.string(), key.string());
  client->set_ca_cert_path(tls_material().ca_cert.string());
  client->enable_server_certificate_verification(true);
  client->set_connection_timeout(5);
  client->set_read_timeout(10);
  return client;
}

// GPU memory in use cluster-wide, read over HTTPS without a client certificate.
Json used_gpu_memory(int port) {
  auto inspect = tls_client(port)->Get("/gpushare-scheduler/inspect");
  if (!inspect) return nullptr;
  return Json::parse(inspect->body)["usedGPU"];
}

TEST(MutualTls, AClientWithACertificateFromTheCaIsServed) {
  ExtenderUnderTest extender(two_node_cluster(), mutual_tls());
  ASSERT_GT(extender.port(), 0);
  auto client = tls_client(extender.port(), tls_material().client_cert, tls_material().client_key);
  auto filtered = client->Post("/gpushare-scheduler/filter", kFilterBody, "application/json");
  ASSERT_TRUE(filtered) << httplib::to_string(filtered.error());
  EXPECT_EQ(filtered->status, 200);
  EXPECT_EQ(Json::parse(filtered->body)["NodeNames"], Json::array({"n1"}));
  // The same kept-alive connection binds.
  auto bound = client->Post("/gpushare-scheduler/bind", kBindBody, "application/json");
  ASSERT_TRUE(bound);
  EXPECT_EQ(bound->status, 200) << bound->body;
  EXPECT_EQ(used_gpu_memory(extender.port()), 12);
  // A second connection (a resumed session, if the client offers one) is served too.
  auto again = tls_client(extender.port(), tls_material().client_cert, tls_material().client_key);
  auto second = again->Post("/gpushare-scheduler/filter", kFilterBody, "application/json");
  ASSERT_TRUE(second) << httplib::to_string(second.error());
  EXPECT_EQ(second->status, 200);
}

TEST(MutualTls, WithoutACertificateTheSchedulingVerbsAreRefusedAndProbesServed) {
  ExtenderUnderTest extender(two_node_cluster(), mutual_tls());
  ASSERT_GT(extender.port(), 0);
  auto client = tls_client(extender.port());
  auto filtered = client->Post("/gpushare-scheduler/filter", kFilterBody, "application/json");
  ASSERT_TRUE(filtered) << httplib::to_string(filtered.error());
  EXPECT_EQ(filtered->status, 403);
  EXPECT_NE(filtered->body.find("no client certificate"), std::string::npos) << filtered->body;
  auto bound =
      tls_client(extender.port())->Post("/gpushare-scheduler/bind", kBindBody, "application/json");
  ASSERT_TRUE(bound);
  EXPECT_EQ(bound->status, 403);
  EXPECT_EQ(requests_counted(extender, "bind", 403), 1u);
  EXPECT_EQ(used_gpu_memory(extender.port()), 0);
  // kubelet's HTTPS probes and a scrape carry no client certificate.
  for (const char* path : {"/healthz", "/readyz", "/metrics", "/gpushare-scheduler/inspect"}) {
    auto result = tls_client(extender.port())->Get(path);
    ASSERT_TRUE(result) << path;
    EXPECT_EQ(result->status, 200) << path;
  }
}

TEST(MutualTls, ACertificateFromAnotherCaFailsTheHandshake) {
  ExtenderUnderTest extender(two_node_cluster(), mutual_tls());
  ASSERT_GT(extender.port(), 0);
  auto stranger = tls_client(extender.port(), tls_material().other_client_cert,
                             tls_material().other_client_key);
  auto result = stranger->Post("/gpushare-scheduler/bind", kBindBody, "application/json");
  EXPECT_TRUE(!result || result->status == 403) << result->status;
  EXPECT_EQ(used_gpu_memory(extender.port()), 0);
  // Not even a probe: a certificate that was sent must verify.
  auto probe =
      tls_client(extender.port(), tls_material().other_client_cert, tls_material().other_client_key)
          ->Get("/healthz");
  EXPECT_FALSE(probe);
}

TEST(MutualTls, BothChecksTogether) {
  auto options = mutual_tls();
  options.access.allowed_clients = ClientNetworks::parse("10.0.0.0/8");
  ExtenderUnderTest extender(two_node_cluster(), options);
  ASSERT_GT(extender.port(), 0);
  auto client = tls_client(extender.port(), tls_material().client_cert, tls_material().client_key);
  auto filtered = client->Post("/gpushare-scheduler/filter", kFilterBody, "application/json");
  ASSERT_TRUE(filtered);
  EXPECT_EQ(filtered->status, 403) << "a good certificate from an address outside the list";
}

TEST(MutualTls, AnUnusableCaFileStopsTheServerFromStarting) {
  auto options = mutual_tls();
  const auto empty = tls_material().dir / "empty-ca.pem";
  std::ofstream(empty) << "not a certificate\n";
  options.access.client_ca_file = empty.string();
  ExtenderUnderTest broken(two_node_cluster(), options);
  EXPECT_EQ(broken.port(), -1);
  options.access.client_ca_file = (tls_material().dir / "missing.pem").string();
  ExtenderUnderTest missing(two_node_cluster(), options);
  EXPECT_EQ(missing.port(), -1);
}

}  // namespace
}  // namespace gpushare::testing
