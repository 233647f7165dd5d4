#pragma once
// What the connection layer enforces beyond the user's ConnectionLimits (private to
// src/http): shared by the reactor that waits for requests and the connections that
// read them.

#include <openssl/ssl.h>

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>

#include "gpushare/http/connection_limits.h"

namespace gpushare::http::detail {

struct Limits : ConnectionLimits {
  // Asked once a request's header block is buffered (its path, the peer's IP, its TLS
  // session): true hands the request to a worker at once, without waiting for its body, so a
  // client the server will refuse (--allowed-clients, --tls-client-ca) costs no more than its
  // headers. Called on the reactor thread.
  std::function<bool(std::string_view path, std::string_view peer_ip, const SSL* ssl)>
      refused_early;
  // Chunked request bodies read by workers at once. Such a body is read on a worker (its end is
  // known only by decoding it), which it may hold until body_timeout; beyond this many, a new
  // one gets 503 and its connection closes, so slow chunked uploads cannot take every worker.
  // 0: no limit.
  std::size_t max_chunked_bodies = 0;
  // The body of a reply refusing a request the connection layer answers itself (408, 413, 431,
  // 503): the server's error body for `message`. Called on the reactor thread and on workers.
  std::function<std::string(std::string_view message)> error_body;
};

// The reply refusing a request, closing its connection, with error_body(message) as its body.
std::string refusal_reply(const Limits& limits, int status, std::string_view reason,
                          std::string_view message, std::string_view more_headers = {});

// Spare capacity the reactor leaves after a buffered body: a handler may then take the buffer as
// the body and parse it in place (the HTTP server checks that it covers the decoder's padding).
inline constexpr std::size_t kBufferedBodySpare = 64;

}  // namespace gpushare::http::detail
