#pragma once

/// @file
/// sprintrt's own child-side module, `sprintrt_control` (python/child/sprintrt_control.py):
/// what RASR's PythonControl loads when the options name no other module,
/// and where its file is found.

#include <string>
#include <string_view>
#include <vector>

#include "config/shell_words.hpp"
#include "sprintrt/options.hpp"

namespace sprintrt::config {

/// The module name of sprintrt's child side (`--*.pymod-name`).
inline constexpr std::string_view control_module_name = "sprintrt_control";

/// The module RETURNN's checkouts provide, used when only `pymodPath` is given.
inline constexpr std::string_view returnn_control_module_name = "returnn.sprint.control";

/// The environment variable that names the directory of `sprintrt_control.py`
/// (read through the child's environment: the trainer's, changed by `env`).
inline constexpr std::string_view control_dir_variable = "SPRINTRT_CONTROL_DIR";

/// The directories searched for `sprintrt_control.py` when
/// `SPRINTRT_CONTROL_DIR` is not set, in order: the build tree's `python`
/// directory, then the installed Python package's directory.
std::vector<std::string> control_module_candidates();

/// The directory of `sprintrt_control.py`: `SPRINTRT_CONTROL_DIR` if set (a
/// `spawn_failed` error naming it when the file is not there), else the first
/// candidate that has the file, else "" (Python's own `sys.path` then decides;
/// a warning says where it looked, once per process).
caf::expected<std::string> find_control_module_dir(const env_lookup& lookup);

/// The `--*.pymod-path` and `--*.pymod-name` of a child.
struct pymod_choice {
  /// The directory RASR adds to `sys.path` ("" for none).
  std::string path;
  /// The module RASR imports.
  std::string name;
};

/// What a child gets for `pymodPath` and `pymodName`: with neither given,
/// `sprintrt_control` and its directory; with only `pymodPath`, RETURNN's
/// `returnn.sprint.control` in it (a RETURNN checkout, as before); with only
/// `pymodName`, that module and no path (our directory for
/// `sprintrt_control`); with both, both as given.
caf::expected<pymod_choice> choose_pymod(const sprint_options& opts, const env_lookup& lookup);

} // namespace sprintrt::config
