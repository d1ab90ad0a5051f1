#pragma once

/// @file
/// Arguments shown as a user would type them: what `doctor` prints of a
/// child's argv, the command `first-run` tells the user to run.

#include <string>

namespace sprintrt::cli {

/// Returns `arg` as a POSIX shell reads it back as one word: unchanged if it
/// holds nothing the shell would interpret, else in single quotes (a `'`
/// inside written `'\''`).
std::string shell_quote(const std::string& arg);

} // namespace sprintrt::cli
