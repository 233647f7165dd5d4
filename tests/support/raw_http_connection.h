#pragma once
// A plain TCP connection speaking HTTP/1.1 by hand, for tests that need what an HTTP client
// library hides: chunk boundaries, a connection kept open between requests, a peer's close.

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

namespace gpushare::testing {

class RawHttpConnection {
 public:
  enum class ChunkStatus { Chunk, CleanEnd, Abrupt, Timeout };
  struct Head {
    int status = 0;
    std::map<std::string, std::string> headers;  // keys lower-cased
  };

  explicit RawHttpConnection(std::uint16_t port);
  ~RawHttpConnection();
  RawHttpConnection(const RawHttpConnection&) = delete;
  RawHttpConnection& operator=(const RawHttpConnection&) = delete;

  void send_request(std::string_view method, std::string_view target,
                    const std::map<std::string, std::string>& headers = {},
                    std::string_view body = {});
  // Sends bytes exactly as given (a request built by hand, part of a body). False when the peer
  // closed or reset the connection, or took none of it within `timeout`.
  bool send_raw(std::string_view bytes,
                std::chrono::milliseconds timeout = std::chrono::seconds(10));
  std::optional<Head> read_head(std::chrono::milliseconds timeout = std::chrono::seconds(5));
  // The next chunk of a chunked body.
  ChunkStatus read_chunk(std::string& data,
                         std::chrono::milliseconds timeout = std::chrono::seconds(5));
  // A whole body (Content-Length or chunked); nullopt on error.
  std::optional<std::string> read_body(const Head& head,
                                       std::chrono::milliseconds timeout = std::chrono::seconds(5));
  // Closes with a reset (RST) instead of a FIN, as a client that crashed or timed out does.
  void reset();
  // True once the server has closed (or reset) the connection.
  bool closed_by_peer(std::chrono::milliseconds timeout = std::chrono::seconds(5));

 private:
  enum class Fill { Data, Eof, Reset, Timeout };
  Fill fill(std::chrono::steady_clock::time_point deadline);
  std::optional<std::string> read_line(std::chrono::steady_clock::time_point deadline, Fill& why);
  int fd_ = -1;
  std::string buffer_;
};

}  // namespace gpushare::testing
