// Writing to a pipe whose reader is gone: EPIPE, no SIGPIPE, and the
// thread's signal mask and the process's dispositions as they were.

#include "process/pipe_write.hpp"

#include <catch2/catch.hpp>

#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <thread>

using namespace sprintrt::process;

namespace {

bool sigpipe_pending() {
  sigset_t pending;
  sigemptyset(&pending);
  sigpending(&pending);
  return sigismember(&pending, SIGPIPE) == 1;
}

bool sigpipe_blocked() {
  sigset_t mask;
  pthread_sigmask(SIG_SETMASK, nullptr, &mask);
  return sigismember(&mask, SIGPIPE) == 1;
}

} // namespace

TEST_CASE("a write to a pipe without reader fails with EPIPE and raises no SIGPIPE") {
  // SIGPIPE keeps its default action, which would end this test binary.
  struct sigaction before {};
  sigaction(SIGPIPE, nullptr, &before);
  REQUIRE(before.sa_handler == SIG_DFL);
  int fds[2];
  REQUIRE(::pipe(fds) == 0);
  ::close(fds[0]);
  const char byte = 'x';
  // On a thread of its own, like a trainer's thread sending a request.
  ssize_t result = 0;
  int error = 0;
  bool blocked_after = true;
  bool pending_after = true;
  std::thread writer{[&] {
    result = write_without_sigpipe(fds[1], &byte, 1);
    error = errno;
    blocked_after = sigpipe_blocked();
    pending_after = sigpipe_pending();
  }};
  writer.join();
  ::close(fds[1]);
  CHECK(result == -1);
  CHECK(error == EPIPE);
  CHECK_FALSE(blocked_after);
  CHECK_FALSE(pending_after);
  struct sigaction after {};
  sigaction(SIGPIPE, nullptr, &after);
  CHECK(after.sa_handler == SIG_DFL);
}

TEST_CASE("a write to an open pipe writes, and a thread that blocks SIGPIPE keeps it blocked") {
  int fds[2];
  REQUIRE(::pipe(fds) == 0);
  const char text[] = "abc";
  CHECK(write_without_sigpipe(fds[1], text, 3) == 3);
  char back[3];
  CHECK(::read(fds[0], back, 3) == 3);
  CHECK(std::string(back, 3) == "abc");
  ::close(fds[0]);
  bool blocked = false;
  std::thread own{[&] {
    block_sigpipe_in_this_thread();
    const char byte = 'x';
    (void)write_without_sigpipe(fds[1], &byte, 1);
    blocked = sigpipe_blocked();
  }};
  own.join();
  ::close(fds[1]);
  CHECK(blocked);
}
