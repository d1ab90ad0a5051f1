#include "process/child_down.hpp"

#include <signal.h>
#include <sys/wait.h>

#include <cstring>

#include "process/child_reaper.hpp"

namespace sprintrt::process {

bool child_down::clean_exit() const noexcept {
  return pid >= 0 && wait_status >= 0 && WIFEXITED(wait_status) && WEXITSTATUS(wait_status) == 0;
}

int child_down::exit_code() const noexcept {
  if (pid < 0 || wait_status == reaped_elsewhere)
    return 0;
  if (wait_status == not_reaped)
    return -SIGKILL;
  if (WIFEXITED(wait_status))
    return WEXITSTATUS(wait_status);
  if (WIFSIGNALED(wait_status))
    return -WTERMSIG(wait_status);
  return 0;
}

std::string child_down::describe() const {
  if (pid < 0)
    return "was never started";
  if (wait_status == reaped_elsewhere)
    return "was reaped by someone else (its status is unknown)";
  if (wait_status == not_reaped)
    return "did not exit within " + std::to_string(kill_wait.count()) +
           " ms of SIGKILL (stuck in the kernel?) and was given up on";
  if (WIFEXITED(wait_status))
    return "exited with status " + std::to_string(WEXITSTATUS(wait_status));
  if (WIFSIGNALED(wait_status))
    return "was killed by signal " + std::to_string(WTERMSIG(wait_status)) + " (" +
           ::strsignal(WTERMSIG(wait_status)) + ")";
  return "ended with wait status " + std::to_string(wait_status);
}

} // namespace sprintrt::process
