// A channel's down report describes how the child ended in words a user
// reads in an error message, and gives the exit code a caller checks.

#include "process/child_down.hpp"

#include <catch2/catch.hpp>

#include <signal.h>
#include <sys/wait.h>

#include "process/child_reaper.hpp"

using namespace sprintrt::process;

TEST_CASE("a down report names the exit status or the signal") {
  child_down exited{{}, 42, W_EXITCODE(3, 0), ""};
  REQUIRE(exited.describe() == "exited with status 3");
  REQUIRE(exited.exit_code() == 3);
  REQUIRE_FALSE(exited.clean_exit());
  child_down clean{{}, 42, W_EXITCODE(0, 0), ""};
  REQUIRE(clean.clean_exit());
  REQUIRE(clean.exit_code() == 0);
  child_down killed{{}, 42, W_EXITCODE(0, SIGKILL), ""};
  REQUIRE(killed.describe() == "was killed by signal 9 (Killed)");
  REQUIRE(killed.exit_code() == -9);
  REQUIRE_FALSE(killed.clean_exit());
}

TEST_CASE("a down report says when the child never started, was reaped elsewhere or was given "
          "up on") {
  child_down never{{}, -1, 0, ""};
  REQUIRE(never.describe() == "was never started");
  REQUIRE(never.exit_code() == 0);
  REQUIRE_FALSE(never.clean_exit());
  child_down elsewhere{{}, 42, reaped_elsewhere, ""};
  REQUIRE(elsewhere.describe() == "was reaped by someone else (its status is unknown)");
  REQUIRE(elsewhere.exit_code() == 0);
  child_down stuck{{}, 42, not_reaped, ""};
  REQUIRE(stuck.describe() == "did not exit within 1000 ms of SIGKILL (stuck in the kernel?) and "
                              "was given up on");
  REQUIRE(stuck.exit_code() == -SIGKILL);
}
