#pragma once

/// @file
/// The programs installed beside the `sprintrt` tool: `sprint-sim` is found
/// from where this executable is, so that an installation (the CMake
/// package's bin/, the Python package's bin/) and a build tree each use
/// their own, wherever the user stands.

#include <string>

namespace sprintrt::cli {

/// Returns the absolute path of this installation's `sprint-sim`: next to
/// this executable (an installation), or the build tree's
/// tools/sprint-sim/sprint-sim beside tools/sprintrt; empty if neither
/// exists.
std::string find_sprint_sim();

} // namespace sprintrt::cli
