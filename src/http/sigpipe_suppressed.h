#pragma once
// Private to src/http: TLS reads and writes on the reactor and on workers.

#include <signal.h>

namespace gpushare::http::detail {

// OpenSSL writes to the socket itself, without MSG_NOSIGNAL: a peer that reset the connection
// would raise SIGPIPE and end the process. Blocks it on this thread for the object's life (around
// an SSL_accept, SSL_read or SSL_write) and swallows one raised meanwhile.
class SigpipeSuppressed {
 public:
  SigpipeSuppressed();
  ~SigpipeSuppressed();
  SigpipeSuppressed(const SigpipeSuppressed&) = delete;
  SigpipeSuppressed& operator=(const SigpipeSuppressed&) = delete;

 private:
  sigset_t previous_{};
};

}  // namespace gpushare::http::detail
