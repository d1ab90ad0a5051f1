#pragma once

/// @file
/// How RETURNN's Python would read the same `sprintConfigStr` (a dict of
/// `sprint_opts`), for `doctor` to warn where it differs from the JSON
/// options (the tool, `serve`, C++, Python's `sprintrt.Options`), or with
/// `--rules returnn` to fail.
///
/// The JSON options expand `$NAME` and `${NAME}` anywhere in an argument,
/// each variable's value staying inside its argument, when a child starts
/// (config/shell_words.hpp). RETURNN's `eval_shell_str`, which the Python
/// module follows, replaces only an argument that starts with `$`: the rest
/// of it is the name of a variable whose value is split again like a shell
/// (an unset one gives no argument at all), and passes every other argument
/// as it is, `$` included.

#include <optional>
#include <string>
#include <vector>

#include "config/shell_words.hpp"
#include "sprintrt/options.hpp"

namespace sprintrt::cli {

/// One line per argument of `opts.sprint_config` that RETURNN's Python would
/// turn into different arguments than the JSON options do, naming the
/// argument and both readings; empty if they agree. `lookup` gives the
/// child's environment (for an argument that is exactly `$NAME`, whose
/// value Python would split); `raw` is the `sprintConfigStr` string as
/// written, if it was a string (Python does not know `${NAME}`).
std::vector<std::string> python_reading_differences(const sprint_options& opts,
                                                    const config::env_lookup& lookup,
                                                    const std::optional<std::string>& raw);

} // namespace sprintrt::cli
