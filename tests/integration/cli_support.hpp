#pragma once

/// @file
/// Running the `sprintrt` command-line tool from tests.

#include <sys/types.h>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

namespace sprintrt::test {

/// What a command printed and how it ended.
struct command_result {
  /// Everything it wrote to stdout.
  std::string out;
  /// Everything it wrote to stderr.
  std::string err;
  /// Its exit status (-1 if it did not exit normally).
  int status = -1;
};

/// Runs `sprintrt` with `args` (already shell-quoted where needed) through
/// /bin/sh, capturing stdout and stderr into files under `dir`.
command_result run_cli(const std::string& dir, const std::string& args);

/// Runs `program` with `args` through /bin/sh like `run_cli`.
command_result run_program(const std::string& dir, const std::string& program,
                           const std::string& args);

/// A `sprintrt` process started in the background (no shell in between,
/// so that a signal sent to `pid` reaches the tool itself).
struct background_cli {
  pid_t pid = -1;
  std::string out_path;
  std::string err_path;
};

/// Starts `sprintrt` with `args` (one element per argument), stdout and
/// stderr into the files `dir/NAME.out` and `dir/NAME.err`.
background_cli start_cli(const std::string& dir, const std::vector<std::string>& args,
                         const std::string& name = "bg");

/// Waits up to `timeout` for `cli` to end and reaps it; its exit status (-1
/// if a signal ended it: a tool killed by SIGINT has no status 130) and
/// output, or nothing if it is still running (it is then killed and reaped).
std::optional<command_result> wait_cli(const background_cli& cli,
                                       std::chrono::milliseconds timeout);

/// The processes whose parent is `parent` (from /proc), zombies included.
std::vector<pid_t> children_of(pid_t parent);

/// Whether a process `pid` exists (and is not a zombie).
bool process_alive(pid_t pid);

} // namespace sprintrt::test
