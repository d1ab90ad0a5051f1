#pragma once

/// @file
/// The environment a Sprint child starts with, and the variable lookup used to
/// expand `sprintConfigStr`.
///
/// Both come from the same place: the parent's environment with the options'
/// `env` changes applied. So `$VAR` in `sprintConfigStr` sees exactly what the
/// child sees, and a variable the options set (`env.set.CORPUS`) can be
/// referenced as `$CORPUS`, while one they unset is an error in `sprintConfigStr`:
///
/// ```
/// auto env = child_environment(opts.env, environ);
/// auto argv = build_sprint_args(opts, c2p_fd, p2c_fd, environment_lookup(env));
/// ```

#include <string>
#include <vector>

#include "config/shell_words.hpp"
#include "sprintrt/options.hpp"

namespace sprintrt::config {

/// Builds a child's environment as "NAME=value" strings, sorted by NAME (byte
/// order), one per name: the parent's variables (`parent_environ`, a
/// null-terminated array like `environ`; null means empty), minus those in
/// `changes.unset`, with those in `changes.set` added or overwritten (so a
/// name in both ends up set). Of parent entries with the same name the first
/// counts (as `getenv` does); parent entries without `=` are dropped.
std::vector<std::string> child_environment(const environment_changes& changes,
                                           const char* const* parent_environ);

/// Returns a lookup over "NAME=value" strings (as `child_environment` makes;
/// of duplicate names the first counts). The lookup owns a copy of the
/// variables, so `env` may go away.
env_lookup environment_lookup(const std::vector<std::string>& env);

} // namespace sprintrt::config
