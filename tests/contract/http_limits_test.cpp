// Request limits of the HTTP layer, over raw sockets: what a hostile client sends is refused as
// soon as it breaks a limit (body as announced, as received, as decompressed; header block), and
// the connection is closed so the rest of its bytes are never read as further requests.

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <httplib.h>

#include <chrono>
#include <string>

#include "contract/extender_fixture.h"
#include "support/raw_http_connection.h"

namespace gpushare::testing {
namespace {

using namespace std::chrono_literals;

constexpr std::size_t kLimit = 1 << 20;  // the fixture's --max-request-bytes

std::uint16_t port_of(const ExtenderUnderTest& extender) {
  return static_cast<std::uint16_t>(extender.port());
}

std::string filter_body() {
  return Json{{"Pod", pod_object("p", "uid-p", 4)}, {"NodeNames", {"n1"}}}.dump();
}

// A filter with a Content-Length body.
std::string filter_request(const std::string& body) {
  return "POST /gpushare-scheduler/filter HTTP/1.1\r\nHost: x\r\nContent-Length: " +
         std::to_string(body.size()) + "\r\n\r\n" + body;
}

// The reply's status and Error, and whether the server then closed the connection.
struct Refusal {
  int status = 0;
  std::string error;
  bool closed = false;
};

Refusal read_refusal(RawHttpConnection& connection) {
  Refusal refusal;
  const auto head = connection.read_head(20s);
  if (!head) return refusal;
  refusal.status = head->status;
  if (const auto body = connection.read_body(*head, 20s)) {
    const Json parsed = Json::parse(*body, nullptr, false);
    if (parsed.is_object() && parsed.contains("Error")) refusal.error = parsed["Error"];
  }
  refusal.closed = connection.closed_by_peer(20s);
  return refusal;
}

class HttpLimits : public ::testing::Test {
 protected:
  ExtenderUnderTest extender{cluster_list({node_object("n1", 2, 32)})};
};

// httplib read (and dropped) the whole announced body before answering: 1 GiB announced, no
// reply until all of it had come.
TEST_F(HttpLimits, AnAnnouncedBodyOverTheLimitIsRefusedAtOnce) {
  RawHttpConnection connection(port_of(extender));
  ASSERT_TRUE(connection.send_raw(
      "POST /gpushare-scheduler/filter HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
      "Content-Length: 1073741824\r\n\r\n" +
      std::string(64 * 1024, '{')));
  const Refusal refusal = read_refusal(connection);
  EXPECT_EQ(refusal.status, 413);
  EXPECT_NE(refusal.error.find("larger than 1048576 bytes"), std::string::npos) << refusal.error;
  EXPECT_TRUE(refusal.closed);
}

TEST_F(HttpLimits, ABodyAtTheLimitIsServed) {
  RawHttpConnection connection(port_of(extender));
  std::string body = filter_body();
  body.append(kLimit - body.size(), ' ');  // trailing whitespace is valid JSON
  ASSERT_TRUE(connection.send_raw(filter_request(body)));
  const auto head = connection.read_head(20s);
  ASSERT_TRUE(head);
  EXPECT_EQ(head->status, 200);
  ASSERT_TRUE(connection.read_body(*head, 20s));
  // Kept alive.
  connection.send_request("GET", "/healthz");
  const auto again = connection.read_head(20s);
  ASSERT_TRUE(again);
  EXPECT_EQ(again->status, 200);
}

// The next request of a kept connection, which its worker reads itself, is held to the same limit:
// a body at the limit is served (handed to its route in the buffer it was read into), one byte
// more is refused at once and the connection closes.
TEST(HttpLimitsKept, ANextRequestsBodyAtTheLimitIsServedAndOneByteOverIsRefused) {
  ExtenderUnderTest extender(
      cluster_list({node_object("n1", 2, 32)}), "binpack", kLimit, 0,
      [](http::HttpServerOptions& options) { options.connections.keep_alive_linger = 10s; });
  RawHttpConnection connection(port_of(extender));
  connection.send_request("GET", "/healthz");
  const auto first = connection.read_head(20s);
  ASSERT_TRUE(first);
  ASSERT_TRUE(connection.read_body(*first, 20s));

  std::string body = filter_body();
  body.append(kLimit - body.size(), ' ');
  const auto before = extender.server().request_bodies();
  ASSERT_TRUE(connection.send_raw(filter_request(body)));
  const auto head = connection.read_head(20s);
  ASSERT_TRUE(head);
  EXPECT_EQ(head->status, 200);
  const auto reply = connection.read_body(*head, 20s);
  ASSERT_TRUE(reply);
  EXPECT_EQ(Json::parse(*reply)["NodeNames"], Json::array({"n1"}));
  EXPECT_EQ(extender.server().request_bodies().in_place, before.in_place + 1);

  body.push_back(' ');
  const std::string over = filter_request(body);
  ASSERT_TRUE(connection.send_raw(over.substr(0, over.size() - body.size() + 64 * 1024)));
  const Refusal refusal = read_refusal(connection);
  EXPECT_EQ(refusal.status, 413);
  EXPECT_TRUE(refusal.closed);
}

// A chunked body, whose size is not announced, is held to the limit all the same.
TEST_F(HttpLimits, AChunkedBodyIsLimitedOnTheBytesReceived) {
  RawHttpConnection connection(port_of(extender));
  ASSERT_TRUE(connection.send_raw(
      "POST /gpushare-scheduler/filter HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"));
  const std::string chunk = "10000\r\n" + std::string(0x10000, ' ') + "\r\n";
  // Twice the limit, never finished: the server must not wait for the end.
  for (std::size_t sent = 0; sent < 2 * kLimit; sent += 0x10000) {
    if (!connection.send_raw(chunk)) break;  // closed on us: fine, the reply is already here
  }
  const Refusal refusal = read_refusal(connection);
  EXPECT_EQ(refusal.status, 413);
  EXPECT_TRUE(refusal.closed);
}

// Chunk-size lines that never end carry no data, but had to be buffered whole.
TEST_F(HttpLimits, EndlessChunkFramingIsLimitedToo) {
  RawHttpConnection connection(port_of(extender));
  ASSERT_TRUE(
      connection.send_raw("POST /gpushare-scheduler/filter HTTP/1.1\r\nHost: "
                          "x\r\nTransfer-Encoding: chunked\r\n\r\n1"));
  const std::string zeros(0x10000, '0');
  for (std::size_t sent = 0; sent < 2 * kLimit; sent += zeros.size()) {
    if (!connection.send_raw(zeros)) break;
  }
  const Refusal refusal = read_refusal(connection);
  EXPECT_EQ(refusal.status, 413);
  EXPECT_TRUE(refusal.closed);
}

TEST_F(HttpLimits, AChunkedBodyWithinTheLimitIsServedAndTheConnectionCloses) {
  RawHttpConnection connection(port_of(extender));
  const std::string body = filter_body();
  std::string request =
      "POST /gpushare-scheduler/filter HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n";
  for (std::size_t at = 0; at < body.size(); at += 10) {
    const std::string piece = body.substr(at, 10);
    request += fmt::format("{:x}\r\n{}\r\n", piece.size(), piece);
  }
  request += "0\r\n\r\n";
  ASSERT_TRUE(connection.send_raw(request));
  const auto head = connection.read_head(20s);
  ASSERT_TRUE(head);
  EXPECT_EQ(head->status, 200);
  const auto reply = connection.read_body(*head, 20s);
  ASSERT_TRUE(reply);
  EXPECT_EQ(Json::parse(*reply)["NodeNames"], Json::array({"n1"}));
  EXPECT_EQ(head->headers.at("connection"), "close");
  EXPECT_TRUE(connection.closed_by_peer(20s));
}

// 1 MB of gzip may inflate to 1 GiB: the limit applies to the decompressed size. httplib's
// client compresses what it sends.
TEST_F(HttpLimits, AGzipBodyIsLimitedOnItsDecompressedSize) {
  httplib::Client client("127.0.0.1", extender.port());
  client.set_compress(true);
  client.set_read_timeout(20);
  // 16 MiB of spaces after a valid body: about 16 KB compressed, 16 times the limit inflated.
  const std::string bomb = filter_body() + std::string(16 * kLimit, ' ');
  auto refused = client.Post("/gpushare-scheduler/filter", bomb, "application/json");
  ASSERT_TRUE(refused) << httplib::to_string(refused.error());
  EXPECT_EQ(refused->status, 413);
  EXPECT_EQ(refused->get_header_value("Connection"), "close");
  // The same body to an unknown path: read within the limit too, never buffered whole.
  httplib::Client other("127.0.0.1", extender.port());
  other.set_compress(true);
  auto unknown = other.Post("/no/such/path", bomb, "application/json");
  ASSERT_TRUE(unknown);
  EXPECT_EQ(unknown->status, 413);
  // Compressed and within the limit: decoded and served.
  httplib::Client fine("127.0.0.1", extender.port());
  fine.set_compress(true);
  auto served = fine.Post("/gpushare-scheduler/filter", filter_body(), "application/json");
  ASSERT_TRUE(served);
  EXPECT_EQ(served->status, 200);
  EXPECT_EQ(Json::parse(served->body)["NodeNames"], Json::array({"n1"}));
}

// PRI is a method httplib reads a body for, itself (no content-reader route can take it): whole,
// decompressed, without --max-request-bytes. Refused before it reads a byte of it.
TEST_F(HttpLimits, APriRequestsBodyIsNeverRead) {
  httplib::detail::gzip_compressor compressor;
  std::string bomb;
  ASSERT_TRUE(compressor.compress(std::string(16 * kLimit, ' ').data(), 16 * kLimit, true,
                                  [&](const char* data, std::size_t size) {
                                    bomb.append(data, size);
                                    return true;
                                  }));
  RawHttpConnection connection(port_of(extender));
  ASSERT_TRUE(connection.send_raw(
      fmt::format("PRI /gpushare-scheduler/filter HTTP/1.1\r\nHost: x\r\nContent-Encoding: "
                  "gzip\r\nContent-Length: {}\r\n\r\n{}",
                  bomb.size(), bomb)));
  const Refusal refusal = read_refusal(connection);
  EXPECT_EQ(refusal.status, 405);
  EXPECT_TRUE(refusal.closed);
}

// httplib answers a Range header with a multipart reply built in memory, one copy of the body
// per range listed, so ranges are ignored: the whole reply, 200.
TEST_F(HttpLimits, ByteRangesAreIgnored) {
  std::string ranges = "bytes=0-";
  for (int i = 0; i < 500; ++i) ranges += ",0-";
  for (const char* path : {"/metrics", "/gpushare-scheduler/inspect", "/ui/app.js"}) {
    auto client = extender.client();
    auto whole = client.Get(path);
    ASSERT_TRUE(whole) << path;
    auto ranged = client.Get(path, {{"Range", ranges}});
    ASSERT_TRUE(ranged) << path;
    EXPECT_EQ(ranged->status, 200) << path;
    EXPECT_FALSE(ranged->has_header("Content-Range")) << path;
    EXPECT_LT(ranged->body.size(), 2 * whole->body.size()) << path;
  }
}

// The header block as a whole is limited, not only each line (httplib bounds lines only).
TEST_F(HttpLimits, AHeaderBlockOverTheLimitGets431) {
  RawHttpConnection connection(port_of(extender));
  std::string request = "GET /healthz HTTP/1.1\r\nHost: x\r\n";
  for (int i = 0; request.size() < 100 * 1024; ++i)
    request += fmt::format("X-Padding-{}: {}\r\n", i, std::string(40, 'p'));
  request += "\r\n";
  ASSERT_TRUE(connection.send_raw(request));
  const Refusal refusal = read_refusal(connection);
  EXPECT_EQ(refusal.status, 431);
  EXPECT_NE(refusal.error.find("header"), std::string::npos) << refusal.error;
  EXPECT_TRUE(refusal.closed);
}

TEST_F(HttpLimits, HeadersThatNeverEndGet431) {
  RawHttpConnection connection(port_of(extender));
  ASSERT_TRUE(connection.send_raw("GET /healthz HTTP/1.1\r\nX-Endless: "));
  const std::string more(16 * 1024, 'a');
  for (int i = 0; i < 8; ++i) {
    if (!connection.send_raw(more)) break;
  }
  const Refusal refusal = read_refusal(connection);
  EXPECT_EQ(refusal.status, 431);
  EXPECT_TRUE(refusal.closed);
}

TEST_F(HttpLimits, AHeaderBlockUnderTheLimitIsServed) {
  RawHttpConnection connection(port_of(extender));
  std::string request = "GET /healthz HTTP/1.1\r\nHost: x\r\n";
  for (int i = 0; request.size() < 48 * 1024; ++i)
    request += fmt::format("X-Padding-{}: {}\r\n", i, std::string(40, 'p'));
  request += "\r\n";
  ASSERT_TRUE(connection.send_raw(request));
  const auto head = connection.read_head(20s);
  ASSERT_TRUE(head);
  EXPECT_EQ(head->status, 200);
}

// What follows a refused body is never read as another request.
TEST_F(HttpLimits, TheRestOfARefusedBodyIsNotServedAsRequests) {
  RawHttpConnection connection(port_of(extender));
  std::string smuggled;
  for (int i = 0; i < 64; ++i) smuggled += "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n";
  ASSERT_TRUE(
      connection.send_raw("POST /gpushare-scheduler/bind HTTP/1.1\r\nHost: x\r\nContent-Length: " +
                          std::to_string(kLimit + 1) + "\r\n\r\n" + smuggled));
  const auto head = connection.read_head(20s);
  ASSERT_TRUE(head);
  EXPECT_EQ(head->status, 413);
  ASSERT_TRUE(connection.read_body(*head, 20s));
  EXPECT_FALSE(connection.read_head(2s)) << "a smuggled request was answered";
}

// httplib made a new socket stream per request, dropping bytes it had read ahead: the second of
// two pipelined requests went unanswered.
TEST_F(HttpLimits, PipelinedRequestsAreAllAnsweredInOrder) {
  RawHttpConnection connection(port_of(extender));
  const std::string body = filter_body();
  ASSERT_TRUE(connection.send_raw(
      "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"
      "POST /gpushare-scheduler/filter HTTP/1.1\r\nHost: x\r\nContent-Length: " +
      std::to_string(body.size()) + "\r\n\r\n" + body +
      "GET /version HTTP/1.1\r\nHost: x\r\n\r\n"));
  for (const char* expected : {"ok", "NodeNames", "gpushare"}) {
    const auto head = connection.read_head(20s);
    ASSERT_TRUE(head) << expected;
    EXPECT_EQ(head->status, 200) << expected;
    const auto reply = connection.read_body(*head, 20s);
    ASSERT_TRUE(reply) << expected;
    EXPECT_NE(reply->find(expected), std::string::npos) << *reply;
  }
}

// A Content-Length body is buffered whole by the reactor before a worker answers it: the handler
// gets that buffer itself, so a 40 MB full-Node filter is not held twice while it is decoded and
// answered. Bodies whose end only decoding finds (chunked) are read into a string of their own.
TEST_F(HttpLimits, ABufferedBodyIsHandedToItsHandlerWithoutACopy) {
  Json node = node_object("n1", 2, 32);
  const std::string body =
      Json{{"Pod", pod_object("p", "uid-p", 4)}, {"Nodes", {{"items", Json::array({node})}}}}
          .dump();
  const auto before = extender.server().request_bodies();
  RawHttpConnection connection(port_of(extender));
  ASSERT_TRUE(connection.send_raw(filter_request(body)));
  const auto head = connection.read_head(20s);
  ASSERT_TRUE(head);
  EXPECT_EQ(head->status, 200);
  const auto reply = connection.read_body(*head, 20s);
  ASSERT_TRUE(reply);
  EXPECT_EQ(Json::parse(*reply)["Nodes"]["items"], Json::array({node}));
  const auto in_place = extender.server().request_bodies();
  EXPECT_EQ(in_place.in_place, before.in_place + 1);
  EXPECT_EQ(in_place.read, before.read);

  RawHttpConnection chunked(port_of(extender));
  ASSERT_TRUE(chunked.send_raw(
      "POST /gpushare-scheduler/filter HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n" +
      fmt::format("{:x}\r\n{}\r\n0\r\n\r\n", body.size(), body)));
  const auto chunked_head = chunked.read_head(20s);
  ASSERT_TRUE(chunked_head);
  EXPECT_EQ(chunked_head->status, 200);
  const auto read = extender.server().request_bodies();
  EXPECT_EQ(read.in_place, in_place.in_place);
  EXPECT_EQ(read.read, in_place.read + 1);
}

TEST_F(HttpLimits, AnUnknownPathWithABodyIs404AndTheConnectionLives) {
  RawHttpConnection connection(port_of(extender));
  connection.send_request("POST", "/gpushare-scheduler/explode", {}, "{}");
  const auto head = connection.read_head(20s);
  ASSERT_TRUE(head);
  EXPECT_EQ(head->status, 404);
  ASSERT_TRUE(connection.read_body(*head, 20s));
  connection.send_request("GET", "/healthz");
  const auto again = connection.read_head(20s);
  ASSERT_TRUE(again);
  EXPECT_EQ(again->status, 200);
}

}  // namespace
}  // namespace gpushare::testing
