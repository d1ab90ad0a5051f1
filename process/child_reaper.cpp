#include "process/child_reaper.hpp"

#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <optional>
#include <thread>
#include <vector>

#include <spdlog/spdlog.h>

#include "sprintrt/logging.hpp"

namespace sprintrt::process {

namespace asio = boost::asio;

namespace {

// Through syscall(): glibc 2.36's <sys/pidfd.h> lacks extern "C", and older
// glibcs lack the wrappers.

/// A pidfd for `pid`, or -1 (errno set).
int open_pidfd(pid_t pid) {
  return static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
}

/// Sends `signal` through `pidfd`.
void signal_through(int pidfd, int signal) {
  ::syscall(SYS_pidfd_send_signal, pidfd, signal, nullptr, 0);
}

/// Reaps `pid` if it has exited: returns its wait status, or
/// `reaped_elsewhere` if another waitpid got it first; none while it runs.
std::optional<int> reap_if_exited(pid_t pid) {
  int status = 0;
  pid_t rc = ::waitpid(pid, &status, WNOHANG);
  if (rc == 0 || (rc < 0 && errno != ECHILD))
    return std::nullopt;
  return rc < 0 ? reaped_elsewhere : status;
}

/// Reaps `pid` whenever it exits, on a detached thread: for a child that
/// could not be reaped at shutdown (stuck in the kernel), so that it does
/// not stay a zombie once it is freed.
void reap_in_background(pid_t pid) {
  try {
    std::thread{[pid] {
      int status = 0;
      while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
      }
    }}.detach();
  } catch (const std::exception& e) {
    logger().error("cannot start a thread to reap pid {} later ({}): it stays a zombie "
                   "once it exits",
                   pid, e.what());
  }
}

} // namespace

child_reaper::child_reaper(asio::io_context& io)
    : io_(io), poll_timer_(io), kill_signal_(SIGKILL) {}

void child_reaper::watch(pid_t pid, std::function<void(int)> on_exit) {
  child entry;
  entry.on_exit = std::move(on_exit);
  int fd = open_pidfd(pid);
  if (fd >= 0) {
    try {
      entry.pidfd = std::make_unique<asio::posix::stream_descriptor>(io_, fd);
    } catch (const std::exception& e) {
      ::close(fd);
      logger().debug("cannot wait for the pidfd of {} ({}): polling for its exit instead", pid,
                     e.what());
    }
  } else {
    logger().debug("pidfd_open({}) failed ({}): polling for its exit instead", pid,
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
  auto status = reap_if_exited(pid);
  if (!status)
    return false;
  if (*status == reaped_elsewhere)
    logger().warn("child {} was reaped by someone else (waitpid(-1) elsewhere?)", pid);
  // Out of the map before the callback, which may watch or kill others.
  auto node = watched_.extract(pid);
  report(node.mapped(), *status);
  return true;
}

void child_reaper::report(child& entry, int status) {
  entry.pidfd.reset(); // closes the pidfd
  entry.on_exit(status);
}

void child_reaper::give_up(pid_t pid, child& entry) {
  reap_in_background(pid);
  report(entry, not_reaped);
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
  send_kill(pid, i->second);
}

void child_reaper::send_kill(pid_t pid, const child& entry) const {
  // Through the pidfd where there is one: a reused pid is never hit.
  if (entry.pidfd)
    signal_through(entry.pidfd->native_handle(), kill_signal_);
  else
    ::kill(pid, kill_signal_);
}

void child_reaper::abandon(pid_t pid) {
  auto i = watched_.find(pid);
  if (i == watched_.end())
    return;
  i->second.abandoned = true;
}

size_t child_reaper::watched() const noexcept {
  return static_cast<size_t>(std::count_if(watched_.begin(), watched_.end(),
                                           [](const auto& w) { return !w.second.abandoned; }));
}

void child_reaper::kill_all() {
  poll_timer_.cancel();
  auto children = std::move(watched_);
  watched_.clear();
  // Kill all first, then wait for all: one deadline, however many are stuck.
  std::map<pid_t, child> running;
  for (auto& [pid, entry] : children) {
    // One that exited is not signalled (after ECHILD, its pid may belong to
    // someone else by now).
    if (auto status = reap_if_exited(pid)) {
      report(entry, *status);
      continue;
    }
    send_kill(pid, entry);
    if (entry.abandoned)
      give_up(pid, entry); // given up on after a kill already: waiting again would not help
    else
      running.emplace(pid, std::move(entry));
  }
  auto deadline = std::chrono::steady_clock::now() + kill_wait;
  while (!running.empty()) {
    for (auto i = running.begin(); i != running.end();) {
      if (auto status = reap_if_exited(i->first)) {
        report(i->second, *status);
        i = running.erase(i);
      } else {
        ++i;
      }
    }
    if (running.empty() || std::chrono::steady_clock::now() >= deadline)
      break;
    std::this_thread::sleep_for(std::chrono::milliseconds{1});
  }
  for (auto& [pid, entry] : running) {
    logger().error("child {} did not exit within {} ms of SIGKILL (stuck in the kernel?): "
                   "giving up on it; it is reaped in the background when it exits",
                   pid, kill_wait.count());
    give_up(pid, entry);
  }
}

} // namespace sprintrt::process
