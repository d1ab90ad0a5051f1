#pragma once

/// @file
/// `sprintrt-bench pool`: end-to-end times through real sprint-sim children
/// (the worker actor, the pool and its blocking facade), next to a raw pipe
/// round trip through a `/bin/cat` child measured in the same run.

#include <string>

#include <CLI/CLI.hpp>

namespace sprintrt::bench {

/// Adds the `pool` subcommand to `app`; `argv0` helps find sprint-sim next
/// to this program's build tree.
void add_pool_bench(CLI::App& app, std::string argv0);

} // namespace sprintrt::bench
