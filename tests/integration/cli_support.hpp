#pragma once

/// @file
/// Running the `sprintrt` command-line tool from tests.

#include <string>

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

} // namespace sprintrt::test
