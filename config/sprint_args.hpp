#pragma once

/// @file
/// The command line of a Sprint child (docs/protocol.md section 1).

#include <string>
#include <vector>

#include "config/shell_words.hpp"
#include "protocol/shared_array.hpp"
#include "sprintrt/options.hpp"

namespace sprintrt::config {

/// Returns whether children of `opts` are offered a shared region:
/// `sharedMemory` is "auto" and they load sprintrt's own module
/// (`sprintrt_control`, which `sprint-sim` also stands for). Any other
/// module (RETURNN's) gets the command line and the pipes unchanged.
bool offers_shared_memory(const sprint_options& opts);

/// The value of `--*.pymod-config` (and `--*.python-segment-order-config`):
/// "c2p_fd:C,p2c_fd:P,minPythonControlVersion:V", then ",k:v" for every item
/// of `sprintControlConfig` in key order, then
/// ",sprintrtSharedMemoryFd:S" if `shared_memory_fd` >= 0.
/// `EnableAutoNumpySharedMemPickling` is never added: sprintrt does not read
/// RETURNN's shared-memory arrays. `c2p_fd` is the child's fd number of the
/// c2p pipe's write end, `p2c_fd` of the p2c pipe's read end.
std::string pymod_config_string(const sprint_options& opts, int c2p_fd, int p2c_fd,
                                int shared_memory_fd = -1);

/// Renders a double as Python's `str(float)` (and so `"%s" % v`) does, which
/// is how RETURNN put `sprintControlConfig` values into the pymod config
/// string: the shortest text that reads back to the same double, in fixed
/// notation ("2.0", "0.0001", "1000000000000000.0") for decimal exponents
/// -4 to 15 and in exponent notation with at least two exponent digits
/// otherwise ("1e-05", "1.5e+16").
std::string python_float_text(double value);

/// The words of `sprintConfigStr` with their variables expanded by `lookup`,
/// each word one argument (see `expand_word`): the end of a child's
/// argument vector, and what in-process simulated workers parse. A variable
/// that `lookup` does not know (unset; set to "" is fine) is a
/// `spawn_failed` error naming each such variable and the argument it is
/// in ("environment variable CORPUS is not set (in '--*.corpus=$CORPUS')"):
/// unlike a shell, an unset variable never silently becomes "".
caf::expected<std::vector<std::string>> expand_sprint_config(const sprint_options& opts,
                                                             const env_lookup& lookup);

/// Renders a word for messages as a user would have written it: literal
/// text as it is, variables as `$NAME` (or `${NAME}` where a name character
/// follows).
std::string display_word(const config_word& word);

/// The full argument vector of a Sprint child, `argv[0]` (the executable)
/// first, in the order of docs/protocol.md section 1: the PythonControl flags, the
/// five segment-order flags if `use_python_segment_order` (the module and its
/// path as `choose_pymod` chooses them), then the words of
/// `sprintConfigStr` with their variables expanded by `lookup` (each word one
/// argument; see `expand_word`). Pass `environment_lookup` of the child's
/// environment so that variables expand as the child would see them (see
/// child_environment.hpp). `shared_memory_fd` >= 0 offers the region at
/// that descriptor in the pymod config. Fails as `expand_sprint_config` for
/// an unset variable.
caf::expected<std::vector<std::string>> build_sprint_args(const sprint_options& opts, int c2p_fd,
                                                          int p2c_fd, const env_lookup& lookup,
                                                          int shared_memory_fd = -1);

} // namespace sprintrt::config
