#include "runtime/child_reaper.hpp"

#include <signal.h>
#include <sys/wait.h>

#include <cerrno>
#include <vector>

#include <spdlog/spdlog.h>

namespace sprintrt::runtime {

child_reaper::child_reaper(boost::asio::io_context& io) : signals_(io, SIGCHLD) {
  arm();
}

void child_reaper::arm() {
  signals_.async_wait([this](const boost::system::error_code& ec, int) {
    if (ec)
      return; // cancelled: shutting down
    poll();
    arm();
  });
}

void child_reaper::watch(pid_t pid, std::function<void(int)> on_exit) {
  watched_.emplace(pid, std::move(on_exit));
  poll();
}

void child_reaper::kill(pid_t pid) {
  if (watched_.count(pid) > 0)
    ::kill(pid, SIGKILL);
}

void child_reaper::poll() {
  // Collect first: a callback may watch or kill other children.
  std::vector<std::pair<std::function<void(int)>, int>> exited;
  for (auto i = watched_.begin(); i != watched_.end();) {
    int status = 0;
    pid_t rc = ::waitpid(i->first, &status, WNOHANG);
    if (rc == i->first || (rc < 0 && errno == ECHILD)) {
      if (rc < 0) {
        spdlog::warn("child {} was reaped by someone else (waitpid(-1) elsewhere?)", i->first);
        status = reaped_elsewhere;
      }
      exited.emplace_back(std::move(i->second), status);
      i = watched_.erase(i);
    } else {
      ++i;
    }
  }
  for (auto& [callback, status] : exited)
    callback(status);
}

void child_reaper::kill_all() {
  signals_.cancel();
  auto children = std::move(watched_);
  watched_.clear();
  for (auto& [pid, callback] : children) {
    int status = 0;
    pid_t rc = ::waitpid(pid, &status, WNOHANG);
    if (rc < 0)
      status = reaped_elsewhere;
    if (rc == 0) {
      // Still running (only then: after ECHILD the pid may belong to
      // someone else by now).
      ::kill(pid, SIGKILL);
      while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
      }
    }
    callback(status);
  }
}

} // namespace sprintrt::runtime
