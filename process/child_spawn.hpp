#pragma once

/// @file
/// Starting a Sprint child process exactly as docs/protocol.md section 1 says.
///
/// The child gets exactly five file descriptors (six with a shared region):
/// 0 is /dev/null, 1 and 2 go
/// into one pipe the parent reads (Sprint logs to stdout; both streams are
/// "the child's output" for diagnostics), or with `childOutput` "inherit"
/// are the parent's own 1 and 2 (/dev/null where the parent has none), 3 is
/// the write end of the child-to-parent pipe and 4 the read end of the
/// parent-to-child pipe, 5 the shared region if one is offered
/// (docs/protocol.md section 7). Every other descriptor is closed in the child
/// (`close_range`), whatever flags the rest of the process (CAF, Asio, the
/// trainer) gave its own. The child starts with default signal dispositions
/// and an empty signal mask, in the environment of the options, without a
/// shell.
///
/// The child is the leader of a process group of its own, so that signals
/// a terminal sends to the trainer's group (Ctrl-C's SIGINT, SIGQUIT,
/// SIGTSTP) reach only the trainer, which stops its children itself. With
/// `childOutput` "inherit" it ignores SIGTTOU: a background group's write
/// to a terminal with `tostop` set would stop it otherwise.
///
/// The child dies with its trainer: it is started with
/// clone(CLONE_VM | CLONE_VFORK) (as posix_spawn does, so a trainer with
/// gigabytes mapped pays no page-table copy) and sets PR_SET_PDEATHSIG to
/// SIGKILL before execve, which the kernel sends however the trainer ends
/// (SIGKILL included). A trainer that died before the prctl is noticed
/// (getppid no longer its pid) and the child exits instead of running.
/// PR_SET_PDEATHSIG fires when the spawning *thread* ends, not the process:
/// call `spawn_sprint_child` only on a thread that lives as long as its
/// children may (sprintrt spawns only on the io thread, which ends after
/// every child was reaped). Exec of a set-user-ID program clears the
/// setting; Sprint is not one.

#include <sys/types.h>

#include <string>
#include <vector>

#include "process/unique_fd.hpp"
#include "sprintrt/error.hpp"
#include "sprintrt/options.hpp"

namespace sprintrt::process {

/// The child's descriptor number of the child-to-parent pipe (`c2p_fd`).
constexpr int child_c2p_fd = 3;

/// The child's descriptor number of the parent-to-child pipe (`p2c_fd`).
constexpr int child_p2c_fd = 4;

/// The child's descriptor number of its shared region, if offered.
constexpr int child_shared_memory_fd = 5;

/// The size both protocol pipes get (`F_SETPIPE_SZ`): large messages move
/// in fewer, larger chunks, which raises the pipes' throughput (BENCHMARKS.md,
/// "Figures behind the design").
constexpr int pipe_buffer_size = 1 << 20;

/// The parent's side of a freshly started child. All descriptors are
/// non-blocking and close-on-exec.
struct spawned_child {
  /// The child's process id; the caller must reap it.
  pid_t pid = -1;
  /// Write end of the parent-to-child pipe.
  unique_fd to_child;
  /// Read end of the child-to-parent pipe.
  unique_fd from_child;
  /// Read end of the child's stdout and stderr; none (-1) when they are
  /// the parent's own (`childOutput` "inherit").
  unique_fd output;
  /// The exact argument list the child was started with.
  std::vector<std::string> argv;
};

/// Checks that `path` names an executable regular file. Fails with
/// `spawn_failed` saying which of the three it is not.
caf::error check_executable(const std::string& path);

/// Starts the Sprint child for `opts`, with environment variables in the
/// Sprint arguments expanded against `parent_environ` changed by `opts.env`;
/// `shared_memory` >= 0 is a shared region's descriptor, which the child
/// gets as `child_shared_memory_fd` and is offered in its pymod config
/// (the caller keeps its own).
/// Fails with `spawn_failed` (missing or non-executable program, or a failing
/// system call, named with its errno text); nothing is left open or unreaped
/// then. Call it only from a long-lived thread (see the file comment).
caf::expected<spawned_child> spawn_sprint_child(const sprint_options& opts,
                                                const char* const* parent_environ,
                                                int shared_memory = -1);

} // namespace sprintrt::process
