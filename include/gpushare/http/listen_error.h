#pragma once
// What to tell the user when the extender cannot listen: the address, the operating system's
// reason and what to do about it.

#include <string>
#include <string_view>

namespace gpushare::http {

// `error` is the errno of the failed socket/bind/listen call; 0 when the host did not resolve.
std::string listen_failure_message(std::string_view host, int port, int error);

}  // namespace gpushare::http
