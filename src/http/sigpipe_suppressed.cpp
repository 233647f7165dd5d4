#include "sigpipe_suppressed.h"

#include <pthread.h>

#include <ctime>

namespace gpushare::http::detail {

SigpipeSuppressed::SigpipeSuppressed() {
  sigset_t pipe;
  sigemptyset(&pipe);
  sigaddset(&pipe, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &pipe, &previous_);
}

SigpipeSuppressed::~SigpipeSuppressed() {
  sigset_t pipe;
  sigemptyset(&pipe);
  sigaddset(&pipe, SIGPIPE);
  const timespec no_wait{0, 0};
  while (sigtimedwait(&pipe, nullptr, &no_wait) > 0) {
  }
  pthread_sigmask(SIG_SETMASK, &previous_, nullptr);
}

}  // namespace gpushare::http::detail
