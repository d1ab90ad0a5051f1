#include "process/pipe_write.hpp"

#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <ctime>

namespace sprintrt::process {

namespace {

sigset_t only_sigpipe() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGPIPE);
  return set;
}

} // namespace

ssize_t write_without_sigpipe(int fd, const void* data, size_t size) {
  const sigset_t pipe_set = only_sigpipe();
  // A SIGPIPE pending before the call is someone else's: leave it.
  sigset_t pending;
  sigemptyset(&pending);
  sigpending(&pending);
  const bool was_pending = sigismember(&pending, SIGPIPE) == 1;
  sigset_t previous;
  pthread_sigmask(SIG_BLOCK, &pipe_set, &previous);
  ssize_t n;
  do {
    n = ::write(fd, data, size);
  } while (n < 0 && errno == EINTR);
  const int saved = errno;
  if (n < 0 && saved == EPIPE && !was_pending) {
    // Take back the SIGPIPE this write raised, while it is still blocked.
    const timespec no_wait{0, 0};
    while (sigtimedwait(&pipe_set, nullptr, &no_wait) < 0 && errno == EINTR) {
    }
  }
  pthread_sigmask(SIG_SETMASK, &previous, nullptr);
  errno = saved;
  return n;
}

void block_sigpipe_in_this_thread() {
  const sigset_t pipe_set = only_sigpipe();
  pthread_sigmask(SIG_BLOCK, &pipe_set, nullptr);
}

} // namespace sprintrt::process
