#include "runtime/child_reaper.hpp"

#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <vector>

#include <spdlog/spdlog.h>

namespace sprintrt::runtime {

namespace asio = boost::asio;

namespace {

// Through syscall(): glibc 2.36's <sys/pidfd.h> lacks extern "C", and older
// glibcs lack the wrappers.

/// A pidfd for `pid`, or -1 (errno set).
int open_pidfd(pid_t pid) {
  return static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
}

/// SIGKILL through `pidfd`.
void kill_through(int pidfd) {
  ::syscall(SYS_pidfd_send_signal, pidfd, SIGKILL, nullptr, 0);
}

} // namespace

child_reaper::child_reaper(asio::io_context& io) : io_(io), poll_timer_(io) {}

void child_reaper::watch(pid_t pid, std::function<void(int)> on_exit) {
  child entry;
  entry.on_exit = std::move(on_exit);
  int fd = open_pidfd(pid);
  if (fd >= 0) {
    try {
      entry.pidfd = std::make_unique<asio::posix::stream_descriptor>(io_, fd);
    } catch (const std::exception& e) {
      ::close(fd);
      spdlog::debug("cannot wait for the pidfd of {} ({}): polling for its exit instead", pid,
                    e.what());
    }
  } else {
    spdlog::debug("pidfd_open({}) failed ({}): polling for its exit instead", pid,
                  std::strerror(errno));
  }
  const bool has_pidfd = entry.pidfd != nullptr;
  entry.polled = !has_pidfd;
  watched_.emplace(pid, std::move(entry));
  if (try_reap(pid))
    return;
  if (has_pidfd)
    wait_for(pid);
  else
    poll_later();
}

void child_reaper::wait_for(pid_t pid) {
  auto& descriptor = *watched_.at(pid).pidfd;
  descriptor.async_wait(asio::posix::stream_descriptor::wait_read,
                        [this, pid](const boost::system::error_code& ec) {
                          if (ec)
                            return; // cancelled: reaped or shutting down
                          // Readable but not reapable (a traced child, say):
                          // the pidfd will not signal again, so poll.
                          if (watched_.count(pid) > 0 && !try_reap(pid)) {
                            watched_.at(pid).polled = true;
                            poll_later();
                          }
                        });
}

bool child_reaper::try_reap(pid_t pid) {
  int status = 0;
  pid_t rc = ::waitpid(pid, &status, WNOHANG);
  if (rc == 0 || (rc < 0 && errno != ECHILD))
    return false;
  if (rc < 0) {
    spdlog::warn("child {} was reaped by someone else (waitpid(-1) elsewhere?)", pid);
    status = reaped_elsewhere;
  }
  // Out of the map before the callback, which may watch or kill others.
  auto node = watched_.extract(pid);
  node.mapped().pidfd.reset(); // closes the pidfd
  node.mapped().on_exit(status);
  return true;
}

void child_reaper::poll_later() {
  if (polling_)
    return;
  polling_ = true;
  poll_timer_.expires_after(std::chrono::milliseconds{10});
  poll_timer_.async_wait([this](const boost::system::error_code& ec) {
    polling_ = false;
    if (ec)
      return;
    std::vector<pid_t> polled;
    for (const auto& [pid, entry] : watched_)
      if (entry.polled)
        polled.push_back(pid);
    bool left = false;
    for (auto pid : polled)
      left = !try_reap(pid) || left;
    if (left)
      poll_later();
  });
}

void child_reaper::kill(pid_t pid) {
  auto i = watched_.find(pid);
  if (i == watched_.end())
    return;
  if (i->second.pidfd)
    kill_through(i->second.pidfd->native_handle());
  else
    ::kill(pid, SIGKILL);
}

void child_reaper::kill_all() {
  poll_timer_.cancel();
  auto children = std::move(watched_);
  watched_.clear();
  for (auto& [pid, entry] : children) {
    int status = 0;
    pid_t rc = ::waitpid(pid, &status, WNOHANG);
    if (rc < 0)
      status = reaped_elsewhere;
    if (rc == 0) {
      // Still running (only then: after ECHILD the pid may belong to
      // someone else by now).
      if (entry.pidfd)
        kill_through(entry.pidfd->native_handle());
      else
        ::kill(pid, SIGKILL);
      while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
      }
    }
    entry.pidfd.reset();
    entry.on_exit(status);
  }
}

} // namespace sprintrt::runtime
