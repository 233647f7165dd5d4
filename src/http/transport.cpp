#include "transport.h"

#include <poll.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include <algorithm>
#include <cerrno>

#include "sigpipe_suppressed.h"

namespace gpushare::http::detail {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

int poll_for(int fd, short events, milliseconds timeout) {
  pollfd entry{fd, events, 0};
  for (;;) {
    const int ready =
        ::poll(&entry, 1, static_cast<int>(std::max<milliseconds::rep>(0, timeout.count())));
    if (ready >= 0 || errno != EINTR) return ready;
  }
}

milliseconds remaining(Clock::time_point deadline) {
  return std::max(milliseconds(0), std::chrono::ceil<milliseconds>(deadline - Clock::now()));
}

namespace {

// Calls `call` until it moves bytes, waiting for `events` whenever it would block, until
// `timeout` has passed.
template <typename Call>
ssize_t retry(int fd, short events, milliseconds timeout, const Call& call) {
  const auto deadline = Clock::now() + timeout;
  for (;;) {
    const ssize_t n = call();
    if (n >= 0) return n;
    if (errno == EINTR) continue;
    if (errno != EAGAIN && errno != EWOULDBLOCK) return -1;
    if (poll_for(fd, events, remaining(deadline)) <= 0) return -1;
  }
}

}  // namespace

ssize_t Transport::write_some(std::string_view head, const char* data, std::size_t size,
                              milliseconds timeout) {
  return head.empty() ? write_some(data, size, timeout)
                      : write_some(head.data(), head.size(), timeout);
}

ssize_t PlainTransport::read_some(char* data, std::size_t size, milliseconds timeout) {
  return retry(fd_, POLLIN, timeout, [&] { return ::recv(fd_, data, size, 0); });
}

ssize_t PlainTransport::write_some(const char* data, std::size_t size, milliseconds timeout) {
  return retry(fd_, POLLOUT, timeout, [&] { return ::send(fd_, data, size, MSG_NOSIGNAL); });
}

ssize_t PlainTransport::write_some(std::string_view head, const char* data, std::size_t size,
                                   milliseconds timeout) {
  iovec parts[2] = {{const_cast<char*>(head.data()), head.size()}, {const_cast<char*>(data), size}};
  msghdr message{};
  message.msg_iov = parts;
  message.msg_iovlen = 2;
  return retry(fd_, POLLOUT, timeout, [&] { return ::sendmsg(fd_, &message, MSG_NOSIGNAL); });
}

bool PlainTransport::wait_readable(milliseconds timeout) {
  return poll_for(fd_, POLLIN, timeout) > 0;
}

void PlainTransport::shutdown_write() {
  ::shutdown(fd_, SHUT_WR);
}

ssize_t TlsTransport::read_some(char* data, std::size_t size, milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  const int chunk = static_cast<int>(std::min<std::size_t>(size, 1 << 30));
  for (;;) {
    if (SSL_pending(ssl_) <= 0 && poll_for(fd_, POLLIN, remaining(deadline)) <= 0) return -1;
    const int n = SSL_read(ssl_, data, chunk);
    if (n > 0) return n;
    const int error = SSL_get_error(ssl_, n);
    if (error == SSL_ERROR_ZERO_RETURN) return 0;
    // Handshake messages or a partial record: wait for more.
    if (error != SSL_ERROR_WANT_READ || Clock::now() >= deadline) return -1;
  }
}

// A write that would block is retried.
ssize_t TlsTransport::write_some(const char* data, std::size_t size, milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  const int chunk = static_cast<int>(std::min<std::size_t>(size, 1 << 30));
  for (;;) {
    int n = 0;
    {
      SigpipeSuppressed no_sigpipe;
      n = SSL_write(ssl_, data, chunk);
    }
    if (n > 0) return n;
    const int error = SSL_get_error(ssl_, n);
    const short wanted = error == SSL_ERROR_WANT_WRITE  ? POLLOUT
                         : error == SSL_ERROR_WANT_READ ? POLLIN
                                                        : 0;
    if (wanted == 0 || poll_for(fd_, wanted, remaining(deadline)) <= 0) return -1;
  }
}

bool TlsTransport::wait_readable(milliseconds timeout) {
  return SSL_pending(ssl_) > 0 || poll_for(fd_, POLLIN, timeout) > 0;
}

void TlsTransport::shutdown_write() {
  if (shut_down_) return;
  shut_down_ = true;
  {
    SigpipeSuppressed no_sigpipe;
    SSL_shutdown(ssl_);
  }
  ::shutdown(fd_, SHUT_WR);
}

}  // namespace gpushare::http::detail
