#pragma once

/// @file
/// What a test checks after running child processes: that it left no child
/// behind (running or zombie) and no file descriptor open.

#include <sys/types.h>

#include <set>
#include <string>
#include <vector>

namespace sprintrt::test {

/// Returns the numbers of this process's open file descriptors.
std::set<int> open_fds();

/// Describes the open descriptors in `fds` (number and target), for messages.
std::string describe_fds(const std::set<int>& fds);

/// A child process of this process, as /proc shows it.
struct child_info {
  pid_t pid;
  /// The state letter: 'Z' for a zombie, 'S'/'R' for living ones.
  char state;
  std::string command;
};

/// Returns every child process of this process (zombies included).
std::vector<child_info> child_processes();

/// Records the descriptors open at construction; `leaked_fds()` then names
/// the ones opened since and still open.
class fd_snapshot {
public:
  fd_snapshot() : before_(open_fds()) {}

  /// Descriptors open now that were not open at construction.
  std::set<int> leaked_fds() const;

private:
  std::set<int> before_;
};

} // namespace sprintrt::test
