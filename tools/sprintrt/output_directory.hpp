#pragma once

/// @file
/// The directory a command writes its files into (`automata --out-dir`,
/// `demo --report`, `record --dir`), made and checked before any work, so
/// that a long run never fails at its very end for a directory it cannot
/// write.

#include <string>

#include "sprintrt/error.hpp"

namespace sprintrt::cli {

/// Creates `dir` with its parents if missing and checks that a file can be
/// created in it (one is made and removed). An `io_error` names the
/// directory and the OS reason ("cannot write in directory 'd': Permission
/// denied").
caf::error make_output_directory(const std::string& dir);

} // namespace sprintrt::cli
