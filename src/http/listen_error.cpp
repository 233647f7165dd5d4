#include "gpushare/http/listen_error.h"

#include <fmt/format.h>

#include <cerrno>
#include <cstring>

namespace gpushare::http {

std::string listen_failure_message(std::string_view host, int port, int error) {
  const std::string where = fmt::format("cannot listen on {}:{}", host, port);
  switch (error) {
    case 0:
      return fmt::format(
          "{}: cannot resolve host \"{}\"; give an IP address in --listen (0.0.0.0 for every "
          "interface, 127.0.0.1 for this machine only)",
          where, host);
    case EADDRINUSE:
      return fmt::format(
          "{}: {}; is another gpushare-extender (or another program) running on that port? "
          "Stop it, or choose another port with --listen {}:PORT",
          where, std::strerror(error), host);
    case EACCES:
      return fmt::format(
          "{}: {}; ports below 1024 need root or CAP_NET_BIND_SERVICE: choose another port "
          "with --listen {}:PORT",
          where, std::strerror(error), host);
    case EADDRNOTAVAIL:
      return fmt::format(
          "{}: {}; no network interface of this machine has that address: use 0.0.0.0 or "
          "127.0.0.1 in --listen",
          where, std::strerror(error));
    default:
      return fmt::format("{}: {}", where, std::strerror(error));
  }
}

}  // namespace gpushare::http
