#pragma once
// The stream httplib reads one request at a time from, on the worker serving a connection
// (private to src/http), and what the handlers of that request may learn or ask about its
// connection. Not thread-safe: one worker serves a connection at a time.

#include <httplib.h>

#include <chrono>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include "connection_reactor.h"
#include "connection_rules.h"
#include "transport.h"

namespace gpushare::http::detail {

class RequestStream;

// What the handlers of the request being served may learn or ask about its connection.
struct ConnectionState {
  bool close_after_response = false;
  bool body_over_limit = false;
  // Where the request's body is charged as it is decoded (BodyReader).
  Reactor* reactor = nullptr;
  Connection* connection = nullptr;
  RequestStream* stream = nullptr;  // the request's bytes, for BodyReader
};

// The state of the request the calling thread serves, or nullptr outside a request.
ConnectionState* current_connection();

// Makes `state` the calling thread's current_connection() for its lifetime.
class CurrentConnection {
 public:
  explicit CurrentConnection(ConnectionState& state);
  ~CurrentConnection();
  CurrentConnection(const CurrentConnection&) = delete;
  CurrentConnection& operator=(const CurrentConnection&) = delete;
};

// The reactor hands a connection over with a whole request in its buffer (the body too, when a
// Content-Length announced it); further requests that arrived with it (pipelining) are served
// from the buffer as well. Only a chunked body is read from the socket here, within the body
// deadline, and the next request of a keep-alive connection that arrives at once
// (read_next_request). Bytes that arrive after one request stay for the next.
//
// A reply's header block (httplib writes it alone, before the body) is held until the body's
// first write, and both go out in one write; flush() sends a header block no body followed.
class RequestStream final : public httplib::Stream {
 public:
  enum class Start { kRequest, kIncomplete, kHeaderTooLarge, kBodyTooLarge };

  RequestStream(Transport& transport, Connection& connection, const Limits& limits,
                ConnectionState& state, std::chrono::milliseconds read_timeout,
                std::chrono::milliseconds write_timeout);
  ~RequestStream() override;

  // The next request's header block, if the buffer holds all of it.
  Start begin_request();
  // After httplib answered: skips what is left of a Content-Length body it did not read. False
  // when the connection must close (a chunked body's end is not known here; a failed read).
  bool finish_request();
  // Sends what write() holds back (a header block); false when that fails. Called after httplib
  // answered each request.
  bool flush();
  // Between requests, on the worker: reads the next request into the connection's buffer until
  // the buffer holds its header block and its Content-Length body, or `deadline` passes, or the
  // transport fails. Reads no further than that request. True when it is whole: `length` is then
  // its Content-Length (0: none). False also for what the reactor must judge (a header block
  // over the limit, a chunked or oversized body, "Expect: 100-continue"): the bytes stay in the
  // buffer for it.
  bool read_next_request(Clock::time_point deadline, std::size_t& length);
  // The body of the request being served, when the reactor buffered all of it (Content-Length)
  // and nothing follows it: the buffer becomes the body, its header block dropped, so a large
  // body is not held twice (buffer and copy) while it is answered. nullopt otherwise (chunked,
  // read from the socket after "100 Continue", pipelined requests behind it).
  std::optional<std::string> take_buffered_body(std::size_t max_bytes);

  bool is_readable() const override;
  bool is_writable() const override;
  ssize_t read(char* data, std::size_t size) override;
  ssize_t write(const char* data, std::size_t size) override;
  // Looked up once per connection, not with two system calls per request.
  void get_remote_ip_and_port(std::string& ip, int& port) const override;
  void get_local_ip_and_port(std::string& ip, int& port) const override;
  socket_t socket() const override;

  // The header block of the request being served (for refusals' log lines).
  std::string_view request_line() const;

 private:
  // What is left of the body's time, within the read time-out.
  std::chrono::milliseconds body_timeout() const;
  // Drops what httplib has read from the buffer.
  void consume();
  ssize_t take_buffered(char* data, std::size_t size, std::size_t& budget);
  // Sets the body's budget from its framing, as httplib will read it.
  Start frame_body();

  Transport& transport_;
  Connection& connection_;
  std::string& buffer_;  // the connection's: received, from offset_ on not yet handed to httplib
  const Limits& limits_;
  ConnectionState& state_;
  std::chrono::milliseconds read_timeout_;
  std::chrono::milliseconds write_timeout_;
  std::size_t offset_ = 0;
  std::size_t header_left_ = 0;  // header-block bytes httplib has yet to read
  std::size_t body_left_ = 0;    // body bytes httplib may still read for this request
  Framing::Kind framing_ = Framing::Kind::kNone;
  bool broken_ = false;
  std::string held_;            // the reply's header block, not yet written
  bool reply_started_ = false;  // the first write of this request's reply was seen
};

}  // namespace gpushare::http::detail
