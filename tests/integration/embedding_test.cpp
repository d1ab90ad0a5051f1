// Embedding sprintrt changes no process-wide state: a trainer's own SIGCHLD
// handler keeps working while sprintrt runs and is the same after it stops,
// the trainer's own children are left for the trainer to reap, and SIGPIPE
// keeps its disposition, even while children die under writes.

#include <catch2/catch.hpp>

#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "sprintrt/pool_client.hpp"
#include "sprintrt/sprint_runtime.hpp"
#include "tests/integration/integration_support.hpp"
#include "tests/support/leak_check.hpp"
#include "tests/support/process_checks.hpp"

using namespace sprintrt;

extern char** environ;

namespace {

std::atomic<int> trainer_sigchlds{0};

void trainer_on_sigchld(int) {
  ++trainer_sigchlds;
}

/// Starts `/bin/true` as the trainer's own child.
pid_t start_own_child() {
  pid_t pid = -1;
  char program[] = "/bin/true";
  char* argv[] = {program, nullptr};
  REQUIRE(posix_spawn(&pid, program, nullptr, nullptr, argv, environ) == 0);
  return pid;
}

} // namespace

TEST_CASE("a trainer's SIGCHLD handler, its own children and SIGPIPE are left alone") {
  struct sigaction mine {};
  mine.sa_handler = trainer_on_sigchld;
  sigemptyset(&mine.sa_mask);
  mine.sa_flags = SA_RESTART;
  struct sigaction previous {};
  REQUIRE(sigaction(SIGCHLD, &mine, &previous) == 0);
  struct sigaction pipe_before {};
  sigaction(SIGPIPE, nullptr, &pipe_before);
  test::fd_snapshot fds;
  {
    test::temp_dir dir;
    auto segments = test::write_corpus(dir, 4, 5);
    // Every child crashes on its second request: the parent's writes meet
    // dying children, and children exit all the time.
    auto opts = test::sim_options(test::corpus_path(dir), {"fault=crash", "fault-after=1"});
    sprint_runtime rt;
    pool_client client{rt, opts};
    const pid_t own = start_own_child();
    for (int round = 0; round < 3; ++round)
      for (const auto& seg : segments) {
        auto job = test::make_job(seg.name, test::random_log_posteriors(6, 5, round + 1), 5);
        REQUIRE(client.compute_segment(job));
      }
    // While sprintrt runs, the handler is still the trainer's.
    struct sigaction during {};
    sigaction(SIGCHLD, nullptr, &during);
    CHECK(during.sa_handler == trainer_on_sigchld);
    // sprintrt reaped its own children only: the trainer's is there to reap.
    int status = -1;
    pid_t reaped = 0;
    for (int i = 0; i < 500 && reaped == 0; ++i) {
      reaped = ::waitpid(own, &status, WNOHANG);
      if (reaped == 0)
        std::this_thread::sleep_for(std::chrono::milliseconds{10});
    }
    CHECK(reaped == own);
    CHECK(WIFEXITED(status));
    rt.shutdown();
  }
  test::check_nothing_left(fds);
  // sprintrt's children and the trainer's all signalled the trainer's handler.
  CHECK(trainer_sigchlds.load() > 0);
  struct sigaction after {};
  sigaction(SIGCHLD, nullptr, &after);
  CHECK(after.sa_handler == trainer_on_sigchld);
  struct sigaction pipe_after {};
  sigaction(SIGPIPE, nullptr, &pipe_after);
  CHECK(pipe_after.sa_handler == pipe_before.sa_handler);
  sigaction(SIGCHLD, &previous, nullptr);
}
